package server_test

// The Responses proxy against the upstream called directly, side by side
// in one run (docs/BENCHMARKS.md, "Responses proxy"):
//
//	go test -run '^$' -bench BenchmarkResponsesProxy -benchtime 200x ./server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/server"
	"github.com/recallkit/recall/storeurl"
)

// benchInput is the new user message of every benchmark turn.
const benchInput = `{"type":"message","role":"user","content":"And what did we decide about the release date?"}`

// BenchmarkResponsesProxy measures one turn on a conversation of 100 and
// of 10,000 items, on the file store and PostgreSQL, four ways
// interleaved round by round so that all see the same load:
//
//   - direct: POST /v1/responses to the upstream (the fake OpenAI server,
//     Responses API) with the conversation's items and the new input, as
//     a client that keeps its own history would send it;
//   - proxy: the same turn through recall's POST /v1/responses with
//     "conversation" (token auth, as recall serve runs by default): the
//     server reads the view, sends the same items upstream and appends
//     the input and output;
//   - read and append: the store's own Store.Items of the view and an
//     Append of a two-item batch guarded by the last seq, called
//     directly: what the proxy cannot avoid.
//
// It reports each way's time per turn and added-us = proxy - direct,
// budget-us = read + append + 1 ms (the target: added ≤ budget), and
// their ratio budget-used (≤ 1 meets it). Each round appends four items
// to its conversation (two by the proxy, two by the direct append);
// conversations of 100 items rotate over a pool of 20 so that they stay
// near their size; avg-items is the mean size the rounds saw.
func BenchmarkResponsesProxy(b *testing.B) {
	up := fakeopenai.New()
	defer up.Close()
	up.SetRecord(false)
	// A fixed reply: the upstream does not parse the messages to echo
	// one, so less of each turn is the fake's own work.
	up.SetResponder(func(fakeopenai.Request) fakeopenai.Reply { return fakeopenai.Reply{Text: "Noted."} })
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
			ctx := context.Background()
			token, _, err := server.CreateToken(ctx, st, "bench", false)
			if err != nil {
				b.Fatal(err)
			}
			h, err := server.New(ctx, st, server.Options{
				Logger: slog.New(slog.DiscardHandler), Registerer: prometheus.NewRegistry(), RateLimit: -1,
				Upstream: up.URL(), UpstreamAPI: openai.APIResponses,
			})
			if err != nil {
				b.Fatal(err)
			}
			ts := httptest.NewServer(h)
			defer ts.Close()
			project := server.User{Name: "bench"}.Project()
			for _, size := range []int{100, 10_000} {
				pool := 1
				if size < 1000 {
					pool = 20
				}
				keys := make([]recall.Key, pool)
				for i := range keys {
					keys[i] = recall.Key{Project: project, Session: fmt.Sprintf("conv_bench_%d_%d", size, i)}
					fillConversation(b, st, keys[i], size)
				}
				b.Run(fmt.Sprintf("items%d", size), func(b *testing.B) {
					benchProxyTurns(b, st, keys, ts.URL, up.URL(), token)
				})
			}
		})
	}
}

// fillConversation creates key with size items, written in batches.
func fillConversation(b *testing.B, st recall.Store, key recall.Key, size int) {
	ctx := context.Background()
	if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	batch := make([]recall.Item, 100)
	for i := range batch {
		batch[i] = recall.Item(benchItem)
	}
	for done := 0; done < size; done += len(batch) {
		n := min(len(batch), size-done)
		if _, err := st.Append(ctx, key, recall.IfExists(), recall.ItemEntries(batch[:n]...)...); err != nil {
			b.Fatal(err)
		}
	}
}

func benchProxyTurns(b *testing.B, st recall.Store, keys []recall.Key, serverURL, upstreamURL, token string) {
	client := benchClient()
	ctx := context.Background()
	reply := recall.Item(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"echo"}]}`)
	var read, appendDur, direct, proxy time.Duration
	var rounds, items int
	for b.Loop() {
		key := keys[rounds%len(keys)]
		start := time.Now()
		live, last, err := st.Items(ctx, key, 0)
		read += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		items += len(live)
		input := make([]json.RawMessage, 0, len(live)+1)
		for _, l := range live {
			input = append(input, json.RawMessage(l.Item))
		}
		input = append(input, json.RawMessage(benchInput))
		direct1, _ := json.Marshal(map[string]any{"model": "m", "input": input})

		directTurn := func() {
			start := time.Now()
			if err := post(ctx, client, upstreamURL+"/responses", "", string(direct1)); err != nil {
				b.Fatal(err)
			}
			direct += time.Since(start)
		}
		proxyTurn := func() {
			start := time.Now()
			if err := post(ctx, client, serverURL+"/v1/responses", token, `{"model":"m","conversation":"`+key.Session+`","input":[`+benchInput+`]}`); err != nil {
				b.Fatal(err)
			}
			proxy += time.Since(start)
		}
		// Every other round the proxy goes first, so that neither way
		// always runs in the other's wake.
		if rounds%2 == 0 {
			directTurn()
			proxyTurn()
		} else {
			proxyTurn()
			directTurn()
		}

		start = time.Now()
		_, err = st.Append(ctx, key, recall.IfLastSeq(last+2), recall.ItemEntries(recall.Item(benchInput), reply)...)
		appendDur += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		rounds++
	}
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(rounds) }
	b.ReportMetric(us(direct), "direct-us")
	b.ReportMetric(us(proxy), "proxy-us")
	b.ReportMetric(us(read), "read-us")
	b.ReportMetric(us(appendDur), "append-us")
	added, budget := us(proxy)-us(direct), us(read)+us(appendDur)+1000
	b.ReportMetric(added, "added-us")
	b.ReportMetric(budget, "budget-us")
	b.ReportMetric(added/budget, "budget-used")
	b.ReportMetric(float64(items)/float64(rounds), "avg-items")
}
