package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"github.com/recallkit/recall"
)

// testSessionHandle checks the Session handle: GetItems windows, AddItems
// batches, PopItem from the end, Clear.
func testSessionHandle(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	sess := recall.NewSession(e.s, key)

	if got, err := sess.GetItems(e.ctx, 0); err != nil || len(got) != 0 {
		t.Errorf("GetItems of a new session = %v, %v; want nothing, nil", got, err)
	}
	if it, err := sess.PopItem(e.ctx); it != nil || err != nil {
		t.Errorf("PopItem of a new session = %s, %v; want nil, nil", clip(it), err)
	}
	if err := sess.Clear(e.ctx); err != nil {
		t.Errorf("Clear of a new session: %v", err)
	}
	if _, err := e.s.Stat(e.ctx, key); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("reads, a pop and a clear created the session: Stat = %v, want ErrNotFound", err)
	}

	it := msgs("m", 8)
	if err := sess.AddItems(e.ctx, it[0], it[1], it[2]); err != nil {
		t.Fatalf("AddItems: %v", err)
	}
	if err := sess.AddItems(e.ctx, it[3]); err != nil {
		t.Fatalf("AddItems: %v", err)
	}
	e.wantView(key, it[:4])

	popped, err := sess.PopItem(e.ctx)
	if err != nil || !bytes.Equal(popped, it[3]) {
		t.Errorf("PopItem = %s, %v; want the newest item %s", clip(popped), err, clip(it[3]))
	}
	e.wantView(key, it[:3])

	if err := sess.AddItems(e.ctx, it[4], it[5]); err != nil {
		t.Fatalf("AddItems: %v", err)
	}
	e.wantView(key, []recall.Item{it[0], it[1], it[2], it[4], it[5]})

	if err := sess.Clear(e.ctx); err != nil {
		t.Fatalf("Clear: %v", err)
	}
	e.wantView(key, nil)
	if it, err := sess.PopItem(e.ctx); it != nil || err != nil {
		t.Errorf("PopItem after Clear = %s, %v; want nil, nil", clip(it), err)
	}
	if err := sess.AddItems(e.ctx, it[6], it[7]); err != nil {
		t.Fatalf("AddItems after Clear: %v", err)
	}
	e.wantView(key, it[6:8])

	// Pop everything, then one more.
	for i := 7; i >= 6; i-- {
		got, err := sess.PopItem(e.ctx)
		if err != nil || !bytes.Equal(got, it[i]) {
			t.Errorf("PopItem = %s, %v; want %s", clip(got), err, clip(it[i]))
		}
	}
	if got, err := sess.PopItem(e.ctx); got != nil || err != nil {
		t.Errorf("PopItem of an emptied session = %s, %v; want nil, nil", clip(got), err)
	}
	e.wantView(key, nil)

	// Pop through the Store: same contract.
	e.mustAdd(key, it[0])
	if got, err := e.s.Pop(e.ctx, key); err != nil || !bytes.Equal(got, it[0]) {
		t.Errorf("Store.Pop = %s, %v; want %s", clip(got), err, clip(it[0]))
	}
	if got, err := e.s.Pop(e.ctx, key); got != nil || err != nil {
		t.Errorf("Store.Pop of an empty session = %s, %v; want nil, nil", clip(got), err)
	}
}

// testEmptyBatch checks that an empty batch writes nothing, on a missing
// session and on an existing one.
func testEmptyBatch(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	if seq, err := e.s.Append(e.ctx, key, recall.Guard{}); seq != 0 || err != nil {
		t.Errorf("empty Append on a missing session = %d, %v; want 0, nil", seq, err)
	}
	if err := recall.NewSession(e.s, key).AddItems(e.ctx); err != nil {
		t.Errorf("empty AddItems: %v", err)
	}
	if _, err := e.s.Stat(e.ctx, key); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("an empty batch created the session: Stat = %v", err)
	}

	e.mustAdd(key, msgs("m", 2)...)
	before, log := e.mustLoad(key)
	if seq, err := e.s.Append(e.ctx, key, recall.Guard{}); seq != 2 || err != nil {
		t.Errorf("empty Append = %d, %v; want the last seq 2, nil", seq, err)
	}
	after, log2 := e.mustLoad(key)
	if d := MetaDiff(after, before, true); d != "" {
		t.Errorf("empty Append changed the metadata: %s", d)
	}
	wantLog(t, "log after an empty Append", log2, log, true)
}

// testVerbatim checks that items come back with the bytes that went in,
// from every read path.
func testVerbatim(e *env) {
	t := e.t
	items := VerbatimItems()

	// One batch holding them all.
	all := recall.Key{Project: "p", Session: "batch"}
	e.mustAdd(all, items...)
	e.wantView(all, items)
	_, log := e.mustLoad(all)
	for i, ent := range log {
		if i < len(items) && !bytes.Equal(ent.Data, items[i]) {
			t.Errorf("Load: entry %d holds %s, want %s", i, clip(recall.Item(ent.Data)), clip(items[i]))
		}
	}
	page, err := e.s.Entries(e.ctx, all, 0, 0)
	if err != nil {
		t.Fatalf("Entries: %v", err)
	}
	wantLog(t, "Entries", page, log, true)

	// One item per session, popped back.
	for i, it := range items {
		key := recall.Key{Project: "p", Session: fmt.Sprintf("one-%d", i)}
		e.mustAdd(key, it)
		live := e.mustItems(key, 1)
		if len(live) != 1 || !bytes.Equal(live[0].Item, it) {
			t.Errorf("Items of %s = %s, want %s", key, short(recall.PlainItems(live)), clip(it))
		}
		got, err := e.s.Pop(e.ctx, key)
		if err != nil || !bytes.Equal(got, it) {
			t.Errorf("Pop of %s = %s, %v; want %s", key, clip(got), err, clip(it))
		}
	}
}

// testInvalidItems checks that a batch holding one bad item fails whole.
func testInvalidItems(e *env) {
	t := e.t
	existing := recall.Key{Project: "p", Session: "existing"}
	e.mustAdd(existing, msg("first"))
	metaBefore, logBefore := e.mustLoad(existing)

	for i, bad := range InvalidItems() {
		what := fmt.Sprintf("item %s", clip(bad))
		fresh := recall.Key{Project: "p", Session: fmt.Sprintf("fresh-%d", i)}
		_, err := e.s.Append(e.ctx, fresh, recall.Guard{}, recall.ItemEntries(msg("ok"), bad)...)
		wantErr(t, "Append of a batch with "+what, err, recall.ErrInvalidItem)
		if _, err := e.s.Stat(e.ctx, fresh); !errors.Is(err, recall.ErrNotFound) {
			t.Errorf("a refused batch with %s created the session: Stat = %v", what, err)
		}
		err = recall.NewSession(e.s, existing).AddItems(e.ctx, msg("ok"), bad, msg("ok2"))
		wantErr(t, "AddItems with "+what, err, recall.ErrInvalidItem)
		_, err = e.s.Import(e.ctx, fresh, imported(1, 0, msg("ok").Entry(), bad.Entry())...)
		wantErr(t, "Import with "+what, err, recall.ErrInvalidItem)
		if _, err := e.s.Stat(e.ctx, fresh); !errors.Is(err, recall.ErrNotFound) {
			t.Errorf("a refused import with %s created the session: Stat = %v", what, err)
		}
		// The compaction is appended without a guard, so only its bad
		// item can refuse it.
		comp := recall.Entry{Kind: recall.KindCompaction,
			Data: []byte(`{"through":1,"items":[{"type":"message"},` + string(orNull(bad)) + `]}`)}
		_, err = e.s.Append(e.ctx, existing, recall.Guard{}, comp)
		wantErr(t, "compaction holding "+what, err, recall.ErrInvalidItem)
	}

	// Entries of known kinds with payloads that do not decode.
	for _, bad := range []recall.Entry{
		{Kind: ""},
		{Kind: recall.KindTitle, Data: []byte(`"a title"`)},
		{Kind: recall.KindMeta, Data: []byte(`[1]`)},
		{Kind: recall.KindPop, Data: []byte(`{"seq":"one"}`)},
		{Kind: recall.KindCompaction, Data: []byte(`{"items":{}}`)},
	} {
		_, err := e.s.Append(e.ctx, existing, recall.Guard{}, msg("ok").Entry(), bad)
		wantErr(t, fmt.Sprintf("Append of a %q entry with data %s", bad.Kind, bad.Data), err, recall.ErrInvalidItem)
	}

	metaAfter, logAfter := e.mustLoad(existing)
	if d := MetaDiff(metaAfter, metaBefore, true); d != "" {
		t.Errorf("refused batches changed the session: %s", d)
	}
	wantLog(t, "log after refused batches", logAfter, logBefore, true)
	e.wantView(existing, []recall.Item{msg("first")})
}

func orNull(it recall.Item) recall.Item {
	if len(bytes.TrimSpace(it)) == 0 {
		return recall.Item("null")
	}
	return it
}

// testInvalidUTF8 checks an item holding bytes that are not UTF-8. Such an
// item is valid JSON syntax; a store either keeps its bytes exactly or
// refuses it with ErrInvalidItem, writing nothing. It must not mangle it.
func testInvalidUTF8(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	e.mustAdd(key, msg("before"))
	bad := recall.Item("{\"a\":\"\xff\xfe\x80\"}")
	_, err := e.s.Append(e.ctx, key, recall.Guard{}, bad.Entry())
	switch {
	case errors.Is(err, recall.ErrInvalidItem):
		e.wantView(key, []recall.Item{msg("before")})
	case err != nil:
		t.Errorf("Append of an item with invalid UTF-8: %v; want success or ErrInvalidItem", err)
	default:
		e.wantView(key, []recall.Item{msg("before"), bad})
	}
}

// copyRead is one read testCopies makes: mess reads and then changes
// everything the read returned.
type copyRead struct {
	name string
	mess func()
}

// testCopies checks that nothing a caller passes in or gets back shares
// memory with what the store holds: it mutates every slice, then reads
// again.
func testCopies(e *env) {
	key := recall.Key{Project: "p", Session: "s"}
	fork := recall.Key{Project: "p", Session: "fork"}
	items := msgs("m", 3)
	orig := recall.CloneItems(items)

	checkInputCopies(e, key, fork, items, orig)
	checkOutputCopies(e, key, fork, orig)
	checkPopCopy(e, key, orig)
	checkForkMetaCopy(e, fork)
}

// checkInputCopies writes items (equal to orig) to key, with usage,
// labels and metadata, and forks key into fork, changing each input the
// store was passed once it returns; the store must not keep the caller's
// bytes, so key still holds orig, its metadata and its usage.
func checkInputCopies(e *env, key, fork recall.Key, items, orig []recall.Item) {
	t := e.t
	entries := recall.ItemEntries(items...)
	entries[0].Usage = &recall.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}
	e.mustAppend(key, entries...)
	scribble(items...)
	entries[0].Usage.InputTokens = 99
	entries[1].Data[0] = '['
	if _, err := recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Labels: []string{"a", "b"}, SetLabels: true}); err != nil {
		t.Fatalf("SetLabels: %v", err)
	}
	md := map[string]string{"k": "v", "k2": "v2"}
	if _, err := recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{ClearMetadata: true, Metadata: pointersOf(md)}); err != nil {
		t.Fatalf("SetMetadata: %v", err)
	}
	md["k"] = "changed by the caller"
	if m := e.mustStat(key); m.Metadata["k"] != "v" || len(m.Metadata) != 2 {
		t.Errorf("Metadata = %v after the caller changed its map", m.Metadata)
	}
	if _, err := recall.NewSession(e.s, key).Fork(e.ctx, 0, fork); err != nil {
		t.Fatalf("Fork: %v", err)
	}
	e.wantView(key, orig)
	if m := e.mustStat(key); m.Usage != (recall.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}) {
		t.Errorf("Usage = %v after the caller changed its entry", m.Usage)
	}
}

// copyReads returns every read of key and fork that testCopies makes and
// messes with: GetItems, Items, Load, Entries, Stat, List.
func copyReads(e *env, key, fork recall.Key) []copyRead {
	return []copyRead{
		{"GetItems", func() {
			got, err := recall.NewSession(e.s, key).GetItems(e.ctx, 0)
			if err == nil {
				scribble(got...)
				if len(got) > 0 {
					got[0] = recall.Item(`{"replaced":true}`)
				}
			}
		}},
		{"Items", func() {
			live, _, err := e.s.Items(e.ctx, key, 2)
			if err == nil {
				for i := range live {
					scribble(live[i].Item)
					live[i].Ref.Seq = 1000
				}
			}
		}},
		{"Load", func() {
			m, es, err := e.s.Load(e.ctx, key)
			if err == nil {
				messMeta(&m)
				messEntries(es)
			}
		}},
		{"Entries", func() {
			es, err := e.s.Entries(e.ctx, key, 0, 0)
			if err == nil {
				messEntries(es)
			}
		}},
		{"Stat", func() {
			m, err := e.s.Stat(e.ctx, key)
			if err == nil {
				messMeta(&m)
			}
			m, err = e.s.Stat(e.ctx, fork)
			if err == nil {
				messMeta(&m)
			}
		}},
		{"List", func() {
			p, err := e.s.List(e.ctx, "p", recall.ListOptions{})
			if err == nil {
				for i := range p.Sessions {
					messMeta(&p.Sessions[i])
				}
			}
		}},
	}
}

// checkOutputCopies changes everything each read of copyReads returns,
// then reads again: key's metadata, log and view (orig), and fork's
// metadata, stay as they were.
func checkOutputCopies(e *env, key, fork recall.Key, orig []recall.Item) {
	t := e.t
	wantMeta, wantEntries := e.mustLoad(key)
	forkMeta := e.mustStat(fork)
	for _, r := range copyReads(e, key, fork) {
		r.mess()
		gotMeta, gotEntries := e.mustLoad(key)
		if d := MetaDiff(gotMeta, wantMeta, true); d != "" {
			t.Errorf("changing what %s returned changed the store's metadata: %s", r.name, d)
		}
		wantLog(t, "log after changing what "+r.name+" returned", gotEntries, wantEntries, true)
		if d := MetaDiff(e.mustStat(fork), forkMeta, true); d != "" {
			t.Errorf("changing what %s returned changed the fork's metadata: %s", r.name, d)
		}
		e.wantView(key, orig)
	}
}

// checkPopCopy checks that Pop hands over an item of key, whose items are
// orig: changing it must not change the log, where the item entry stays.
func checkPopCopy(e *env, key recall.Key, orig []recall.Item) {
	t := e.t
	popped, err := e.s.Pop(e.ctx, key)
	if err != nil || popped == nil {
		t.Fatalf("Pop = %s, %v", clip(popped), err)
	}
	scribble(popped)
	_, es := e.mustLoad(key)
	if !bytes.Equal(es[2].Data, orig[2]) {
		t.Errorf("changing the popped item changed its log entry to %s", clip(recall.Item(es[2].Data)))
	}
	e.wantView(key, orig[:2])
}

// checkForkMetaCopy forks fork into p/fork2 and checks that the metadata
// Fork returns is a copy too.
func checkForkMetaCopy(e *env, fork recall.Key) {
	t := e.t
	fork2 := recall.Key{Project: "p", Session: "fork2"}
	fm, err := recall.NewSession(e.s, fork).Fork(e.ctx, 0, fork2)
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	want := fm.Clone()
	messMeta(&fm)
	if d := MetaDiff(e.mustStat(fork2), want, true); d != "" {
		t.Errorf("changing the Meta Fork returned changed the store: %s", d)
	}
}

// scribble overwrites every byte of the items.
func scribble(items ...recall.Item) {
	for _, it := range items {
		for i := range it {
			it[i] = 'X'
		}
	}
}

func messMeta(m *recall.Meta) {
	for i := range m.Labels {
		m.Labels[i] = "changed"
	}
	if m.ForkedFrom != nil {
		m.ForkedFrom.Seq = 999
		m.ForkedFrom.Key.Session = "changed"
	}
	for k := range m.Metadata {
		m.Metadata[k] = "changed"
	}
	if m.Metadata != nil {
		m.Metadata["added"] = "by the caller"
	}
	m.ItemCount = -1
}

func messEntries(es []recall.Entry) {
	for i := range es {
		for j := range es[i].Data {
			es[i].Data[j] = 'X'
		}
		if es[i].Usage != nil {
			es[i].Usage.TotalTokens = -1
		}
	}
	if len(es) > 0 {
		es[0].Seq = 1000
	}
}

// testMissing checks reads of a session that does not exist.
func testMissing(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "missing"}
	e.mustAdd(recall.Key{Project: "p", Session: "other"}, msg("x"))
	if live, last, err := e.s.Items(e.ctx, key, 0); len(live) != 0 || last != 0 || err != nil {
		t.Errorf("Items of a missing session = %v, LastSeq %d, %v; want nothing, 0, nil", live, last, err)
	}
	if it, err := e.s.Pop(e.ctx, key); it != nil || err != nil {
		t.Errorf("Pop of a missing session = %s, %v; want nil, nil", clip(it), err)
	}
	_, err := e.s.Stat(e.ctx, key)
	wantErr(t, "Stat of a missing session", err, recall.ErrNotFound)
	_, _, err = e.s.Load(e.ctx, key)
	wantErr(t, "Load of a missing session", err, recall.ErrNotFound)
	_, err = e.s.Entries(e.ctx, key, 0, 0)
	wantErr(t, "Entries of a missing session", err, recall.ErrNotFound)
	for _, set := range []struct {
		name string
		fn   func() error
	}{
		{"SetTitle", func() error { _, err := recall.NewSession(e.s, key).SetTitle(e.ctx, "t", recall.TitleUser); return err }},
		{"SetArchived", e.changeMeta(key, recall.MetaChange{Archived: new(true)})},
		{"SetPinned", e.changeMeta(key, recall.MetaChange{Pinned: new(true)})},
		{"SetLabels", e.changeMeta(key, recall.MetaChange{Labels: []string{"l"}, SetLabels: true})},
		{"SetMetadata", e.changeMeta(key, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"k": new("v")}})},
		{"MergeMetadata", func() error {
			v := "v"
			_, err := recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Metadata: map[string]*string{"k": &v}})
			return err
		}},
		{"RemoveItem", func() error {
			_, err := recall.NewSession(e.s, key).RemoveItem(e.ctx, recall.ItemRef{Seq: 1})
			return err
		}},
		{"Append guarded by IfExists", func() error {
			_, err := e.s.Append(e.ctx, key, recall.IfExists(), msg("x").Entry())
			return err
		}},
	} {
		wantErr(t, set.name+" of a missing session", set.fn(), recall.ErrNotFound)
	}
	if _, err := e.s.Stat(e.ctx, key); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("reading a missing session created it: Stat = %v", err)
	}
	p, err := e.s.List(e.ctx, "", recall.ListOptions{Limit: -1, IncludeArchived: true})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if keys := keysOf(p.Sessions); !slices.Equal(keys, []recall.Key{{Project: "p", Session: "other"}}) {
		t.Errorf("List after reads of a missing session = %v, want only p/other", keys)
	}
}
