package sqlstore

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
	"github.com/recallkit/recall/storetest"
)

// TestAgainstMemstore runs the same random operations on a store and on
// memstore, the reference, and compares what they return: items at
// several limits (runs of pops make Items page backwards past its first
// statement), metadata and the log. It mixes the items-only fast path of
// Append with the general one (titles, meta, pops, clears, compactions,
// unknown kinds, usage).
func TestAgainstMemstore(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		s := newStore(t)
		for seed := range uint64(2) {
			t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
				runModel(t, s, seed)
			})
		}
		verify(t, s)
	})
}

func runModel(t *testing.T, s *Store, seed uint64) {
	ctx := context.Background()
	ref := memstore.New(memstore.Options{})
	defer ref.Close()
	rng := rand.New(rand.NewPCG(seed, 42))
	k := recall.Key{Project: "model", Session: fmt.Sprint("s", seed)}
	if seed == 1 {
		k.Subpath = "subagents/a"
	}
	n := 0
	item := func() recall.Item {
		n++
		return recall.Item(fmt.Sprintf(`{"type":"message","role":"user","content":"m%d","x":[1, 2]}`, n))
	}
	outcomes := map[string]int{} // of the appends, by error class
	for op := range testkit.Size(60, 120) {
		var batch []recall.Entry
		guard := recall.Guard{}
		last := int64(0)
		if m, err := ref.Stat(ctx, k); err == nil {
			last = m.LastSeq
		}
		switch r := rng.IntN(120); {
		case r < 40:
			for range 1 + rng.IntN(3) {
				e := item().Entry()
				if rng.IntN(3) == 0 {
					e.Usage = &recall.Usage{InputTokens: int64(rng.IntN(100)), OutputTokens: 1, TotalTokens: 2}
				}
				batch = append(batch, e)
			}
			// the items-only fast path, guarded: right and wrong guesses
			guard = []recall.Guard{{}, {}, recall.IfExists(), recall.IfNew(), recall.IfLastSeq(last), recall.IfLastSeq(last + 1)}[rng.IntN(6)]
		case r < 70:
			// pops in runs, to build long stretches Items must skip
			for range 1 + rng.IntN(12) {
				a, err1 := s.Pop(ctx, k)
				b, err2 := ref.Pop(ctx, k)
				if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
					t.Fatalf("op %d: pop = %s, %v; memstore %s, %v", op, a, err1, b, err2)
				}
			}
		case r < 73:
			batch = []recall.Entry{{Kind: recall.KindClear}}
			guard = recall.IfExists()
		case r < 78:
			live, _, _ := ref.Items(ctx, k, 0)
			keep := recall.PlainItems(live)[max(0, len(live)-2):]
			batch = []recall.Entry{recall.NewEntry(recall.KindCompaction, recall.Compaction{
				Through: last, Replaced: len(live), Items: append([]recall.Item{item()}, keep...)})}
			guard = recall.IfLastSeq(last)
		case r < 82:
			// a stale compaction: both must refuse it
			batch = []recall.Entry{recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: last - 1, Items: []recall.Item{item()}})}
			guard = recall.IfLastSeq(last - 1)
		case r < 88:
			src := []recall.TitleSource{recall.TitleAuto, recall.TitleUser}[rng.IntN(2)]
			batch = []recall.Entry{recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: fmt.Sprint("t", op), Source: src})}
			guard = []recall.Guard{{}, recall.IfExists(), recall.IfNew()}[rng.IntN(3)]
		case r < 94:
			pin := rng.IntN(2) == 0
			batch = []recall.Entry{recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &pin, Labels: []string{fmt.Sprint("l", op)}})}
		case r < 100:
			v := fmt.Sprint("v", op)
			c := recall.MetaChange{Metadata: map[string]*string{fmt.Sprint("k", rng.IntN(4)): &v, "gone": nil}}
			c.ClearMetadata = rng.IntN(4) == 0
			batch = []recall.Entry{recall.NewEntry(recall.KindMeta, c)}
		case r < 110:
			// remove one item of the view, guarded by the seq it was read at
			live, at, _ := ref.Items(ctx, k, 0)
			if len(live) == 0 {
				continue
			}
			batch = []recall.Entry{recall.NewEntry(recall.KindRemove, live[rng.IntN(len(live))].Ref)}
			guard = recall.IfLastSeq(at)
		default:
			// an unknown kind between items
			batch = []recall.Entry{item().Entry(), {Kind: "future", Data: []byte(`{"v":1}`)}, item().Entry()}
		}
		if batch != nil {
			now := storekit.Now()
			for i := range batch {
				batch[i].Time = now // the same times in both stores
			}
			a, err1 := s.Append(ctx, k, guard, batch...)
			b, err2 := ref.Append(ctx, k, guard, batch...)
			if a != b || storetest.ErrorClass(err1) != storetest.ErrorClass(err2) {
				t.Fatalf("op %d: append with %+v = %d, %v; memstore %d, %v", op, guard, a, err1, b, err2)
			}
			outcomes[storetest.ErrorClass(err1)]++
		}
		if op%15 == 14 {
			compareStores(t, op, s, ref, k)
		}
	}
	compareStores(t, -1, s, ref, k)
	t.Logf("appends: %v", outcomes)
	if outcomes["ErrConflict"] == 0 || outcomes["nil"] == 0 {
		t.Errorf("appends: %v; the guards were not exercised both ways", outcomes)
	}
}

func compareStores(t *testing.T, op int, s *Store, ref recall.Store, k recall.Key) {
	t.Helper()
	ctx := context.Background()
	for _, limit := range []int{0, 1, 2, 5, 20, 100} {
		got, _, err := s.Items(ctx, k, limit)
		if err != nil {
			t.Fatalf("op %d: items(%d): %v", op, limit, err)
		}
		want, _, _ := ref.Items(ctx, k, limit)
		if len(got) != len(want) {
			t.Fatalf("op %d: items(%d): %d items, memstore %d", op, limit, len(got), len(want))
		}
		for i := range got {
			if got[i].Ref != want[i].Ref || !bytes.Equal(got[i].Item, want[i].Item) {
				t.Fatalf("op %d: items(%d)[%d] = %v %s, memstore %v %s", op, limit, i, got[i].Ref, got[i].Item, want[i].Ref, want[i].Item)
			}
		}
	}
	gm, gotLog, err1 := s.Load(ctx, k)
	wm, wantLog, err2 := ref.Load(ctx, k)
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("op %d: load: %v; memstore %v", op, err1, err2)
	}
	if err1 != nil {
		return
	}
	// Pops are stamped by each store's clock: Updated may differ.
	gm.Updated, wm.Updated = time.Time{}, time.Time{}
	if gm.Corrupt != 0 {
		t.Fatalf("op %d: Load counts %d damaged rows", op, gm.Corrupt)
	}
	// Every write here was this package's, on every path: the watermark
	// of checked rows is at the end of the log.
	if checked := checkedSeq(t, s, k); checked != gm.LastSeq {
		t.Fatalf("op %d: checked_seq %d, LastSeq %d", op, checked, gm.LastSeq)
	}
	if a, b := fmt.Sprintf("%+v", gm), fmt.Sprintf("%+v", wm); a != b {
		t.Fatalf("op %d: meta\n %s\nmemstore\n %s", op, a, b)
	}
	if len(gotLog) != len(wantLog) {
		t.Fatalf("op %d: %d entries, memstore %d", op, len(gotLog), len(wantLog))
	}
	for i := range gotLog {
		g, w := gotLog[i], wantLog[i]
		sameTime := g.Time.Equal(w.Time) || g.Kind == recall.KindPop
		if g.Seq != w.Seq || g.Kind != w.Kind || !sameTime || !bytes.Equal(g.Data, w.Data) || fmt.Sprint(g.Usage) != fmt.Sprint(w.Usage) {
			t.Fatalf("op %d: entry %d = %+v, memstore %+v", op, i, g, w)
		}
	}
	if err := storekit.VerifySession(ctx, s, k); err != nil {
		t.Fatalf("op %d: %v", op, err)
	}
}
