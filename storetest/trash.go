package storetest

import (
	"errors"
	"slices"
	"time"

	"github.com/recallkit/recall"
)

// testTrash checks StoreSession.Trash and Restore. A session in the
// trash is in no List (of its project or all, archived, pinned) and no
// Search, and is listed by ListOptions.Trashed; Stat still reads it,
// with Meta.Trashed set. Restored, it is what it was, in this exact
// sense: Load returns the same Meta but LastSeq, which has moved by
// two, and the same entries (seqs, kinds, times, payload bytes), followed
// by exactly two meta entries, the trash and the restore; Items returns
// the same items with the same refs; its subagent records Load as before.
func testTrash(e *env) {
	t := e.t
	a := recall.Key{Project: "p", Session: "a"}
	sub := recall.Key{Project: "p", Session: "a", Subpath: "subagents/x"}
	b := recall.Key{Project: "p", Session: "b"}
	c := recall.Key{Project: "q", Session: "c"}
	yes := true
	_, err := recall.NewSession(e.s, a).Create(e.ctx, recall.CreateOptions{Title: "walrus talk",
		Metadata: map[string]string{"k": "v"}, Items: []recall.Item{userMsg("walrus one"), userMsg("walrus two")}})
	e.must(err)
	e.mustAppend(a, recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes, Labels: []string{"red"}}))
	e.mustAdd(sub, userMsg("walrus in a record"))
	e.mustAdd(b, userMsg("walrus b"))
	e.mustAdd(c, userMsg("walrus c"))
	_, err = recall.NewSession(e.s, c).ChangeMeta(e.ctx, recall.MetaChange{Archived: &yes})
	e.must(err)

	beforeMeta, beforeLog := e.mustLoad(a)
	beforeItems := e.mustItems(a, 0)
	subMeta, subLog := e.mustLoad(sub)

	checkTrashRefusals(e, a, b, sub, beforeMeta.LastSeq)

	start := time.Now()
	m, err := recall.NewSession(e.s, a).Trash(e.ctx)
	if err != nil {
		t.Fatalf("Trash(%s): %v", a, err)
	}
	if m.Trashed.IsZero() || m.Trashed.Sub(start).Abs() > time.Hour {
		t.Errorf("Trash returned Trashed = %v, want about %v", m.Trashed, start)
	}
	if _, err := recall.NewSession(e.s, a).Trash(e.ctx); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("Trash of a session in the trash: %v, want ErrNotFound", err)
	}
	if got := e.mustStat(a); !got.Trashed.Equal(m.Trashed) || got.LastSeq != beforeMeta.LastSeq+1 {
		t.Errorf("Stat after Trash: Trashed %v LastSeq %d, want %v and %d", got.Trashed, got.LastSeq, m.Trashed, beforeMeta.LastSeq+1)
	}
	_, err = recall.NewSession(e.s, c).Trash(e.ctx)
	e.must(err)

	checkTrashListing(e, a, b, c, sub)
	h := func(k recall.Key, seq int64) hitID { return hitID{k, ref(seq), recall.RoleUser} }

	// Restored: as it was.
	m, err = recall.NewSession(e.s, a).Restore(e.ctx)
	if err != nil {
		t.Fatalf("Restore(%s): %v", a, err)
	}
	if !m.Trashed.IsZero() {
		t.Errorf("Restore returned Trashed = %v", m.Trashed)
	}
	afterMeta, afterLog := e.mustLoad(a)
	want := beforeMeta.Clone()
	want.LastSeq += 2
	if d := MetaDiff(afterMeta, want, true); d != "" {
		t.Errorf("Load after Trash and Restore: %s", d)
	}
	if len(afterLog) != len(beforeLog)+2 {
		t.Fatalf("the log holds %d entries after Trash and Restore, want %d", len(afterLog), len(beforeLog)+2)
	}
	for i, be := range beforeLog {
		if d := EntryDiff(afterLog[i], be, true); d != "" {
			t.Errorf("entry %d after Trash and Restore: %s", i, d)
		}
	}
	for i, on := range []bool{true, false} {
		e := afterLog[len(beforeLog)+i]
		if d := EntryDiff(e, recall.Entry{Seq: beforeMeta.LastSeq + int64(i) + 1, Kind: recall.KindMeta,
			Data: recall.NewEntry(recall.KindMeta, recall.MetaChange{Trashed: &on}).Data}, false); d != "" {
			t.Errorf("entry %d of Trash and Restore: %s", i, d)
		}
	}
	if got := e.mustItems(a, 0); !slices.EqualFunc(got, beforeItems, func(x, y recall.LiveItem) bool { return x.Ref == y.Ref && string(x.Item) == string(y.Item) }) {
		t.Errorf("Items after Trash and Restore = %v, want %v", got, beforeItems)
	}
	gotSub, gotSubLog := e.mustLoad(sub)
	if d := MetaDiff(gotSub, subMeta, true); d != "" || !slices.EqualFunc(gotSubLog, subLog, func(x, y recall.Entry) bool { return EntryDiff(x, y, true) == "" }) {
		t.Errorf("the subagent record after Trash and Restore of its session: %s (or its log differs)", d)
	}
	if got := e.listed("", recall.ListOptions{Pinned: true}); !slices.Equal(got, []recall.Key{a}) {
		t.Errorf("pinned List after Restore = %v, want [%s]", got, a)
	}
	if got := e.listed("", recall.ListOptions{Trashed: true}); !slices.Equal(got, []recall.Key{c}) {
		t.Errorf("List of the trash after Restore = %v, want [%s]", got, c)
	}
	e.wantSearch(recall.SearchOptions{Query: "walrus"}, h(b, 1), h(a, 5), h(a, 4), hitID{a, recall.ItemRef{}, recall.RoleTitle})

	// Remove deletes a session in the trash, as any other.
	e.must(e.s.Remove(e.ctx, c))
	if got := e.listed("", recall.ListOptions{Trashed: true}); len(got) != 0 {
		t.Errorf("List of the trash after Remove = %v, want none", got)
	}
}

// listed lists project with opts, every page, and returns the keys.
func (e *env) listed(project string, opts recall.ListOptions) []recall.Key {
	opts.Limit = -1
	return keysOf(listAll(e.t, e.ctx, e.s, project, opts))
}

// checkTrashRefusals checks the Trash and Restore calls that are refused
// and write nothing: a, whose LastSeq is last, and b are not in the trash,
// sub is a subagent record.
func checkTrashRefusals(e *env, a, b, sub recall.Key, last int64) {
	t := e.t
	for _, k := range []recall.Key{a, b} {
		if _, err := recall.NewSession(e.s, k).Restore(e.ctx); !errors.Is(err, recall.ErrNotFound) {
			t.Errorf("Restore(%s) of a session not in the trash: %v, want ErrNotFound", k, err)
		}
	}
	if _, err := recall.NewSession(e.s, sub).Trash(e.ctx); !errors.Is(err, recall.ErrInvalidKey) {
		t.Errorf("Trash(%s) of a subagent record: %v, want ErrInvalidKey", sub, err)
	}
	if _, err := recall.NewSession(e.s, recall.Key{Project: "p", Session: "missing"}).Trash(e.ctx); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("Trash of a missing session: %v, want ErrNotFound", err)
	}
	if m := e.mustStat(a); m.LastSeq != last {
		t.Fatalf("a refused Trash or Restore wrote: LastSeq %d, was %d", m.LastSeq, last)
	}

}

// checkTrashListing checks what List and Search show while a (pinned,
// with the record sub) and c (archived) are in the trash and b is not.
func checkTrashListing(e *env, a, b, c, sub recall.Key) {
	t := e.t
	for _, project := range []string{"", "p", "q"} {
		for _, opts := range []recall.ListOptions{{}, {IncludeArchived: true}, {Pinned: true}, {IncludeArchived: true, Pinned: true}} {
			if got := e.listed(project, opts); slices.Contains(got, a) || slices.Contains(got, c) {
				t.Errorf("List(%q, %+v) = %v: holds a session in the trash", project, opts, got)
			}
		}
	}
	if got := e.listed("", recall.ListOptions{Trashed: true}); !slices.Equal(got, []recall.Key{c, a}) {
		t.Errorf("List of the trash = %v, want [%s %s] (newest updated first, archived included)", got, c, a)
	}
	for _, limit := range []int{1, 2} {
		got := keysOf(listAll(t, e.ctx, e.s, "", recall.ListOptions{Limit: limit, Trashed: true}))
		if !slices.Equal(got, []recall.Key{c, a}) {
			t.Errorf("List of the trash by pages of %d = %v", limit, got)
		}
	}
	if got := e.listed("p", recall.ListOptions{Trashed: true, Pinned: true}); !slices.Equal(got, []recall.Key{a}) {
		t.Errorf("List of project p's pinned trash = %v, want [%s]", got, a)
	}
	if got := e.listed("p", recall.ListOptions{Trashed: true, Parent: "a"}); len(got) != 0 {
		t.Errorf("List of the trash of a's records = %v, want none", got)
	}
	if got := e.listed("p", recall.ListOptions{Parent: "a"}); !slices.Equal(got, []recall.Key{sub}) {
		t.Errorf("List of a's records while a is in the trash = %v, want [%s]", got, sub)
	}
	h := func(k recall.Key, seq int64) hitID { return hitID{k, ref(seq), recall.RoleUser} }
	e.wantSearch(recall.SearchOptions{Query: "walrus"}, h(b, 1))
	e.wantSearch(recall.SearchOptions{Query: "walrus", IncludeArchived: true}, h(b, 1))
}

// testEmptyTrash checks EmptyTrash, with times the test controls: the
// sessions imported with their trash entry at old times. It deletes, for
// good and with their records, the sessions trashed before the cutoff,
// of one project or all, but pinned ones; a dry run deletes nothing;
// sessions not in the trash are never touched, however old.
func testEmptyTrash(e *env) {
	t := e.t
	yes := true
	trashed := func(project, id string, minute int, extra ...recall.Entry) recall.Key {
		k := recall.Key{Project: project, Session: id}
		entries := append([]recall.Entry{msg("%s", id).Entry()}, extra...)
		entries = append(entries, recall.NewEntry(recall.KindMeta, recall.MetaChange{Trashed: &yes}))
		log := imported(1, 0, entries...)
		log[len(log)-1].Time = oldTime(minute)
		if _, err := e.s.Import(e.ctx, k, log...); err != nil {
			t.Fatalf("Import %s: %v", k, err)
		}
		return k
	}
	early := trashed("p", "early", 10)
	earlyQ := trashed("q", "early-q", 10)
	pinned := trashed("p", "pinned", 10, recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes}))
	late := trashed("p", "late", 30)
	record := recall.Key{Project: "p", Session: "early", Subpath: "subagents/x"}
	e.mustAdd(record, msg("record"))
	old := recall.Key{Project: "p", Session: "old"}
	if _, err := e.s.Import(e.ctx, old, imported(1, 0, msg("old").Entry())...); err != nil {
		t.Fatal(err)
	}
	if m := e.mustStat(early); !m.Trashed.Equal(oldTime(10)) {
		t.Fatalf("Stat(%s).Trashed = %v, want the trash entry's time %v", early, m.Trashed, oldTime(10))
	}
	metas := map[recall.Key]recall.Meta{}
	for _, k := range []recall.Key{early, earlyQ, pinned, late} {
		metas[k] = e.mustStat(k)
	}
	trash := func() []recall.Key {
		keys := keysOf(listAll(t, e.ctx, e.s, "", recall.ListOptions{Limit: -1, Trashed: true}))
		slices.SortFunc(keys, compareKeys)
		return keys
	}
	all := trash()

	rep, err := recall.EmptyTrash(e.ctx, e.s, recall.CleanupOptions{})
	if err != nil || len(rep.Removed) != 0 {
		t.Errorf("EmptyTrash with a zero cutoff removed %v, %v; want nothing", keysOf(rep.Removed), err)
	}
	rep, err = recall.EmptyTrash(e.ctx, e.s, recall.CleanupOptions{OlderThan: oldTime(20), DryRun: true})
	e.must(err)
	checkCleanupReport(t, "dry-run EmptyTrash", rep, sortedKeys(early, earlyQ), 1, metas)
	if got := trash(); !slices.Equal(got, all) {
		t.Errorf("a dry run emptied the trash: %v, was %v", got, all)
	}
	rep, err = recall.EmptyTrash(e.ctx, e.s, recall.CleanupOptions{OlderThan: oldTime(10)})
	e.must(err)
	checkCleanupReport(t, "EmptyTrash at the trash time", rep, nil, 0, metas)

	rep, err = recall.EmptyTrash(e.ctx, e.s, recall.CleanupOptions{OlderThan: oldTime(20), Project: "q"})
	e.must(err)
	checkCleanupReport(t, "EmptyTrash of project q", rep, []recall.Key{earlyQ}, 0, metas)
	rep, err = recall.EmptyTrash(e.ctx, e.s, recall.CleanupOptions{OlderThan: oldTime(20)})
	e.must(err)
	checkCleanupReport(t, "EmptyTrash", rep, []recall.Key{early}, 1, metas)
	for _, k := range []recall.Key{early, earlyQ, record} {
		if _, err := e.s.Stat(e.ctx, k); !errors.Is(err, recall.ErrNotFound) {
			t.Errorf("Stat(%s) after EmptyTrash: %v, want ErrNotFound", k, err)
		}
	}
	if got := trash(); !slices.Equal(got, sortedKeys(late, pinned)) {
		t.Errorf("the trash after EmptyTrash holds %v, want %v", got, sortedKeys(late, pinned))
	}
	rep, err = recall.EmptyTrash(e.ctx, e.s, recall.CleanupOptions{OlderThan: time.Now().Add(time.Hour)})
	e.must(err)
	checkCleanupReport(t, "EmptyTrash of everything", rep, []recall.Key{late}, 1, metas)
	if got := sortedListedKeys(e); !slices.Equal(got, []recall.Key{old}) {
		t.Errorf("after emptying the trash List holds %v, want [%s]", got, old)
	}
}

func sortedKeys(keys ...recall.Key) []recall.Key {
	keys = slices.Clone(keys)
	slices.SortFunc(keys, compareKeys)
	return keys
}
