package sqlstore

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storetest"
)

// TestViewIsOneSnapshot: a read transaction (backend.view, which Load,
// Entries and Items' long path run in) sees one snapshot, on SQLite too:
// an append committed by another connection between its first and second
// statement is invisible to the second.
func TestViewIsOneSnapshot(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		ctx := context.Background()
		k := recall.Key{Project: "p", Session: "snap"}
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(msg("a"), msg("b"))...); err != nil {
			t.Fatal(err)
		}
		err := s.db.view(ctx, func(ctx context.Context, q querier) error {
			var sid, last int64
			if err := q.queryRow(ctx, lastSeqSQL, k.Project, k.Session, k.Subpath).Scan(&sid, &last); err != nil {
				return err
			}
			// another connection (the writer, or another pool connection) commits
			if _, err := s.Append(ctx, k, recall.Guard{}, msg("c").Entry()); err != nil {
				return err
			}
			entries, err := readEntries(ctx, q, sid, 0, 0)
			if err != nil {
				return err
			}
			if len(entries) != int(last) || entries[len(entries)-1].Seq != last {
				t.Errorf("the view read last_seq %d, then %d entries: it saw a later commit", last, len(entries))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if m, _ := s.Stat(ctx, k); m.LastSeq != 3 {
			t.Fatalf("the append inside the view did not commit: LastSeq %d", m.LastSeq)
		}
	})
}

// TestReadsAreSnapshots reads a session with Items (several limits, so
// both its one-statement path and its paging transaction run) and Load
// while a writer appends items, pops, removals, titles and pins to it.
// Each Items result must be exactly the view of the log cut at the LastSeq
// Items returned with it, and each Load's metadata must be what its own
// entries replay to.
func TestReadsAreSnapshots(t *testing.T) {
	t.Parallel()
	rounds := testkit.Size(40, 150)
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		k := recall.Key{Project: "p", Session: "busy"}
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(msg("0"), msg("1"), msg("2"))...); err != nil {
			t.Fatal(err)
		}
		type obs struct {
			limit int
			live  []recall.LiveItem
			last  int64
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			seen []obs
		)
		wg.Go(func() {
			defer cancel()
			for r := range rounds {
				var err error
				switch r % 6 {
				case 0, 1:
					_, err = s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(msg(fmt.Sprint(r)), msg(fmt.Sprint(r, "b")))...)
				case 2:
					_, err = s.Pop(ctx, k)
				case 3:
					_, err = recall.NewSession(s, k).SetTitle(ctx, fmt.Sprint("t", r), recall.TitleUser)
				case 4:
					_, err = recall.NewSession(s, k).RemoveItem(ctx, recall.ItemRef{Seq: int64(r / 2)})
					if err != nil && !isNotFound(err) {
						break
					}
					err = nil
				case 5:
					_, err = recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(r%4 == 1)})
				}
				if err != nil {
					t.Errorf("writer, round %d: %v", r, err)
					return
				}
			}
		})
		for g := range 2 {
			wg.Go(func() {
				for i := 0; ctx.Err() == nil; i++ {
					limit := []int{0, 1, 3, 20}[(i+g)%4]
					live, last, err := s.Items(ctx, k, limit)
					if err != nil {
						if ctx.Err() == nil {
							t.Errorf("items: %v", err)
						}
						return
					}
					mu.Lock()
					seen = append(seen, obs{limit, live, last})
					mu.Unlock()
					if i%3 == 0 {
						m, entries, err := s.Load(ctx, k)
						if err != nil {
							if ctx.Err() == nil {
								t.Errorf("load: %v", err)
							}
							return
						}
						want, _ := recall.Replay(k, entries)
						if d := storetest.MetaDiff(m, want, true); d != "" {
							t.Errorf("Load's metadata is not its log's: %s", d)
						}
					}
				}
			})
		}
		wg.Wait()
		_, log, err := s.Load(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range seen {
			_, want := recall.Replay(k, log[:o.last])
			if o.limit > 0 && len(want) > o.limit {
				want = want[len(want)-o.limit:]
			}
			same := len(o.live) == len(want)
			for i := 0; same && i < len(want); i++ {
				same = o.live[i].Ref == want[i].Ref && bytes.Equal(o.live[i].Item, want[i].Item)
			}
			if !same {
				t.Fatalf("Items(%d) at LastSeq %d returned %d items, not the view of the log at that seq (%d items)", o.limit, o.last, len(o.live), len(want))
			}
		}
		t.Logf("%d Items results checked", len(seen))
	})
}

func isNotFound(err error) bool { return storetest.ErrorClass(err) == "ErrNotFound" }
