package sqlstore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// TestPopFastPath checks PostgreSQL's one-round-trip Pop (popNewestPG)
// against the general path and memstore: it takes the common case (the
// newest entry an item) and declines the rest (pops in a row), and either
// way the log, the metadata and the search rows come out as memstore's
// and as storekit.Verify demands.
func TestPopFastPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newPostgres(t)
	pg := s.db.(*pgBackend)
	ref := memstore.New(memstore.Options{})
	k := recall.Key{Project: "p", Session: "undo"}
	for _, st := range []recall.Store{s, ref} {
		for _, text := range []string{"alpha one", "bravo two", "charlie three"} {
			if _, err := st.Append(ctx, k, recall.Guard{}, msg(text).Entry()); err != nil {
				t.Fatal(err)
			}
		}
	}
	it, done, err := pg.popNewest(ctx, k, true)
	if err != nil || !done || string(it) != string(msg("charlie three")) {
		t.Fatalf("fast pop = %s, %v, %v; want the newest item", it, done, err)
	}
	if _, err := ref.Pop(ctx, k); err != nil {
		t.Fatal(err)
	}
	// The newest entry is now a pop: the fast path declines, writing
	// nothing, and Pop takes the general path.
	if it, done, err := pg.popNewest(ctx, k, true); err != nil || done || it != nil {
		t.Fatalf("fast pop after a pop = %s, %v, %v; want declined", it, done, err)
	}
	for _, st := range []recall.Store{s, ref} {
		if it, err := st.Pop(ctx, k); err != nil || string(it) != string(msg("bravo two")) {
			t.Fatalf("%v: pop = %s, %v", st, it, err)
		}
		if _, err := st.Append(ctx, k, recall.Guard{}, msg("delta four").Entry()); err != nil {
			t.Fatal(err)
		}
		if it, err := st.Pop(ctx, k); err != nil || string(it) != string(msg("delta four")) {
			t.Fatalf("%v: pop = %s, %v", st, it, err)
		}
	}
	if it, done, err := pg.popNewest(ctx, recall.Key{Project: "p", Session: "none"}, true); err != nil || !done || it != nil {
		t.Fatalf("fast pop of no session = %s, %v, %v; want nothing, done", it, done, err)
	}
	got, gotLog, err := s.Load(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	want, wantLog, err := ref.Load(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if len(gotLog) != len(wantLog) {
		t.Fatalf("log of %d entries, want %d", len(gotLog), len(wantLog))
	}
	for i := range gotLog {
		g, w := gotLog[i], wantLog[i]
		if g.Seq != w.Seq || g.Kind != w.Kind || string(g.Data) != string(w.Data) {
			t.Errorf("entry %d = %d %s %s, want %d %s %s", i, g.Seq, g.Kind, g.Data, w.Seq, w.Kind, w.Data)
		}
	}
	if got.LastSeq != want.LastSeq || got.ItemCount != want.ItemCount || got.Updated != gotLog[len(gotLog)-1].Time {
		t.Errorf("meta %+v, want LastSeq %d, ItemCount %d, Updated at the last pop", got, want.LastSeq, want.ItemCount)
	}
	if m, _ := recall.Replay(k, gotLog); m.ItemCount != got.ItemCount || m.LastSeq != got.LastSeq || !m.Updated.Equal(got.Updated) || !m.Created.Equal(got.Created) {
		t.Errorf("meta %+v, replay of the log %+v", got, m)
	}
	for text, hits := range map[string]int{"alpha": 1, "charlie": 0, "bravo": 0, "delta": 0} {
		p, err := s.Search(ctx, recall.SearchOptions{Query: text})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Hits) != hits {
			t.Errorf("search %q: %d hits, want %d (live items only)", text, len(p.Hits), hits)
		}
	}
	verify(t, s)
}

// TestPopConcurrent pops and appends concurrently on one session, on both
// dialects: no item is popped twice, and the session stays consistent.
func TestPopConcurrent(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		ctx := context.Background()
		s := newStore(t)
		k := recall.Key{Project: "p", Session: "race"}
		const n = 40
		for i := range n {
			if _, err := s.Append(ctx, k, recall.Guard{}, msg(fmt.Sprint("item ", i)).Entry()); err != nil {
				t.Fatal(err)
			}
		}
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			popped = map[string]int{}
		)
		for g := range 4 {
			wg.Go(func() {
				for i := range n / 4 {
					it, err := s.Pop(ctx, k)
					if err != nil || it == nil {
						t.Errorf("pop: %s, %v", it, err)
						return
					}
					mu.Lock()
					popped[string(it)]++
					mu.Unlock()
					if i%2 == 0 {
						if _, err := s.Append(ctx, k, recall.Guard{}, msg(fmt.Sprint("more ", g, " ", i)).Entry()); err != nil {
							t.Error(err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		for it, c := range popped {
			if c != 1 {
				t.Errorf("%s popped %d times", it, c)
			}
		}
		live, _, err := s.Items(ctx, k, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.Stat(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		// n items and n/2 more appended, n popped
		if len(live) != n/2 || m.ItemCount != n/2 {
			t.Errorf("%d live items, ItemCount %d; want %d", len(live), m.ItemCount, n/2)
		}
		for _, l := range live {
			if popped[string(l.Item)] != 0 {
				t.Errorf("%s is live and was popped", l.Item)
			}
		}
		verify(t, s)
	})
}
