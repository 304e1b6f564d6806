package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
)

// walFrames returns how many frames the WAL of the database at path
// holds, read by a PASSIVE checkpoint on a connection of its own (which
// copies them, but leaves the count until the next write restarts the
// WAL).
func walFrames(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var busy, log, done int
	if err := db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
		t.Fatal(err)
	}
	return log
}

// TestSQLiteCheckpointsOffTheWriter checks that appends leave the WAL's
// checkpoints to the background goroutine (see sqlitebg.go): held back,
// the WAL grows past SQLite's default of 1,000 pages, where the writer
// used to checkpoint in the append that met it, up to walBound pages,
// where the writer checkpoints after all; let go, the goroutine
// checkpoints.
func TestSQLiteCheckpointsOffTheWriter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "recall.db")
	s, err := OpenSQLite(ctx, path, Options{SQLiteSync: SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	lb := s.db.(*liteBackend)
	appendN := func(n int) {
		t.Helper()
		k := recall.Key{Project: "p", Session: "s"}
		for i := range n {
			if _, err := s.Append(ctx, k, recall.Guard{}, msg(fmt.Sprintf("words %d", i)).Entry()); err != nil {
				t.Fatal(err)
			}
		}
	}

	lb.bg.hold.Lock()
	appendN(400) // about 5 pages each
	if n := walFrames(t, path); n <= 1000 {
		t.Errorf("the WAL holds %d frames after 400 appends with the goroutine held back, want more than 1,000 (the writer checkpointed)", n)
	}
	appendN(walBound/4 + 100)
	if n := walFrames(t, path); n >= walBound {
		t.Errorf("the WAL holds %d frames after %d more appends, want fewer than walBound (%d)", n, walBound/4+100, walBound)
	}
	lb.bg.hold.Unlock()

	appendN(2 * checkpointEvery)
	testkit.Eventually(t, 10*time.Second, "a background checkpoint", func() bool { return lb.bg.checkpoints.Load() > 0 })
	verify(t, s)
}
