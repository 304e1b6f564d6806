package filestore_test

import (
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/storetest"
)

// TestConformance runs the shared conformance suite against the file store,
// planting damaged records as a writer of the log format that does not
// validate would (see plantItem).
func TestConformance(t *testing.T) {
	storetest.RunConfig(t, storetest.Config{
		New: func(t *testing.T) recall.Store {
			s, err := filestore.Open(filestore.Options{Dir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Plant: func(t *testing.T, s recall.Store, key recall.Key, data []byte) { plantItem(t, s, key, data) },
	})
}
