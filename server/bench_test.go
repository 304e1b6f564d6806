package server_test

// Benchmarks of the service against the store it serves, side by side in
// one run (docs/BENCHMARKS.md, "Service"):
//
//	go test -run '^$' -bench BenchmarkService -benchtime 2s -count 3 ./server
//
// Each call is measured through HTTP (a real loopback listener, one reused
// net/http client with a keep-alive pool big enough for 64 clients, raw
// requests and JSON: the server's cost, not an SDK's) and as the same call
// on the store directly; on the file store and PostgreSQL; with one client
// and with 64 concurrent ones. The baseline of the same run is an empty
// loopback HTTP round trip to a handler that answers "{}".
//
// The server runs as recall serve runs it: token auth (so every request
// pays its token lookup in the store), no rate limit, logs discarded; and
// once more with --auth none ("http-noauth"), to show the lookup's cost.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/server"
	"github.com/recallkit/recall/storeurl"
)

// benchLong is the size of the conversation list20 pages through.
const benchLong = 10_000

// benchClients is the concurrency of the parallel benchmarks.
const benchClients = 64

// benchItem is the item the benchmarks append: an easy input message.
const benchItem = `{"type":"message","role":"user","content":"Summarize the design review notes from Tuesday and list the open questions."}`

func BenchmarkService(b *testing.B) {
	client := benchClient()
	b.Run("empty", func(b *testing.B) {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, "{}")
		}))
		defer ts.Close()
		call := func(ctx context.Context) error { return get(ctx, client, ts.URL+"/", "") }
		runBoth(b, func(b *testing.B) { serial(b, call) }, func(b *testing.B) { parallel(b, func() func(context.Context) error { return call }) })
	})
	backends := []struct {
		name string
		open func(b *testing.B) recall.Store
	}{
		{"file", func(b *testing.B) recall.Store {
			st, err := filestore.Open(filestore.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
		{"postgres", func(b *testing.B) recall.Store {
			dsn := testsvc.PostgresDSN(b)
			schema := fmt.Sprintf("recall_bench_%d", time.Now().UnixNano())
			sep := "?"
			if strings.Contains(dsn, "?") {
				sep = "&"
			}
			st, err := storeurl.Open(context.Background(), dsn+sep+"schema="+schema)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { dropBenchSchema(b, dsn, schema) })
			return st
		}},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			st := be.open(b)
			defer st.Close()
			benchBackend(b, st, client)
		})
	}
}

// benchBackend runs add3 and list20, direct and through HTTP, on st.
func benchBackend(b *testing.B, st recall.Store, client *http.Client) {
	ctx := context.Background()
	// One user, the one --auth none serves as, so that both servers see
	// the same conversations.
	const user = server.DefaultUser
	token, _, err := server.CreateToken(ctx, st, user, false)
	if err != nil {
		b.Fatal(err)
	}
	serve := func(auth server.AuthMode) *httptest.Server {
		srv, err := server.New(ctx, st, server.Options{
			Auth:       auth,
			Logger:     slog.New(slog.DiscardHandler),
			Registerer: prometheus.NewRegistry(),
			RateLimit:  -1,
		})
		if err != nil {
			b.Fatal(err)
		}
		return httptest.NewServer(srv)
	}
	ts, tsNone := serve(server.AuthToken), serve(server.AuthNone)
	defer ts.Close()
	defer tsNone.Close()
	project := server.User{Name: user}.Project()

	// The long conversation list20 reads, written in batches directly.
	long := recall.Key{Project: project, Session: "conv_long"}
	if _, err := recall.Create(ctx, st, long, recall.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	batch := make([]recall.Item, 100)
	for i := range batch {
		batch[i] = recall.Item(benchItem)
	}
	for range benchLong / len(batch) {
		if _, err := st.Append(ctx, long, recall.IfExists(), recall.ItemEntries(batch...)...); err != nil {
			b.Fatal(err)
		}
	}

	// Each client appends to a conversation of its own, as users do.
	var convs atomic.Int64
	newConv := func() recall.Key {
		k := recall.Key{Project: project, Session: fmt.Sprintf("conv_add%d", convs.Add(1))}
		if _, err := recall.Create(ctx, st, k, recall.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		return k
	}
	three := recall.ItemEntries(recall.Item(benchItem), recall.Item(benchItem), recall.Item(benchItem))
	body := `{"items":[` + strings.Repeat(benchItem+",", 2) + benchItem + `]}`

	add3Direct := func() func(context.Context) error {
		k := newConv()
		return func(ctx context.Context) error {
			_, err := st.Append(ctx, k, recall.IfExists(), three...)
			return err
		}
	}
	add3HTTP := func(ts *httptest.Server, token string) func() func(context.Context) error {
		return func() func(context.Context) error {
			url := ts.URL + "/v1/conversations/" + newConv().Session + "/items"
			return func(ctx context.Context) error { return post(ctx, client, url, token, body) }
		}
	}
	list20Direct := func() func(context.Context) error {
		return func(ctx context.Context) error {
			items, _, err := st.Items(ctx, long, 20)
			if err == nil && len(items) != 20 {
				err = fmt.Errorf("%d items", len(items))
			}
			return err
		}
	}
	list20HTTP := func(ts *httptest.Server, token string) func() func(context.Context) error {
		return func() func(context.Context) error {
			url := ts.URL + "/v1/conversations/" + long.Session + "/items?limit=20"
			return func(ctx context.Context) error { return get(ctx, client, url, token) }
		}
	}
	// "http" is the server as recall serve runs it by default, with
	// token auth; "http-noauth" is --auth none, which shows what the
	// token lookup costs.
	for _, c := range []struct {
		name  string
		modes map[string]func() func(context.Context) error
	}{
		{"add3", map[string]func() func(context.Context) error{
			"direct": add3Direct, "http": add3HTTP(ts, token), "http-noauth": add3HTTP(tsNone, ""),
		}},
		{"list20", map[string]func() func(context.Context) error{
			"direct": list20Direct, "http": list20HTTP(ts, token), "http-noauth": list20HTTP(tsNone, ""),
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for _, mode := range []string{"direct", "http", "http-noauth"} {
				newCall := c.modes[mode]
				b.Run(mode, func(b *testing.B) {
					runBoth(b, func(b *testing.B) { serial(b, newCall()) }, func(b *testing.B) { parallel(b, newCall) })
				})
			}
		})
	}
}

// runBoth runs one as "c1" and many as "c64".
func runBoth(b *testing.B, one, many func(b *testing.B)) {
	b.Run("c1", one)
	b.Run(fmt.Sprintf("c%d", benchClients), many)
}

// serial runs call b.N times from one goroutine.
func serial(b *testing.B, call func(context.Context) error) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := call(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// parallel runs b.N calls from benchClients goroutines, each with the
// call newCall makes for it.
func parallel(b *testing.B, newCall func() func(context.Context) error) {
	ctx := context.Background()
	b.SetParallelism((benchClients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		call := newCall()
		for pb.Next() {
			if err := call(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchClient is the one HTTP client every benchmark reuses, with room
// for a kept-alive connection per concurrent client.
func benchClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 4 * benchClients
	tr.MaxIdleConnsPerHost = 2 * benchClients
	return &http.Client{Transport: tr}
}

func get(ctx context.Context, c *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	return do(c, req, token)
}

func post(ctx context.Context, c *http.Client, url, token, body string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return do(c, req, token)
}

// do sends req and reads the whole answer, failing on any status but 200.
func do(c *http.Client, req *http.Request, token string) error {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, buf.Bytes())
	}
	return nil
}

func dropBenchSchema(b *testing.B, dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Logf("drop schema %s: %v", schema, err)
		return
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		b.Logf("drop schema %s: %v", schema, err)
	}
}
