package memstore_test

import (
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storetest"
)

// TestEdges runs the edge-case items of docs/ITEMS.md.
func TestEdges(t *testing.T) {
	t.Parallel()
	storetest.RunEdges(t, func(t *testing.T, max int) recall.Store {
		return memstore.New(memstore.Options{MaxItemSize: max})
	})
}
