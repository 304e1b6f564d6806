package sqlstore

import (
	"context"
	"path/filepath"
	"testing"
)

// TestSQLiteSynchronous checks the writer connection's synchronous
// setting: FULL (2) by default, so that an acknowledged append is on the
// disk, and NORMAL (1) only when asked for.
func TestSQLiteSynchronous(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		sync SQLiteSync
		want int
	}{{SyncFull, 2}, {SyncNormal, 1}} {
		t.Run(tc.sync.String(), func(t *testing.T) {
			s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"), Options{SQLiteSync: tc.sync})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var got int
			if err := s.db.(*liteBackend).w.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("PRAGMA synchronous = %d, want %d", got, tc.want)
			}
		})
	}
	if _, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "recall.db"), Options{SQLiteSync: 7}); err == nil {
		t.Error("OpenSQLite with SQLiteSync 7 succeeded")
	}
}
