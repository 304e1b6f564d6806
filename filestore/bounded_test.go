package filestore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
)

// TestIndexMapsBounded checks that a project's in-memory index holds what
// its sessions need, not a trace of every session it ever had: after
// thousands of sessions come and go (in this process and in another one,
// whose journal lines this one reads), with listings in between, its map
// of the last line about each log is back near the size of its records.
func TestIndexMapsBounded(t *testing.T) {
	ctx := context.Background()
	open := opener(t, t.TempDir(), nil)
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
			if _, err := w.Append(ctx, k, recall.IfNew(), recall.Message("user", "hi").Entry()); err != nil {
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

// TestListOrderKeptInStep changes sessions at random, in this process and
// in another one (whose journal lines this one reads), and lists between
// the changes page by page: the order a warm store keeps as records change
// must give the pages a store opened anew gives, which builds its order
// from the records at once, and every page must follow the one before.
func TestListOrderKeptInStep(t *testing.T) {
	ctx := context.Background()
	// The directory's names are vouched for at once, so that the lists
	// take the journal's word (and the kept order) rather than read it.
	h := &filestore.Hooks{Settled: true}
	open := opener(t, t.TempDir(), h)
	s, other := open(), open()
	rng := testkit.Rand(t)
	key := func() recall.Key { return recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", rng.IntN(40))} }
	for step := range 300 {
		w := s
		if rng.IntN(3) == 0 {
			w = other
		}
		k := key()
		var err error
		switch rng.IntN(6) {
		case 0, 1:
			_, err = w.Append(ctx, k, recall.Guard{}, recall.Message("user", "hi").Entry())
		case 2:
			_, err = recall.NewSession(w, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(rng.IntN(2) == 0)})
		case 3:
			_, err = recall.NewSession(w, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(rng.IntN(2) == 0)})
		case 4:
			err = w.Remove(ctx, k)
		case 5:
			_, err = recall.NewSession(w, k).SetTitle(ctx, fmt.Sprintf("title %d", step), recall.TitleUser)
		}
		if err != nil && !errors.Is(err, recall.ErrNotFound) {
			t.Fatalf("step %d: %v", step, err)
		}
		if step%10 != 9 {
			continue
		}
		opts := recall.ListOptions{Limit: 1 + rng.IntN(7), IncludeArchived: rng.IntN(2) == 0, Pinned: rng.IntN(4) == 0}
		got, want := listAll(t, s, opts), listAll(t, open(), opts)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d, %+v: the warm store lists\n%v\nwant, as a new store does,\n%v", step, opts, got, want)
		}
	}
	if n := h.TrustedLists.Load(); n < 100 {
		t.Errorf("%d pages were listed from the journal's word; the test means most of them to be", n)
	}
}

// listAll lists project p page by page with opts and returns the keys in
// order, failing the test if a page is out of order with the one before.
func listAll(t *testing.T, s recall.Store, opts recall.ListOptions) []string {
	t.Helper()
	var keys []string
	var last time.Time
	for {
		page, err := s.List(context.Background(), "p", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Sessions {
			if len(keys) > 0 && m.Updated.After(last) {
				t.Fatalf("%s (updated %v) lists after a session updated %v", m.Key.Session, m.Updated, last)
			}
			keys, last = append(keys, m.Key.Session), m.Updated
		}
		if page.Next == "" {
			return keys
		}
		opts.Cursor = page.Next
	}
}

// opener returns a function that opens a store on dir (without fsync)
// with hooks h, closed when the test ends.
func opener(t *testing.T, dir string, h *filestore.Hooks) func() *filestore.Store {
	return func() *filestore.Store {
		s, err := filestore.OpenHooked(filestore.Options{Dir: dir, Sync: filestore.SyncNever}, h)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}
