package searchbench_test

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/server"
)

// BenchmarkServiceSearch measures the first page of hits through the
// service (GET /api/v1/search, the handler called directly, as --auth none
// serves its one user) against recall.Search on the same file store, side
// by side in one loop, on the corpus above held by one user (so the
// service searches all of it). It reports each way's time (direct-us,
// service-us) and x-direct = service / direct, the target being at most 2
// at 1,000,000 items (RECALL_SEARCH_BENCH_SESSIONS=10000).
//
//	RECALL_SEARCH_BENCH_SESSIONS=10000 go test -run '^$' -bench BenchmarkServiceSearch -benchtime 20x -timeout 60m ./internal/searchbench
func BenchmarkServiceSearch(b *testing.B) {
	ctx := context.Background()
	c := makeCorpus(corpusSessions())
	project := server.User{Name: server.DefaultUser}.Project()
	for i := range c.keys {
		c.keys[i].Project = project
	}
	st, err := filestore.Open(filestore.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	start := time.Now()
	if err := c.load(ctx, st); err != nil {
		b.Fatal(err)
	}
	if _, err := recall.Search(ctx, st, recall.SearchOptions{Query: "warm up", Project: project}); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d sessions, %d items: imported and indexed in %s", len(c.keys), len(c.keys)*itemsPerSession, time.Since(start).Round(time.Millisecond))
	h, err := server.New(ctx, st, server.Options{Auth: server.AuthNone, RateLimit: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry()})
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range []struct{ name, query string }{
		{"rare", "xylophonist"},
		{"common", "error"},
		{"phrase", `"quick brown fox"`},
		{"cjk3", "北京市"},
	} {
		b.Run(q.name, func(b *testing.B) {
			direct := func() error {
				p, err := recall.Search(ctx, st, recall.SearchOptions{Query: q.query, Project: project})
				if err == nil && len(p.Hits) == 0 {
					b.Fatalf("no hits for %s", q.query)
				}
				return err
			}
			path := "http://localhost/api/v1/search?q=" + url.QueryEscape(q.query)
			service := func() error {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
				}
				return nil
			}
			ways := []func() error{direct, service}
			var spent [2]time.Duration
			order := rand.New(rand.NewPCG(1, 2))
			for b.Loop() {
				for _, i := range order.Perm(2) {
					t0 := time.Now()
					if err := ways[i](); err != nil {
						b.Fatal(err)
					}
					spent[i] += time.Since(t0)
				}
			}
			b.ReportMetric(float64(spent[0].Microseconds())/float64(b.N), "direct-us")
			b.ReportMetric(float64(spent[1].Microseconds())/float64(b.N), "service-us")
			b.ReportMetric(float64(spent[1])/float64(spent[0]), "x-direct")
		})
	}
}
