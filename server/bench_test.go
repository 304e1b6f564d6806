package server_test

// Benchmarks of the service against the store it serves, side by side in
// one run (docs/BENCHMARKS.md, "Service"):
//
//	go test -run '^$' -bench BenchmarkService -benchtime 3s -count 3 ./server
//
// Calls go through HTTP on a real loopback listener with one reused
// net/http client (a keep-alive pool big enough for 64 clients; raw
// requests and bodies, so what is measured is the server, not an SDK's
// encoding), and to the store directly; on the file store and
// PostgreSQL. The server runs as recall serve runs it: no rate limit,
// logs discarded.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/durable"
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

// add3Body is the request body of add3: benchItem three times.
var add3Body = `{"items":[` + strings.Repeat(benchItem+",", 2) + benchItem + `]}`

// emptyServer serves the empty round trip, the baseline of every
// benchmark here: it reads the request and answers "{}".
func emptyServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
}

// BenchmarkService runs, for each store, call and concurrency, the same
// call four ways interleaved in one loop, so that all four see the same
// machine load: on the store directly ("direct"), through the server with
// token auth as recall serve runs by default ("http"), through a server
// with --auth none ("noauth": what the token lookup costs), and an empty
// loopback round trip ("empty", the baseline). Each loop iteration is one
// round: every way in turn, with one client (c1) or 64 concurrent ones
// (c64; each makes 4 calls a round).
//
// It reports each way's time per call (direct-us, http-us, noauth-us,
// empty-us; with 64 clients, wall time per call, the inverse of
// throughput) and two ratios: overhead-rt = (http - direct) / empty, the
// target being ≤ 1.5, and x-direct = direct / http, the throughput of
// the server as a fraction of the store's (target ≥ 0.5 with 64 clients
// on PostgreSQL).
func BenchmarkService(b *testing.B) {
	client := benchClient()
	empty := emptyServer()
	defer empty.Close()
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
			dsn, schema := testsvc.PostgresSchema(b)
			sep := "?"
			if strings.Contains(dsn, "?") {
				sep = "&"
			}
			st, err := storeurl.Open(context.Background(), dsn+sep+"schema="+schema)
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
	}
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			st := be.open(b)
			defer st.Close()
			benchBackend(b, st, client, empty.URL+"/")
		})
	}
}

// BenchmarkSyncFloor measures the floor under add3's overhead on the file
// store: what an HTTP call costs over the same work done directly when
// that work waits on the disk. Its handler does only the core of a file
// store append, one write of the request's body to a file and its
// fdatasync (durable.SyncData), then answers "{}"; "direct" does the same
// write and sync in the caller; "empty" is BenchmarkService's empty round
// trip. The ways are interleaved as in BenchmarkService, with one client.
// BenchmarkService/file/add3/c1's overhead-rt less this one's is what
// recall's handler and store add to that floor.
//
//	go test -run '^$' -bench 'BenchmarkSyncFloor|BenchmarkService/file/add3/c1' -benchtime 3s -count 3 ./server
func BenchmarkSyncFloor(b *testing.B) {
	body := add3Body
	open := func(name string) *os.File {
		f, err := os.OpenFile(filepath.Join(b.TempDir(), name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { f.Close() })
		return f
	}
	syncWrite := func(f *os.File, p []byte) error {
		if _, err := f.Write(p); err != nil {
			return err
		}
		return durable.SyncData(f)
	}
	served := open("served")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := io.ReadAll(r.Body)
		if err == nil {
			err = syncWrite(served, append(p, '\n'))
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
	defer ts.Close()
	empty := emptyServer()
	defer empty.Close()
	client := benchClient()
	direct := open("direct")
	line := []byte(body + "\n")
	interleave(b, []way{
		{"direct", func() func(context.Context) error {
			return func(context.Context) error { return syncWrite(direct, line) }
		}},
		{"http", func() func(context.Context) error {
			return func(ctx context.Context) error { return post(ctx, client, ts.URL+"/", "", body) }
		}},
		{"empty", func() func(context.Context) error {
			return func(ctx context.Context) error { return get(ctx, client, empty.URL+"/", "") }
		}},
	}, 1, 1)
}

// way makes the call one client makes, one way.
type way struct {
	name string
	// newCall returns the call of one client (each client of add3
	// appends to a conversation of its own, as users do).
	newCall func() func(context.Context) error
}

// benchBackend runs add3 and list20 on st, every way.
func benchBackend(b *testing.B, st recall.Store, client *http.Client, emptyURL string) {
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
	if _, err := recall.NewSession(st, long).Create(ctx, recall.CreateOptions{}); err != nil {
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

	var convs atomic.Int64
	newConv := func() recall.Key {
		k := recall.Key{Project: project, Session: fmt.Sprintf("conv_add%d", convs.Add(1))}
		if _, err := recall.NewSession(st, k).Create(ctx, recall.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		return k
	}
	three := recall.ItemEntries(recall.Item(benchItem), recall.Item(benchItem), recall.Item(benchItem))
	body := add3Body
	emptyWay := way{"empty", func() func(context.Context) error {
		return func(ctx context.Context) error { return get(ctx, client, emptyURL, "") }
	}}
	add3HTTP := func(name string, ts *httptest.Server, token string) way {
		return way{name, func() func(context.Context) error {
			url := ts.URL + "/v1/conversations/" + newConv().Session + "/items"
			return func(ctx context.Context) error { return post(ctx, client, url, token, body) }
		}}
	}
	list20HTTP := func(name string, ts *httptest.Server, token string) way {
		return way{name, func() func(context.Context) error {
			url := ts.URL + "/v1/conversations/" + long.Session + "/items?limit=20"
			return func(ctx context.Context) error { return get(ctx, client, url, token) }
		}}
	}
	calls := []struct {
		name string
		ways []way
	}{
		{"add3", []way{
			{"direct", func() func(context.Context) error {
				k := newConv()
				return func(ctx context.Context) error {
					_, err := st.Append(ctx, k, recall.IfExists(), three...)
					return err
				}
			}},
			add3HTTP("http", ts, token), add3HTTP("noauth", tsNone, ""), emptyWay,
		}},
		{"list20", []way{
			{"direct", func() func(context.Context) error {
				return func(ctx context.Context) error {
					items, _, err := st.Items(ctx, long, 20)
					if err == nil && len(items) != 20 {
						err = fmt.Errorf("%d items", len(items))
					}
					return err
				}
			}},
			list20HTTP("http", ts, token), list20HTTP("noauth", tsNone, ""), emptyWay,
		}},
	}
	for _, c := range calls {
		b.Run(c.name, func(b *testing.B) {
			b.Run("c1", func(b *testing.B) { interleave(b, c.ways, 1, 1) })
			b.Run(fmt.Sprintf("c%d", benchClients), func(b *testing.B) { interleave(b, c.ways, benchClients, 4) })
		})
	}
}

// interleave runs rounds until the benchmark's time is up: in each round,
// every way in turn (in a random order), with clients concurrent clients making perClient
// calls each. It reports each way's wall time per call and the ratios.
func interleave(b *testing.B, ways []way, clients, perClient int) {
	ctx := context.Background()
	calls := make([][]func(context.Context) error, len(ways))
	for i, w := range ways {
		for range clients {
			calls[i] = append(calls[i], w.newCall())
		}
	}
	spent := make([]time.Duration, len(ways))
	n := 0
	order := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		// Each round takes the ways in a new random order, so that each
		// follows each other one as often: a call right after a direct
		// PostgreSQL call measured 20–25 µs slower with one client,
		// whichever way it was, and starting each round one way later
		// still had every way but the first follow the same one in
		// three rounds of four.
		for _, i := range order.Perm(len(ways)) {
			start := time.Now()
			var wg sync.WaitGroup
			for _, call := range calls[i] {
				wg.Go(func() {
					for range perClient {
						if err := call(ctx); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			spent[i] += time.Since(start)
		}
		n += clients * perClient
	}
	per := map[string]float64{}
	for i, w := range ways {
		per[w.name] = float64(spent[i]) / float64(time.Microsecond) / float64(n)
		b.ReportMetric(per[w.name], w.name+"-us")
	}
	b.ReportMetric((per["http"]-per["direct"])/per["empty"], "overhead-rt")
	b.ReportMetric(per["direct"]/per["http"], "x-direct")
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
// The body of a 200 is read into io.Discard's pooled buffer rather than
// a new buffer each call: the garbage of a growing buffer (a quarter of
// all the bytes allocated in list20, client and server together) would
// be GC work that the benchmark charges to the server.
func do(c *http.Client, req *http.Request, token string) error {
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s %s: %d %s", req.Method, req.URL.Path, resp.StatusCode, msg)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
