package memstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

func TestPurge(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(memstore.Options{})
	key := recall.Key{Project: "p", Session: "s"}
	if _, err := s.Purge(ctx, key); !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("Purge of a missing session = %v, want ErrNotFound", err)
	}
	a, b, c := recall.Message("user", "a"), recall.Message("assistant", "b"), recall.Message("user", "c")
	_, err := s.Append(ctx, key, recall.Guard{}, recall.ItemEntries(a, b)...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(s, key).SetTitle(ctx, "kept title", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Purge(ctx, key); err != nil {
		t.Fatalf("Purge without a compaction: %v", err)
	}
	if _, err := recall.NewSession(s, key).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
		t.Fatal(err)
	}
	m, _ := s.Stat(ctx, key)
	comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: m.LastSeq, Replaced: 2, Items: []recall.Item{recall.Message("user", "summary"), b}})
	last, err := s.Append(ctx, key, recall.Guard{}, append([]recall.Entry{comp}, recall.ItemEntries(c)...)...)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := s.Stat(ctx, key)
	view, _, _ := s.Items(ctx, key, 0)

	res, err := s.Purge(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// title and pin entries were dropped, and come back as restore entries
	if res.Dropped != 4 || res.From != last-1 || res.Restored != 2 {
		t.Errorf("Purge = %+v, want 4 dropped from seq %d, 2 restored", res, last-1)
	}
	after, entries, err := s.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if entries[0].Kind != recall.KindCompaction || len(entries) != 4 {
		t.Errorf("purged log: %d entries starting with %s", len(entries), entries[0].Kind)
	}
	if after.Title != before.Title || !after.Pinned || after.Created != before.Created || after.Updated != before.Updated || after.LastSeq != before.LastSeq+2 {
		t.Errorf("metadata after purge %+v, before %+v", after, before)
	}
	got, _, _ := s.Items(ctx, key, 0)
	if len(got) != len(view) {
		t.Fatalf("view after purge has %d items, before %d", len(got), len(view))
	}
	for i := range got {
		if got[i].Ref != view[i].Ref || string(got[i].Item) != string(view[i].Item) {
			t.Errorf("item %d: %v %s, was %v %s", i, got[i].Ref, got[i].Item, view[i].Ref, view[i].Item)
		}
	}
	if err := storekit.VerifySession(ctx, s, key); err != nil {
		t.Error(err)
	}
	if res, err := s.Purge(ctx, key); err != nil || res.Dropped != 0 {
		t.Errorf("second Purge = %+v, %v; want nothing dropped", res, err)
	}
}
