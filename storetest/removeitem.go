package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/recallkit/recall"
)

// testRemoveItem checks recall.StoreSession.RemoveItem: any one item of the view goes,
// by its ref (a middle one, the first, the newest, a compaction's summary);
// the log keeps the item and records a remove entry naming it; ItemCount
// drops; Pop and Replay agree with the view afterwards.
func testRemoveItem(e *env) {
	key := recall.Key{Project: "p", Session: "s"}
	it := msgs("m", 6)
	e.mustAdd(key, it...) // seqs 1-6

	checkRemoveItemSteps(e, key, it)
	checkRemoveItemNotInView(e, key)
	checkPopAfterRemoveItem(e, key, it)
	checkRemoveItemCleared(e)
	checkRemoveItemCompacted(e)

	// A fork after removals holds the view, not the log's items.
	fork := recall.Key{Project: "p", Session: "fork"}
	if _, err := recall.NewSession(e.s, key).Fork(e.ctx, 0, fork); err != nil {
		e.t.Fatalf("Fork: %v", err)
	}
	e.wantView(fork, []recall.Item{it[1]})
}

// checkRemoveItemSteps removes a middle item, the first and the newest of
// key, whose items 1-6 are it, and checks after each the view, LastSeq
// and ItemCount, the item kept in the log, the remove entry naming it,
// and that Replay agrees.
func checkRemoveItemSteps(e *env, key recall.Key, it []recall.Item) {
	t := e.t
	type step struct {
		what string
		ref  recall.ItemRef
		item recall.Item
		view []recall.Item // afterwards
	}
	steps := []step{
		{"a middle item", recall.ItemRef{Seq: 3}, it[2], []recall.Item{it[0], it[1], it[3], it[4], it[5]}},
		{"the first item", recall.ItemRef{Seq: 1}, it[0], []recall.Item{it[1], it[3], it[4], it[5]}},
		{"the newest item", recall.ItemRef{Seq: 6}, it[5], []recall.Item{it[1], it[3], it[4]}},
	}
	for _, st := range steps {
		before := e.mustStat(key)
		got, err := recall.NewSession(e.s, key).RemoveItem(e.ctx, st.ref)
		if err != nil || !bytes.Equal(got, st.item) {
			t.Errorf("RemoveItem of %s (%+v) = %s, %v; want %s", st.what, st.ref, clip(got), err, clip(st.item))
			continue
		}
		e.wantView(key, st.view)
		m, log := e.mustLoad(key)
		if m.LastSeq != before.LastSeq+1 || m.ItemCount != before.ItemCount-1 {
			t.Errorf("after RemoveItem of %s: LastSeq %d, ItemCount %d; want %d, %d", st.what, m.LastSeq, m.ItemCount, before.LastSeq+1, before.ItemCount-1)
		}
		// The log keeps the item and ends with the remove entry.
		if !bytes.Equal(log[st.ref.Seq-1].Data, st.item) {
			t.Errorf("after RemoveItem of %s the log's entry %d holds %s, want the item kept", st.what, st.ref.Seq, clip(recall.Item(log[st.ref.Seq-1].Data)))
		}
		es, err := e.s.Entries(e.ctx, key, before.LastSeq, 0)
		if err != nil || len(es) != 1 {
			t.Errorf("Entries after the remove: %d entries, %v; want the remove entry", len(es), err)
		} else if d := EntryDiff(es[0], recall.Entry{Seq: before.LastSeq + 1, Kind: recall.KindRemove, Data: mustJSON(st.ref)}, false); d != "" {
			t.Errorf("the remove entry of %s: %s", st.what, d)
		}
		e.wantReplay(key)
	}
}

// checkRemoveItemNotInView adds an item to key (seq 10) and pops it, then
// checks that refs that are not in the view (removed, popped, a remove
// entry, out of range, malformed) and a missing session are ErrNotFound,
// with nothing written.
func checkRemoveItemNotInView(e *env, key recall.Key) {
	t := e.t
	e.mustAdd(key, msg("to-pop")) // seq 10
	if _, err := e.s.Pop(e.ctx, key); err != nil {
		t.Fatal(err)
	}
	notInView := []struct {
		what string
		ref  recall.ItemRef
	}{
		{"removed already", recall.ItemRef{Seq: 3}},
		{"the newest, removed already", recall.ItemRef{Seq: 6}},
		{"popped", recall.ItemRef{Seq: 10}},
		{"a remove entry, not an item", recall.ItemRef{Seq: 7}},
		{"past the end", recall.ItemRef{Seq: 99}},
		{"seq 0", recall.ItemRef{}},
		{"an index into a plain item", recall.ItemRef{Seq: 2, Index: 1}},
		{"a negative seq", recall.ItemRef{Seq: -2}},
	}
	for _, c := range notInView {
		before := e.state(key)
		_, err := recall.NewSession(e.s, key).RemoveItem(e.ctx, c.ref)
		wantErr(t, fmt.Sprintf("RemoveItem of a ref %s (%+v)", c.what, c.ref), err, recall.ErrNotFound)
		e.wantState("a refused RemoveItem", key, before)
	}
	missing := recall.Key{Project: "p", Session: "missing"}
	_, err := recall.NewSession(e.s, missing).RemoveItem(e.ctx, recall.ItemRef{Seq: 1})
	wantErr(t, "RemoveItem in a missing session", err, recall.ErrNotFound)
	e.wantAbsent("RemoveItem", missing)
}

// checkPopAfterRemoveItem removes the newest item of key (seq 5, it[4])
// and checks that Pop then takes the newest item still in the view.
func checkPopAfterRemoveItem(e *env, key recall.Key, it []recall.Item) {
	t := e.t
	if got, err := recall.NewSession(e.s, key).RemoveItem(e.ctx, recall.ItemRef{Seq: 5}); err != nil || !bytes.Equal(got, it[4]) {
		t.Errorf("RemoveItem of the newest = %s, %v", clip(got), err)
	}
	if got, err := e.s.Pop(e.ctx, key); err != nil || !bytes.Equal(got, it[3]) {
		t.Errorf("Pop after RemoveItem of the newest = %s, %v; want %s", clip(got), err, clip(it[3]))
	}
	e.wantView(key, []recall.Item{it[1]})
	e.wantReplay(key)
}

// checkRemoveItemCleared checks that an item cleared away is no longer in
// the view: removing it is ErrNotFound and writes nothing.
func checkRemoveItemCleared(e *env) {
	cleared := recall.Key{Project: "p", Session: "cleared"}
	e.mustAdd(cleared, msgs("c", 2)...)
	e.must(recall.NewSession(e.s, cleared).Clear(e.ctx))
	before := e.state(cleared)
	_, err := recall.NewSession(e.s, cleared).RemoveItem(e.ctx, recall.ItemRef{Seq: 1})
	wantErr(e.t, "RemoveItem of a cleared item", err, recall.ErrNotFound)
	e.wantState("a refused RemoveItem of a cleared item", cleared, before)
}

// checkRemoveItemCompacted checks RemoveItem around a compaction: items
// compacted away, or copied by the compaction and named by their old
// refs, are ErrNotFound, as is an index past the compaction's items; the
// summary and the compaction's items go by the compaction's refs; Pop
// and Replay agree with the view afterwards.
func checkRemoveItemCompacted(e *env) {
	t := e.t
	comp := recall.Key{Project: "p", Session: "compacted"}
	ci := msgs("k", 4)
	e.mustAdd(comp, ci...) // seqs 1-4
	summary := recall.Item(`{"type":"message","role":"system","content":"summary of k-0, k-1"}`)
	compSeq := e.mustCompact(comp, 4, 4, summary, ci[2], ci[3]) // seq 5
	e.mustAdd(comp, msg("after"))                               // seq 6
	before := e.state(comp)
	_, err := recall.NewSession(e.s, comp).RemoveItem(e.ctx, recall.ItemRef{Seq: 1})
	wantErr(t, "RemoveItem of an item compacted away", err, recall.ErrNotFound)
	_, err = recall.NewSession(e.s, comp).RemoveItem(e.ctx, recall.ItemRef{Seq: 3})
	wantErr(t, "RemoveItem of an item the compaction copied, by its old ref", err, recall.ErrNotFound)
	_, err = recall.NewSession(e.s, comp).RemoveItem(e.ctx, recall.ItemRef{Seq: compSeq, Index: 3})
	wantErr(t, "RemoveItem past the compaction's items", err, recall.ErrNotFound)
	e.wantState("refused RemoveItems of compacted items", comp, before)

	if got, err := recall.NewSession(e.s, comp).RemoveItem(e.ctx, recall.ItemRef{Seq: compSeq}); err != nil || !bytes.Equal(got, summary) {
		t.Errorf("RemoveItem of the compaction's summary = %s, %v", clip(got), err)
	}
	e.wantView(comp, []recall.Item{ci[2], ci[3], msg("after")})
	live := e.mustItems(comp, 0)
	if want := []recall.ItemRef{{Seq: compSeq, Index: 1}, {Seq: compSeq, Index: 2}, {Seq: 6}}; len(live) != 3 || live[0].Ref != want[0] || live[1].Ref != want[1] || live[2].Ref != want[2] {
		t.Errorf("refs after removing the summary = %v, want %v", live, want)
	}
	if got, err := recall.NewSession(e.s, comp).RemoveItem(e.ctx, recall.ItemRef{Seq: compSeq, Index: 2}); err != nil || !bytes.Equal(got, ci[3]) {
		t.Errorf("RemoveItem of the compaction's last item = %s, %v", clip(got), err)
	}
	_, err = recall.NewSession(e.s, comp).RemoveItem(e.ctx, recall.ItemRef{Seq: compSeq})
	wantErr(t, "RemoveItem of the summary twice", err, recall.ErrNotFound)
	if got, err := e.s.Pop(e.ctx, comp); err != nil || !bytes.Equal(got, msg("after")) {
		t.Errorf("Pop = %s, %v; want %s", clip(got), err, clip(msg("after")))
	}
	if got, err := e.s.Pop(e.ctx, comp); err != nil || !bytes.Equal(got, ci[2]) {
		t.Errorf("Pop into the compaction after removals = %s, %v; want %s", clip(got), err, clip(ci[2]))
	}
	if got, err := e.s.Pop(e.ctx, comp); got != nil || err != nil {
		t.Errorf("Pop of the emptied session = %s, %v; want nil, nil", clip(got), err)
	}
	e.wantView(comp, nil)
	e.wantReplay(comp)
}

// wantReplay checks that the view and metadata a store returns for key are
// what recall.Replay derives from its log.
func (e *env) wantReplay(key recall.Key) {
	e.t.Helper()
	m, log := e.mustLoad(key)
	want, live := recall.Replay(key, log)
	if d := MetaDiff(m, want, true); d != "" {
		e.t.Errorf("%s: Load's metadata is not what Replay derives from its log: %s", key, d)
	}
	if d := liveDiff(e.mustItems(key, 0), live); d != "" {
		e.t.Errorf("%s: Items is not the view Replay derives from the log: %s", key, d)
	}
}

// mustJSON encodes v, which always encodes.
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
