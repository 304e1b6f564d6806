package recallmcp

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recallkit/recall"
)

// The read_session benchmarks read a 200-item page from the middle of a
// 10,000-item session; BenchmarkReadBaselineItems is the store's Items of
// the whole view, which read_session read for every page before it read
// only its page (recall.StoreSession.ReadItems). Compare their ns/op in one run.

func benchSession(b *testing.B) (*mcp.ClientSession, recall.Store, recall.Key) {
	b.Helper()
	st := newStore(b)
	key := seedLong(b, st, "p", "0199bench-long", 10000)
	ctx := context.Background()
	ct, srvT := mcp.NewInMemoryTransports()
	ss, err := New(st, Options{Project: "p"}).Connect(ctx, srvT, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs, st, key
}

func BenchmarkReadSessionPage(b *testing.B) {
	cs, _, _ := benchSession(b)
	ctx := context.Background()
	args := map[string]any{"id": "0199bench-long", "before": "5000", "limit": 200}
	for b.Loop() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_session", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}

func BenchmarkReadBaselineItems(b *testing.B) {
	_, st, key := benchSession(b)
	ctx := context.Background()
	for b.Loop() {
		if _, _, err := st.Items(ctx, key, 0); err != nil {
			b.Fatal(err)
		}
	}
}
