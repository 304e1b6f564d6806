package storetest

import (
	"errors"
	"slices"
	"time"

	"github.com/recallkit/recall"
)

// testSubagents checks subagent records: kept apart from their session,
// left out of List, listed by parent, removed with the parent.
func testSubagents(e *env) {
	t := e.t
	parent := recall.Key{Project: "p", Session: "s"}
	other := recall.Key{Project: "p", Session: "t"}
	subA := recall.Key{Project: "p", Session: "s", Subpath: "subagents/a"}
	subB := recall.Key{Project: "p", Session: "s", Subpath: "subagents/b"}
	deep := recall.Key{Project: "p", Session: "s", Subpath: "subagents/a/tools/c"}
	otherSub := recall.Key{Project: "p", Session: "t", Subpath: "subagents/a"}

	e.mustAdd(parent, msg("parent"))
	e.mustAdd(other, msg("other"))
	e.mustAdd(subA, msg("a1"), msg("a2"))
	e.mustAdd(subB, msg("b1"))
	e.mustAdd(deep, msg("c1"))
	e.mustAdd(otherSub, msg("other-a"))
	if _, err := recall.SetTitle(e.ctx, e.s, subA, "researcher", recall.TitleAuto); err != nil {
		t.Fatal(err)
	}

	e.wantView(parent, []recall.Item{msg("parent")})
	e.wantView(subA, []recall.Item{msg("a1"), msg("a2")})
	e.wantView(deep, []recall.Item{msg("c1")})
	if m := e.mustStat(subA); m.Key != subA || m.Title != "researcher" || m.ItemCount != 2 {
		t.Errorf("Stat(%s) = key %s title %q items %d", subA, m.Key, m.Title, m.ItemCount)
	}
	if m := e.mustStat(parent); m.ItemCount != 1 || m.LastSeq != 1 {
		t.Errorf("the subagent records changed the parent: %d items, last seq %d", m.ItemCount, m.LastSeq)
	}

	sorted := func(metas []recall.Meta) []recall.Key {
		keys := keysOf(metas)
		slices.SortFunc(keys, compareKeys)
		return keys
	}
	for _, project := range []string{"", "p"} {
		got := sorted(listAll(t, e.ctx, e.s, project, recall.ListOptions{Limit: -1, IncludeArchived: true}))
		if !slices.Equal(got, []recall.Key{parent, other}) {
			t.Errorf("List(%q) = %v, want only the main sessions", project, got)
		}
	}
	for _, limit := range []int{-1, 1} {
		got := listAll(t, e.ctx, e.s, "p", recall.ListOptions{Limit: limit, Parent: "s"})
		if keys := sorted(got); !slices.Equal(keys, []recall.Key{subA, deep, subB}) {
			t.Errorf("List(p, Parent s, limit %d) = %v, want the records of s", limit, keys)
		}
		wantListOrder(t, "List(Parent s)", got)
		for _, m := range got {
			if d := MetaDiff(m, e.mustStat(m.Key), true); d != "" {
				t.Errorf("List(Parent s): %s: %s", m.Key, d)
			}
		}
	}
	if got := listAll(t, e.ctx, e.s, "p", recall.ListOptions{Limit: -1, Parent: "none"}); len(got) != 0 {
		t.Errorf("List(Parent none) = %v, want nothing", keysOf(got))
	}
	_, err := e.s.List(e.ctx, "", recall.ListOptions{Parent: "s"})
	wantErr(t, "List of subagent records without a project", err, recall.ErrInvalidKey)
	if ps, err := recall.Projects(e.ctx, e.s); err != nil || len(ps) != 1 || ps[0].Sessions != 2 {
		t.Errorf("Projects = %+v, %v; want p with 2 sessions", ps, err)
	}

	// Removing one record leaves the rest; removing the parent takes all.
	if err := e.s.Remove(e.ctx, subB); err != nil {
		t.Errorf("Remove %s: %v", subB, err)
	}
	if _, err := e.s.Stat(e.ctx, subB); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("Stat of a removed record: %v", err)
	}
	e.wantView(subA, []recall.Item{msg("a1"), msg("a2")})
	e.wantView(parent, []recall.Item{msg("parent")})

	if err := e.s.Remove(e.ctx, parent); err != nil {
		t.Fatalf("Remove parent: %v", err)
	}
	for _, k := range []recall.Key{parent, subA, subB, deep} {
		if _, err := e.s.Stat(e.ctx, k); !errors.Is(err, recall.ErrNotFound) {
			t.Errorf("Stat(%s) after removing the parent: %v, want ErrNotFound", k, err)
		}
		if live, last, err := e.s.Items(e.ctx, k, 0); len(live) != 0 || last != 0 || err != nil {
			t.Errorf("Items(%s) after removing the parent = %d items, LastSeq %d, %v; want none, 0", k, len(live), last, err)
		}
	}
	if got := listAll(t, e.ctx, e.s, "p", recall.ListOptions{Limit: -1, Parent: "s"}); len(got) != 0 {
		t.Errorf("List(Parent s) after removing s = %v", keysOf(got))
	}
	e.wantView(otherSub, []recall.Item{msg("other-a")})
	e.wantView(other, []recall.Item{msg("other")})
}

// testRemove checks Remove: gone from every read, ErrNotFound the second
// time, and a new session under the same key starts over at seq 1.
func testRemove(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "s"}
	keep := recall.Key{Project: "p", Session: "keep"}
	e.mustAdd(key, msgs("m", 3)...)
	if _, err := recall.SetTitle(e.ctx, e.s, key, "old", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.SetPinned(e.ctx, e.s, key, true); err != nil {
		t.Fatal(err)
	}
	e.mustAdd(keep, msg("keep"))

	if err := e.s.Remove(e.ctx, key); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	wantErr(t, "second Remove", e.s.Remove(e.ctx, key), recall.ErrNotFound)
	wantErr(t, "Remove of a never-created session", e.s.Remove(e.ctx, recall.Key{Project: "p", Session: "never"}), recall.ErrNotFound)
	wantErr(t, "Remove in a missing project", e.s.Remove(e.ctx, recall.Key{Project: "nope", Session: "s"}), recall.ErrNotFound)
	wantErr(t, "Remove of a missing subagent record", e.s.Remove(e.ctx, recall.Key{Project: "p", Session: "keep", Subpath: "subagents/x"}), recall.ErrNotFound)

	_, err := e.s.Stat(e.ctx, key)
	wantErr(t, "Stat after Remove", err, recall.ErrNotFound)
	_, _, err = e.s.Load(e.ctx, key)
	wantErr(t, "Load after Remove", err, recall.ErrNotFound)
	_, err = e.s.Entries(e.ctx, key, 0, 0)
	wantErr(t, "Entries after Remove", err, recall.ErrNotFound)
	if live, last, err := e.s.Items(e.ctx, key, 0); len(live) != 0 || last != 0 || err != nil {
		t.Errorf("Items after Remove = %d items, LastSeq %d, %v; want none, 0", len(live), last, err)
	}
	if got := keysOf(listAll(t, e.ctx, e.s, "", recall.ListOptions{Limit: -1, IncludeArchived: true})); !slices.Equal(got, []recall.Key{keep}) {
		t.Errorf("List after Remove = %v, want [%s]", got, keep)
	}

	// The key is free again: a new session, nothing of the old one.
	if seq := e.mustAdd(key, msg("new")); seq != 1 {
		t.Errorf("first Append after Remove = seq %d, want 1", seq)
	}
	m := e.mustStat(key)
	if m.Title != "" || m.Pinned || m.LastSeq != 1 || m.ItemCount != 1 {
		t.Errorf("re-created session has title %q pinned %t last seq %d items %d; want a fresh session", m.Title, m.Pinned, m.LastSeq, m.ItemCount)
	}
	e.wantView(key, []recall.Item{msg("new")})
	e.wantView(keep, []recall.Item{msg("keep")})
}

// testCleanup checks Cleanup: sessions not updated since the cutoff go,
// pinned ones stay, a dry run removes nothing, the report names what went.
func testCleanup(e *env) {
	t := e.t
	yes := true
	old := func(project, id string, minute int, extra ...recall.Entry) recall.Key {
		k := recall.Key{Project: project, Session: id}
		entries := append([]recall.Entry{recall.ItemEntry(msg("%s", id))}, extra...)
		if _, err := e.s.Import(e.ctx, k, imported(1, minute, entries...)...); err != nil {
			t.Fatalf("Import %s: %v", k, err)
		}
		return k
	}
	oldA := old("p", "old-a", 0)
	oldB := old("p", "old-b", 10, recall.NewEntry(recall.KindMeta, recall.MetaChange{Archived: &yes}))
	oldPinned := old("p", "old-pinned", 0, recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes}))
	oldQ := old("q", "old-q", 5)
	atCutoff := old("p", "at-cutoff", 60)
	revived := old("p", "revived", 0)
	e.mustAdd(revived, msg("recent")) // an old session updated now is recent
	recent := recall.Key{Project: "p", Session: "recent"}
	e.mustAdd(recent, msg("recent"))
	oldSub := recall.Key{Project: "p", Session: "old-a", Subpath: "subagents/x"}
	e.mustAdd(oldSub, msg("recent record of an old session"))
	cutoff := oldTime(60)

	all := func() []recall.Key {
		t.Helper()
		keys := keysOf(listAll(t, e.ctx, e.s, "", recall.ListOptions{Limit: -1, IncludeArchived: true}))
		slices.SortFunc(keys, compareKeys)
		return keys
	}
	before := all()
	metas := map[recall.Key]recall.Meta{}
	for _, k := range before {
		metas[k] = e.mustStat(k)
	}
	wantGone := []recall.Key{oldA, oldB, oldQ}
	slices.SortFunc(wantGone, compareKeys)

	checkReport := func(what string, rep recall.CleanupReport, gone []recall.Key, kept int) {
		t.Helper()
		got := keysOf(rep.Removed)
		slices.SortFunc(got, compareKeys)
		if !slices.Equal(got, gone) {
			t.Errorf("%s removed %v, want %v", what, got, gone)
		}
		for _, m := range rep.Removed {
			if d := MetaDiff(m, metas[m.Key], true); d != "" {
				t.Errorf("%s: report of %s: %s", what, m.Key, d)
			}
		}
		if rep.Kept != kept {
			t.Errorf("%s kept %d pinned sessions, want %d", what, rep.Kept, kept)
		}
	}

	rep, err := recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{OlderThan: cutoff, DryRun: true})
	if err != nil {
		t.Fatalf("dry-run Cleanup: %v", err)
	}
	checkReport("dry-run Cleanup", rep, wantGone, 1)
	if got := all(); !slices.Equal(got, before) {
		t.Errorf("a dry run removed sessions: %v, was %v", got, before)
	}
	e.wantView(oldSub, []recall.Item{msg("recent record of an old session")})

	rep, err = recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{})
	if err != nil || len(rep.Removed) != 0 {
		t.Errorf("Cleanup with a zero cutoff removed %v, %v; want nothing", keysOf(rep.Removed), err)
	}

	rep, err = recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{OlderThan: cutoff, Project: "q"})
	if err != nil {
		t.Fatalf("Cleanup of project q: %v", err)
	}
	checkReport("Cleanup of project q", rep, []recall.Key{oldQ}, 0)

	rep, err = recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{OlderThan: cutoff})
	if err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	checkReport("Cleanup", rep, []recall.Key{oldA, oldB}, 1)
	want := []recall.Key{atCutoff, oldPinned, recent, revived}
	slices.SortFunc(want, compareKeys)
	if got := all(); !slices.Equal(got, want) {
		t.Errorf("after Cleanup the store holds %v, want %v", got, want)
	}
	for _, k := range []recall.Key{oldA, oldB, oldQ, oldSub} {
		if _, err := e.s.Stat(e.ctx, k); !errors.Is(err, recall.ErrNotFound) {
			t.Errorf("Stat(%s) after Cleanup: %v, want ErrNotFound", k, err)
		}
	}

	// A cutoff in the future takes every unpinned session.
	rep, err = recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{OlderThan: time.Now().Add(2 * time.Hour)})
	if err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	checkReport("Cleanup of everything", rep, []recall.Key{atCutoff, recent, revived}, 1)
	if got := all(); !slices.Equal(got, []recall.Key{oldPinned}) {
		t.Errorf("after removing everything unpinned the store holds %v", got)
	}
}
