package redisstore

import (
	"context"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storetest"
)

// TestEdges runs the edge-case items of docs/ITEMS.md, each store on its
// own prefix.
func TestEdges(t *testing.T) {
	t.Parallel()
	testURL(t) // skip loudly without Redis
	storetest.RunEdges(t, func(t *testing.T, max int) recall.Store {
		s, err := Open(context.Background(), testURL(t), Options{Prefix: testPrefix(t), MaxItemSize: max})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
