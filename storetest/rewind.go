package storetest

import (
	"errors"

	"github.com/recallkit/recall"
)

// testRewind checks recall.StoreSession.Rewind and Redo: a rewind sets
// the view back to just after an item and keeps the log; redo brings the
// items back byte for byte, newest rewind first, until the view changes
// otherwise; refused rewinds write nothing; a rewind into a compaction
// and its redo.
func testRewind(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	it := msgs("m", 6)
	e.mustAdd(key, it...) // seqs 1-6
	sess := recall.NewSession(e.s, key)

	e.rewind(key, recall.ItemRef{Seq: 3}, 3)
	e.wantView(key, it[:3])
	m, log := e.mustLoad(key)
	if m.LastSeq != 10 || len(log) != 10 {
		t.Fatalf("after a rewind of 3 items: LastSeq %d, %d entries; want 10", m.LastSeq, len(log))
	}
	for i, e := range log[6:9] {
		if e.Kind != recall.KindRemove {
			t.Errorf("entry %d of the rewind is %s, want a removal", e.Seq, e.Kind)
		}
		if string(e.Data) != string(mustJSON(recall.ItemRef{Seq: int64(4 + i)})) {
			t.Errorf("removal %d names %s, want item %d", e.Seq, e.Data, 4+i)
		}
	}
	if log[9].Kind != recall.KindRewind {
		t.Errorf("the rewind's last entry is %s, want %s", log[9].Kind, recall.KindRewind)
	}
	e.wantReplay(key)

	// A title change is not a change of the view: redo still works.
	if _, err := sess.SetTitle(e.ctx, "t", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	e.rewind(key, recall.ItemRef{Seq: 1}, 2)
	e.wantView(key, it[:1])
	e.redo(key, 2)
	e.wantView(key, it[:3])
	e.redo(key, 3)
	e.wantView(key, it)
	e.wantReplay(key)
	e.redo(key, 0)

	// Rewound items come back with new refs, in their order.
	live := e.mustItems(key, 0)
	if live[0].Ref != (recall.ItemRef{Seq: 1}) || live[5].Ref.Seq <= 10 {
		t.Errorf("refs after redo: %v", live)
	}
	checkRewindRefused(e, key)

	// Any other change of the view ends what can be redone.
	for _, change := range []struct {
		what string
		fn   func() error
	}{
		{"a new item", func() error { return sess.AddItems(e.ctx, msg("new")) }},
		{"a pop", func() error { _, err := sess.PopItem(e.ctx); return err }},
		{"a clear", func() error { return sess.Clear(e.ctx) }},
	} {
		live := e.mustItems(key, 0)
		if len(live) < 2 {
			e.mustAdd(key, msgs(change.what, 2)...)
			live = e.mustItems(key, 0)
		}
		e.rewind(key, live[0].Ref, len(live)-1)
		e.must(change.fn())
		if _, err := sess.Redo(e.ctx); !errors.Is(err, recall.ErrNothingToRedo) {
			t.Errorf("Redo after %s: %v, want ErrNothingToRedo", change.what, err)
		}
	}

	// To the zero ref: the view empties, and comes back.
	e.mustAdd(key, msgs("z", 3)...)
	live = e.mustItems(key, 0)
	e.rewind(key, recall.ItemRef{}, len(live))
	e.wantView(key, nil)
	e.redo(key, len(live))
	e.wantView(key, recall.PlainItems(live))
	e.wantReplay(key)

	checkRewindCompacted(e)
}

// checkRewindRefused checks that rewinds to refs not in key's view, of a
// missing session, and to the newest item write nothing, and that Redo of
// a missing session is ErrNotFound.
func checkRewindRefused(e *env, key recall.Key) {
	t := e.t
	before := e.state(key)
	sess := recall.NewSession(e.s, key)
	for _, ref := range []recall.ItemRef{{Seq: 4}, {Seq: 7}, {Seq: 10}, {Seq: 999}, {Seq: 1, Index: 1}} {
		_, err := sess.Rewind(e.ctx, ref)
		wantErr(t, "Rewind to "+ref.String()+", which is not in the view", err, recall.ErrNotFound)
	}
	live := e.mustItems(key, 0)
	if n, err := sess.Rewind(e.ctx, live[len(live)-1].Ref); n != 0 || err != nil {
		t.Errorf("Rewind to the newest item = %d, %v; want 0, nil", n, err)
	}
	e.wantState("refused rewinds", key, before)
	missing := recall.NewSession(e.s, recall.Key{Project: "p", Session: "missing"})
	_, err := missing.Rewind(e.ctx, recall.ItemRef{Seq: 1})
	wantErr(t, "Rewind of a missing session", err, recall.ErrNotFound)
	_, err = missing.Rewind(e.ctx, recall.ItemRef{})
	wantErr(t, "Rewind of a missing session to the start", err, recall.ErrNotFound)
	_, err = missing.Redo(e.ctx)
	wantErr(t, "Redo of a missing session", err, recall.ErrNotFound)
	e.wantAbsent("a missing session after Rewind and Redo", missing.Key())
}

// checkRewindCompacted rewinds into a compaction's items and back.
func checkRewindCompacted(e *env) {
	comp := recall.Key{Project: "p", Session: "compacted"}
	ci := msgs("k", 4)
	e.mustAdd(comp, ci...) // seqs 1-4
	summary := recall.Item(`{"type":"message","role":"system","content":"summary of k-0, k-1"}`)
	compSeq := e.mustCompact(comp, 4, 4, summary, ci[2], ci[3]) // seq 5
	e.mustAdd(comp, msg("after"))                               // seq 6
	e.rewind(comp, recall.ItemRef{Seq: compSeq}, 3)
	e.wantView(comp, []recall.Item{summary})
	e.redo(comp, 3)
	e.wantView(comp, []recall.Item{summary, ci[2], ci[3], msg("after")})
	e.wantReplay(comp)
}

// rewind rewinds key to ref and checks how many items left the view.
func (e *env) rewind(key recall.Key, ref recall.ItemRef, want int) {
	e.t.Helper()
	if n, err := recall.NewSession(e.s, key).Rewind(e.ctx, ref); n != want || err != nil {
		e.t.Fatalf("Rewind(%s, %s) = %d, %v; want %d, nil", key, ref, n, err, want)
	}
}

// redo redoes key's last rewind and checks how many items came back; want
// 0 expects ErrNothingToRedo.
func (e *env) redo(key recall.Key, want int) {
	e.t.Helper()
	n, err := recall.NewSession(e.s, key).Redo(e.ctx)
	if want == 0 {
		if !errors.Is(err, recall.ErrNothingToRedo) {
			e.t.Fatalf("Redo(%s) = %d, %v; want ErrNothingToRedo", key, n, err)
		}
		return
	}
	if n != want || err != nil {
		e.t.Fatalf("Redo(%s) = %d, %v; want %d, nil", key, n, err, want)
	}
}
