package filestore_test

import (
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/storetest"
)

// TestEdges runs the edge-case items of docs/ITEMS.md against the file
// store.
func TestEdges(t *testing.T) {
	storetest.RunEdges(t, func(t *testing.T, max int) recall.Store {
		s, err := filestore.Open(filestore.Options{Dir: t.TempDir(), MaxItemSize: max})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
