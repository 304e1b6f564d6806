package storetest

import (
	"errors"
	"slices"
	"testing"
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
	if _, err := recall.NewSession(e.s, subA).SetTitle(e.ctx, "researcher", recall.TitleAuto); err != nil {
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
	if _, err := recall.NewSession(e.s, key).SetTitle(e.ctx, "old", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(e.s, key).ChangeMeta(e.ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
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

// cleanupSessions are the sessions testCleanup writes, by how Cleanup
// must treat them.
type cleanupSessions struct {
	oldA, oldB, oldQ recall.Key // old: gone at the cutoff (b archived, q in project q)
	oldPinned        recall.Key // old but pinned: kept
	atCutoff         recall.Key // updated at the cutoff: kept
	revived, recent  recall.Key // updated now: kept
	oldSub           recall.Key // a recent record of oldA: goes with it
	oldTrashed       recall.Key // old and in the trash: purged, else left there
}

// testCleanup checks Cleanup with Purge: sessions not updated since the
// cutoff go, pinned ones stay, a dry run removes nothing, the report
// names what went.
func testCleanup(e *env) { checkCleanup(e, true) }

// testCleanupTrash checks Cleanup: as with Purge, but the sessions go to
// the trash, with their subagent records, and stay there to restore.
func testCleanupTrash(e *env) { checkCleanup(e, false) }

func checkCleanup(e *env, purge bool) {
	t := e.t
	cs := importCleanupSessions(e)
	cutoff := oldTime(60)

	before := sortedListedKeys(e)
	metas := map[recall.Key]recall.Meta{}
	for _, k := range append(before, cs.oldTrashed) {
		metas[k] = e.mustStat(k)
	}
	wantGone := []recall.Key{cs.oldA, cs.oldB, cs.oldQ}
	gonePQ := []recall.Key{cs.oldA, cs.oldB} // of project p
	if purge {
		wantGone = append(wantGone, cs.oldTrashed)
		gonePQ = append(gonePQ, cs.oldTrashed)
	}
	slices.SortFunc(wantGone, compareKeys)
	slices.SortFunc(gonePQ, compareKeys)

	rep, err := recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{OlderThan: cutoff, DryRun: true, Purge: purge})
	if err != nil {
		t.Fatalf("dry-run Cleanup: %v", err)
	}
	checkCleanupReport(t, "dry-run Cleanup", rep, wantGone, 1, metas)
	if got := sortedListedKeys(e); !slices.Equal(got, before) {
		t.Errorf("a dry run removed sessions: %v, was %v", got, before)
	}
	e.wantView(cs.oldSub, []recall.Item{msg("recent record of an old session")})

	rep, err = recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{Purge: purge})
	if err != nil || len(rep.Removed) != 0 {
		t.Errorf("Cleanup with a zero cutoff removed %v, %v; want nothing", keysOf(rep.Removed), err)
	}

	rep, err = recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{OlderThan: cutoff, Project: "q", Purge: purge})
	if err != nil {
		t.Fatalf("Cleanup of project q: %v", err)
	}
	checkCleanupReport(t, "Cleanup of project q", rep, []recall.Key{cs.oldQ}, 0, metas)

	rep, err = recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{OlderThan: cutoff, Purge: purge})
	if err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	checkCleanupReport(t, "Cleanup", rep, gonePQ, 1, metas)
	want := []recall.Key{cs.atCutoff, cs.oldPinned, cs.recent, cs.revived}
	slices.SortFunc(want, compareKeys)
	if got := sortedListedKeys(e); !slices.Equal(got, want) {
		t.Errorf("after Cleanup the store holds %v, want %v", got, want)
	}
	for _, k := range []recall.Key{cs.oldA, cs.oldB, cs.oldQ, cs.oldSub, cs.oldTrashed} {
		m, err := e.s.Stat(e.ctx, k)
		switch {
		case purge && !errors.Is(err, recall.ErrNotFound):
			t.Errorf("Stat(%s) after Cleanup: %v, want ErrNotFound", k, err)
		case !purge && err != nil:
			t.Errorf("Stat(%s) after Cleanup to the trash: %v", k, err)
		case !purge && k.IsMain() && m.Trashed.IsZero():
			t.Errorf("Stat(%s) after Cleanup to the trash: not in the trash", k)
		}
	}
	if !purge {
		trash := keysOf(listAll(t, e.ctx, e.s, "", recall.ListOptions{Limit: -1, Trashed: true}))
		slices.SortFunc(trash, compareKeys)
		if want := sortedKeys(append(wantGone, cs.oldTrashed)...); !slices.Equal(trash, want) {
			t.Errorf("after Cleanup the trash holds %v, want %v", trash, want)
		}
		e.wantView(cs.oldSub, []recall.Item{msg("recent record of an old session")})
	}

	// A cutoff in the future takes every unpinned session.
	rep, err = recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{OlderThan: time.Now().Add(2 * time.Hour), Purge: purge})
	if err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	checkCleanupReport(t, "Cleanup of everything", rep, []recall.Key{cs.atCutoff, cs.recent, cs.revived}, 1, metas)
	if got := sortedListedKeys(e); !slices.Equal(got, []recall.Key{cs.oldPinned}) {
		t.Errorf("after removing everything unpinned the store holds %v", got)
	}
}

// importCleanupSessions writes the sessions testCleanup cleans up: old
// ones imported at minutes before the cutoff (minute 60), one at the
// cutoff, an old one updated now, a recent one, and a recent subagent
// record of an old session.
func importCleanupSessions(e *env) cleanupSessions {
	yes := true
	old := func(project, id string, minute int, extra ...recall.Entry) recall.Key {
		k := recall.Key{Project: project, Session: id}
		entries := append([]recall.Entry{msg("%s", id).Entry()}, extra...)
		if _, err := e.s.Import(e.ctx, k, imported(1, minute, entries...)...); err != nil {
			e.t.Fatalf("Import %s: %v", k, err)
		}
		return k
	}
	var cs cleanupSessions
	cs.oldA = old("p", "old-a", 0)
	cs.oldB = old("p", "old-b", 10, recall.NewEntry(recall.KindMeta, recall.MetaChange{Archived: &yes}))
	cs.oldPinned = old("p", "old-pinned", 0, recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes}))
	cs.oldQ = old("q", "old-q", 5)
	cs.atCutoff = old("p", "at-cutoff", 60)
	cs.revived = old("p", "revived", 0)
	e.mustAdd(cs.revived, msg("recent")) // an old session updated now is recent
	cs.recent = recall.Key{Project: "p", Session: "recent"}
	e.mustAdd(cs.recent, msg("recent"))
	cs.oldTrashed = old("p", "old-trashed", 0, recall.NewEntry(recall.KindMeta, recall.MetaChange{Trashed: &yes}))
	cs.oldSub = recall.Key{Project: "p", Session: "old-a", Subpath: "subagents/x"}
	e.mustAdd(cs.oldSub, msg("recent record of an old session"))
	return cs
}

// sortedListedKeys returns the keys of every session List shows, of every
// project, archived ones included, sorted.
func sortedListedKeys(e *env) []recall.Key {
	e.t.Helper()
	keys := keysOf(listAll(e.t, e.ctx, e.s, "", recall.ListOptions{Limit: -1, IncludeArchived: true}))
	slices.SortFunc(keys, compareKeys)
	return keys
}

// checkCleanupReport checks the report of a Cleanup, named by what: it
// removed the sessions gone (sorted), reported as metas held them before,
// and kept kept pinned ones.
func checkCleanupReport(t *testing.T, what string, rep recall.CleanupReport, gone []recall.Key, kept int, metas map[recall.Key]recall.Meta) {
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
