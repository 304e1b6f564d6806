package filestore_test

import (
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/storetest"
)

// TestConformance runs the shared conformance suite against the file store.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) recall.Store {
		s, err := filestore.Open(filestore.Options{Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
