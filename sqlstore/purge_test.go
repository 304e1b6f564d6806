package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// TestPurge builds the same logs in the store and in memstore (imported,
// so with the same times), purges both and demands the same result, the
// same log, metadata and view; then checks the purged session still takes
// appends, pops and reads, including reads that page back to its first
// entry.
func TestPurge(t *testing.T) {
	t.Parallel()
	dialects(t, func(t *testing.T, newStore func(t testing.TB) *Store) {
		ctx := context.Background()
		s := newStore(t)
		ref := memstore.New(memstore.Options{})
		k := recall.Key{Project: "p", Session: "purge"}
		if _, err := s.Purge(ctx, k); !errors.Is(err, recall.ErrNotFound) {
			t.Fatalf("Purge of a missing session = %v, want ErrNotFound", err)
		}
		at := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
		var log []recall.Entry
		add := func(e recall.Entry) {
			e.Seq, e.Time = int64(len(log)+1), at.Add(time.Duration(len(log))*time.Second)
			log = append(log, e)
		}
		yes := true
		for i := range 30 {
			e := msg(fmt.Sprint("m", i)).Entry()
			e.Usage = &recall.Usage{InputTokens: int64(i), OutputTokens: 1, TotalTokens: int64(i + 1)}
			add(e)
		}
		add(recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "kept", Source: recall.TitleUser}))
		add(recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes, Labels: []string{"a", "b"}}))
		add(recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 30}))
		add(recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: int64(len(log)), Replaced: 29,
			Items: []recall.Item{msg("summary"), msg("m28")}}))
		for i := range 20 {
			add(msg(fmt.Sprint("after", i)).Entry())
		}
		for range 15 {
			add(recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: int64(len(log)) - 15}))
		}
		for _, st := range []recall.Store{s, ref} {
			if _, err := st.Import(ctx, k, log...); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Purge(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ref.Purge(ctx, k)
		if got != want || got.Dropped == 0 {
			t.Fatalf("Purge = %+v, memstore %+v", got, want)
		}
		compareStores(t, -1, s, ref, k)
		if res, err := s.Purge(ctx, k); err != nil || res.Dropped != 0 {
			t.Errorf("second Purge = %+v, %v; want nothing dropped", res, err)
		}
		// The view: summary, m28, after0-3, after19 (the pops took
		// after4-18). Items(2) reads past the 15 pops at the end, more than
		// its first statement holds.
		items, _, err := s.Items(ctx, k, 0)
		if err != nil || len(items) != 7 || !bytes.Equal(items[0].Item, msg("summary")) {
			t.Fatalf("Items(0) after purge: %d items, %v", len(items), err)
		}
		items, _, err = s.Items(ctx, k, 2)
		if err != nil || len(items) != 2 || !bytes.Equal(items[0].Item, msg("after3")) || !bytes.Equal(items[1].Item, msg("after19")) {
			t.Fatalf("Items(2) after purge: %v, %v", texts(items), err)
		}
		if it, err := s.Pop(ctx, k); err != nil || !bytes.Equal(it, msg("after19")) {
			t.Fatalf("Pop after purge = %s, %v", it, err)
		}
		if _, err := s.Append(ctx, k, recall.Guard{}, msg("new").Entry()); err != nil {
			t.Fatal(err)
		}
		verify(t, s)
	})
}
