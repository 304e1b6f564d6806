package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/server"
)

// BenchmarkRoutes checks that each read route does work proportional to
// its page, not to what it serves (docs/BENCHMARKS.md, "Bounded work per
// request"): every route is called on a small and a large case side by
// side in one loop, on the file store, and reports each case's time
// (small-us, large-us), allocations (small-allocs, large-allocs), the
// bytes the store handed the server (small-storekB, large-storekB), and
// x-small = large / small, the target being at most 1.5. The cases: a
// conversation of 1,000 and of 100,000 items, and a user with 1,000 and
// with 100,000 sessions. One route writes: adding an item with an id of
// its own, which is checked against the conversation's ids.
//
//	go test -run '^$' -bench BenchmarkRoutes -benchtime 200x ./server
func BenchmarkRoutes(b *testing.B) {
	const small, large = 1_000, 100_000
	ctx := context.Background()
	project := server.User{Name: server.DefaultUser}.Project()
	var dirs []string // the stores' project directories
	open := func() (*bytesStore, http.Handler) {
		dir := b.TempDir()
		dirs = append(dirs, filepath.Join(dir, "projects", project))
		st := &bytesStore{Store: openFileStore(&testing.T{}, dir)}
		b.Cleanup(func() { st.Close() })
		h, err := server.New(ctx, st, server.Options{Auth: server.AuthNone, RateLimit: -1,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registerer: prometheus.NewRegistry()})
		if err != nil {
			b.Fatal(err)
		}
		return st, h
	}
	// The conversations: one of each size in one store.
	convs, convH := open()
	for _, n := range []int{small, large} {
		key := recall.Key{Project: project, Session: fmt.Sprintf("conv_%d", n)}
		batch := make([]recall.Item, 0, 1000)
		for i := range n {
			batch = append(batch, recall.Message("user", fmt.Sprintf("message %d of the conversation, about the design review", i)))
			if len(batch) == cap(batch) || i == n-1 {
				if _, err := convs.Append(ctx, key, recall.Guard{}, recall.ItemEntries(batch...)...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
	}
	// The users: one store each, so that the user's project holds that
	// many sessions, 5 pinned.
	users := map[int]http.Handler{}
	userStores := map[int]*bytesStore{}
	for _, n := range []int{small, large} {
		st, h := open()
		for i := range n {
			key := recall.Key{Project: project, Session: fmt.Sprintf("conv_%06d", i)}
			if _, err := st.Append(ctx, key, recall.IfNew(), recall.ItemEntries(
				recall.Message("user", fmt.Sprintf("the first prompt of session %d, about the design review", i)),
				recall.Message("assistant", "ok"))...); err != nil {
				b.Fatal(err)
			}
		}
		for i := range 5 {
			if _, err := recall.NewSession(st, recall.Key{Project: project, Session: fmt.Sprintf("conv_%06d", i*n/5)}).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
				b.Fatal(err)
			}
		}
		users[n], userStores[n] = h, st
	}

	// A route is a path for each case, on the conversations' server (conv)
	// or a user's.
	conv := func(path string) func(n int) (http.Handler, *bytesStore, string) {
		return func(n int) (http.Handler, *bytesStore, string) {
			return convH, convs, fmt.Sprintf(path, fmt.Sprintf("conv_%d", n))
		}
	}
	user := func(path string) func(n int) (http.Handler, *bytesStore, string) {
		return func(n int) (http.Handler, *bytesStore, string) { return users[n], userStores[n], path }
	}
	added := 0 // the items with ids the add-item route added
	for _, r := range []benchRoute{
		{name: "items-newest", at: conv("/v1/conversations/%s/items")},
		{name: "items-oldest", at: conv("/v1/conversations/%s/items?order=asc")},
		{name: "items-after-early", at: conv("/v1/conversations/%s/items?after=recall-30")},
		{name: "items-asc-after-early", at: conv("/v1/conversations/%s/items?order=asc&after=recall-30")},
		{name: "item-oldest", at: conv("/v1/conversations/%s/items/recall-1")},
		{name: "conversation", at: conv("/v1/conversations/%s")},
		{name: "web-session", at: conv("/s/%s")},
		{name: "web-session-early", at: conv("/s/%s?before=30")},
		{name: "api-sessions", at: user("/api/v1/sessions")},
		{name: "web-list", at: user("/")},
		{name: "api-search", at: user("/api/v1/search?q=design+review")},
		{name: "add-item-with-id", at: conv("/v1/conversations/%s/items"), post: func() string {
			added++
			return fmt.Sprintf(`{"items":[{"type":"function_call","id":"fc_%d","call_id":"c","name":"f","arguments":"{}"}]}`, added)
		}},
	} {
		b.Run(r.name, func(b *testing.B) {
			var spent, allocs, bytes [2]int64
			var ms runtime.MemStats
			// A store's first read of a user's project loads its index
			// (and, after the setup's 100,000 writes, compacts its
			// journal): once a process, not per request. A directory
			// whose names changed in the last two seconds (the journal's
			// rewrite is one of them) has them read by each List until
			// the journal can vouch for them (the file store's
			// racyWindow): the routes are measured once it can.
			warm := func() {
				for _, n := range []int{small, large} {
					h, _, path := r.at(n)
					h.ServeHTTP(httptest.NewRecorder(), r.request(path))
				}
			}
			warm()
			testkit.Eventually(b, time.Minute, "the project directories to settle", func() bool {
				for _, d := range dirs {
					if fi, err := os.Stat(d); err == nil && time.Since(fi.ModTime()) < 2100*time.Millisecond {
						return false
					}
				}
				return true
			})
			warm()
			for b.Loop() {
				for i, n := range []int{small, large} {
					h, st, path := r.at(n)
					runtime.ReadMemStats(&ms)
					before := ms.Mallocs
					read := st.bytes.Load()
					start := time.Now()
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, r.request(path))
					spent[i] += int64(time.Since(start))
					runtime.ReadMemStats(&ms)
					allocs[i] += int64(ms.Mallocs - before)
					bytes[i] += st.bytes.Load() - read
					if rec.Code != http.StatusOK {
						b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
					}
				}
			}
			per := func(v int64) float64 { return float64(v) / float64(b.N) }
			b.ReportMetric(per(spent[0])/1e3, "small-us")
			b.ReportMetric(per(spent[1])/1e3, "large-us")
			b.ReportMetric(per(allocs[0]), "small-allocs")
			b.ReportMetric(per(allocs[1]), "large-allocs")
			b.ReportMetric(per(bytes[0])/1e3, "small-storekB")
			b.ReportMetric(per(bytes[1])/1e3, "large-storekB")
			b.ReportMetric(float64(spent[1])/float64(spent[0]), "x-small")
		})
	}
}

// bytesStore counts the bytes of the items and entries its store hands
// out, whichever way they are read.
type bytesStore struct {
	recall.Store
	bytes atomic.Int64
}

// Unwrap lets recall.As find the store's abilities (search, fork, ...).
func (s *bytesStore) Unwrap() recall.Store { return s.Store }

func (s *bytesStore) live(live []recall.LiveItem) {
	n := 0
	for _, l := range live {
		n += len(l.Item)
	}
	s.bytes.Add(int64(n))
}

func (s *bytesStore) entries(es []recall.Entry) {
	n := 0
	for _, e := range es {
		n += len(e.Data)
	}
	s.bytes.Add(int64(n))
}

func (s *bytesStore) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	live, last, err := s.Store.Items(ctx, key, limit)
	s.live(live)
	return live, last, err
}

func (s *bytesStore) ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	p, err := recall.NewSession(s.Store, key).ReadItems(ctx, opts)
	s.live(p.Items)
	return p, err
}

func (s *bytesStore) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	m, es, err := s.Store.Load(ctx, key)
	s.entries(es)
	return m, es, err
}

func (s *bytesStore) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	es, err := s.Store.Entries(ctx, key, after, limit)
	s.entries(es)
	return es, err
}

func (s *bytesStore) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	p, err := s.Store.List(ctx, project, opts)
	s.bytes.Add(int64(200 * len(p.Sessions))) // about a session's metadata
	return p, err
}

// benchRoute is a route of BenchmarkRoutes: a path for each case, on the
// conversations' server or a user's.
type benchRoute struct {
	name string
	at   func(n int) (http.Handler, *bytesStore, string)
	// post, when set, makes the route a POST of the body it returns (a
	// new one each time).
	post func() string
}

// request returns the route's request of path.
func (r benchRoute) request(path string) *http.Request {
	if r.post == nil {
		return httptest.NewRequest("GET", "http://localhost"+path, nil)
	}
	req := httptest.NewRequest("POST", "http://localhost"+path, strings.NewReader(r.post()))
	req.Header.Set("Content-Type", "application/json")
	return req
}
