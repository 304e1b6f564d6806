package filestore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

// TestIndexMapsBounded checks that a project's in-memory index holds what
// its sessions need, not a trace of every session it ever had: after
// thousands of sessions come and go (in this process and in another one,
// whose journal lines this one reads), with listings in between, its map
// of the last line about each log is back near the size of its records.
func TestIndexMapsBounded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *filestore.Store {
		s, err := filestore.Open(filestore.Options{Dir: dir, Sync: filestore.SyncNever})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s, other := open(), open()
	const rounds, per = 30, 100
	for r := range rounds {
		w := s
		if r%2 == 1 {
			w = other
		}
		var keys []recall.Key
		for i := range per {
			k := recall.Key{Project: "p", Session: fmt.Sprintf("s%02d-%03d", r, i)}
			if _, err := w.Append(ctx, k, recall.IfNew(), recall.ItemEntry(recall.Message("user", "hi"))); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		if _, err := s.List(ctx, "p", recall.ListOptions{Limit: 10}); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys[:per-2] { // two of each round stay
			if err := w.Remove(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.List(ctx, "p", recall.ListOptions{Limit: 10}); err != nil {
			t.Fatal(err)
		}
	}
	recs, last := filestore.IndexMaps(s, "p")
	if recs != 2*rounds {
		t.Fatalf("%d records, want %d", recs, 2*rounds)
	}
	// The bound pruning keeps: twice the records, and what came since it
	// last ran (at most its slack of 1,024).
	if last > 2*recs+1024 {
		t.Errorf("the index remembers the last line of %d logs, for %d records: %d sessions came and went", last, recs, rounds*(per-2))
	}
}
