package recallmcp

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// countingStore counts the items a store hands out, by Items and by
// ReadItems. It has Unwrap, so the inner store's other abilities stay
// found, and counts ReadItems itself, which As finds before the inner
// store's.
type countingStore struct {
	recall.Store
	items atomic.Int64
}

var _ storekit.ItemPager = (*countingStore)(nil)

func (c *countingStore) Unwrap() recall.Store { return c.Store }

func (c *countingStore) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	live, last, err := c.Store.Items(ctx, key, limit)
	c.items.Add(int64(len(live)))
	return live, last, err
}

func (c *countingStore) ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	p, err := recall.NewSession(c.Store, key).ReadItems(ctx, opts)
	c.items.Add(int64(len(p.Items)))
	return p, err
}

// TestReadSessionReadsItsPage checks that a read_session page costs the
// page, not the session: each page of a 10,000-item session reads at most
// two pages' worth of items from the store (around an item, both its
// sides), wherever it is.
func TestReadSessionReadsItsPage(t *testing.T) {
	const n = 10000
	st := &countingStore{Store: newStore(t)}
	seedLong(t, st, "p", "0199bound-long", n)
	cs := connect(t, st, Options{Project: "p"})

	for _, limit := range []int{1, 20, 200} {
		for _, tc := range []struct {
			name string
			args map[string]any
			want string // the first message of the page
		}{
			{"newest", map[string]any{}, ""},
			{"before", map[string]any{"before": "5000"}, ""},
			{"before a cursor", map[string]any{"before": "5000@5000"}, ""},
			{"after", map[string]any{"after": "5000"}, "message 05001 of the long session"},
			{"after a cursor", map[string]any{"after": "5000@5000"}, "message 05001 of the long session"},
			{"around", map[string]any{"around": "5000"}, ""},
			{"around the oldest", map[string]any{"around": "1"}, "message 00001 of the long session"},
			{"around the newest", map[string]any{"around": "10000"}, ""},
		} {
			tc.args["id"] = "0199bound"
			tc.args["limit"] = limit
			st.items.Store(0)
			var out ReadOutput
			callOK(t, cs, "read_session", tc.args, &out)
			read := st.items.Load()
			if read == 0 || read > int64(2*limit+2) {
				t.Errorf("limit %d, %s: the store handed out %d items for a page of %d", limit, tc.name, read, len(out.Items))
			}
			// 200 items of this session pass the result's cap: the page
			// holds fewer.
			if len(out.Items) == 0 || limit < 200 && len(out.Items) != limit || out.Total != n {
				t.Errorf("limit %d, %s: %d items of %d", limit, tc.name, len(out.Items), out.Total)
			} else if tc.want != "" && out.Items[0].Text != tc.want {
				t.Errorf("limit %d, %s: starts at %q, want %q", limit, tc.name, out.Items[0].Text, tc.want)
			}
		}
	}
}
