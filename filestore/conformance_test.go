package filestore_test

import (
	"context"
	"os"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/flock"
	"github.com/recallkit/recall/storetest"
)

// TestConformance runs the shared conformance suite against the file store,
// planting damaged records as a writer of the log format that does not
// validate would (see plantItem), and holding a log's lock as another
// process would (see holdLog).
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
		Hold:  holdLog,
	})
}

// holdLog is storetest.Config.Hold for the file store: the session's log
// opened a second time and flocked, as a writer in another process holds
// it. The store cannot tell that a write waits for it (the write polls the
// lock), so waiting is nil.
func holdLog(t *testing.T, s recall.Store, key recall.Key) (waiting func() bool, release func()) {
	t.Helper()
	f, err := os.OpenFile(logPath(t, s.(*filestore.Store), key), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := flock.Lock(context.Background(), f); err != nil {
		f.Close()
		t.Fatal(err)
	}
	return nil, func() { f.Close() }
}
