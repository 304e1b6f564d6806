package storetest

import (
	"fmt"
	"slices"

	"github.com/recallkit/recall"
)

// updateChange is one change testUpdated makes to a session, named for
// its failure messages.
type updateChange struct {
	name string
	fn   func(k recall.Key) error
}

// testUpdated checks what moves Meta.Updated: conversation activity
// (items, Pop, RemoveItem, Clear, compaction, fork) does; title and meta
// changes (SetTitle, and ChangeMeta's archive, pin, labels and metadata)
// do not, so they move neither the List order nor
// Cleanup's age. Every session starts old, imported at a time the test
// chose.
func testUpdated(e *env) {
	quiet, active := quietChanges(e), activeChanges(e)
	quietKeys := importOldSessions(e, "quiet", 10, quiet)
	activeKeys := importOldSessions(e, "active", 30, active)
	orderBefore := updatedListOrder(e)

	checkQuietChanges(e, quiet, quietKeys, orderBefore)
	moved := checkActiveChanges(e, active, activeKeys)
	moved = checkForkUpdated(e, quietKeys["SetTitle(user)"], moved)
	rest := slices.DeleteFunc(slices.Clone(orderBefore), func(k recall.Key) bool { return slices.Contains(moved, k) })
	want := append(slices.Clone(moved), rest...)
	if got := updatedListOrder(e); !slices.Equal(got, want) {
		e.t.Errorf("after activity, List order\n got %v\nwant %v", got, want)
	}
	checkCleanupAge(e, quiet, quietKeys, moved)
	checkUpdatedFromFirstEntry(e)
}

// quietChanges returns the title and meta changes, none of which may move
// a session's Updated.
func quietChanges(e *env) []updateChange {
	md := map[string]string{"k": "v"}
	v := "v2"
	return []updateChange{
		{"SetTitle(user)", func(k recall.Key) error {
			_, err := recall.NewSession(e.s, k).SetTitle(e.ctx, "t", recall.TitleUser)
			return err
		}},
		{"SetTitle(auto)", func(k recall.Key) error {
			_, err := recall.NewSession(e.s, k).SetTitle(e.ctx, "t", recall.TitleAuto)
			return err
		}},
		{"SetArchived", func(k recall.Key) error {
			_, err := recall.NewSession(e.s, k).ChangeMeta(e.ctx, recall.MetaChange{Archived: new(true)})
			return err
		}},
		{"SetPinned then unpinned", func(k recall.Key) error {
			if _, err := recall.NewSession(e.s, k).ChangeMeta(e.ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
				return err
			}
			_, err := recall.NewSession(e.s, k).ChangeMeta(e.ctx, recall.MetaChange{Pinned: new(false)})
			return err
		}},
		{"SetLabels", func(k recall.Key) error {
			_, err := recall.NewSession(e.s, k).ChangeMeta(e.ctx, recall.MetaChange{Labels: []string{"a", "b"}, SetLabels: true})
			return err
		}},
		{"SetMetadata", func(k recall.Key) error {
			_, err := recall.NewSession(e.s, k).ChangeMeta(e.ctx, recall.MetaChange{ClearMetadata: true, Metadata: pointersOf(md)})
			return err
		}},
		{"MergeMetadata", func(k recall.Key) error {
			_, err := recall.NewSession(e.s, k).ChangeMeta(e.ctx, recall.MetaChange{Metadata: map[string]*string{"k": &v}})
			return err
		}},
	}
}

// activeChanges returns the conversation activity, each of which must
// move a session's Updated to now.
func activeChanges(e *env) []updateChange {
	return []updateChange{
		{"an append", func(k recall.Key) error {
			_, err := e.s.Append(e.ctx, k, recall.Guard{}, msg("new").Entry())
			return err
		}},
		{"Pop", func(k recall.Key) error { _, err := e.s.Pop(e.ctx, k); return err }},
		{"RemoveItem", func(k recall.Key) error {
			_, err := recall.NewSession(e.s, k).RemoveItem(e.ctx, recall.ItemRef{Seq: 1})
			return err
		}},
		{"Clear", func(k recall.Key) error { return recall.NewSession(e.s, k).Clear(e.ctx) }},
		{"a compaction", func(k recall.Key) error {
			m, err := e.s.Stat(e.ctx, k)
			if err != nil {
				return err
			}
			_, err = e.s.Append(e.ctx, k, recall.IfLastSeq(m.LastSeq), compaction(m.LastSeq, 2, msg("summary")))
			return err
		}},
	}
}

// importOldSessions imports a session in project "p" for each change,
// named prefix-i and dated at its own old minute (firstMinute+i), a few
// entries long so that every change applies. It returns the keys by the
// change's name.
func importOldSessions(e *env, prefix string, firstMinute int, changes []updateChange) map[string]recall.Key {
	keys := map[string]recall.Key{}
	for i, c := range changes {
		k := recall.Key{Project: "p", Session: fmt.Sprintf("%s-%d", prefix, i)}
		if _, err := e.s.Import(e.ctx, k, imported(1, firstMinute+i, msg("a").Entry(), msg("b").Entry())...); err != nil {
			e.t.Fatalf("Import %s: %v", k, err)
		}
		keys[c.name] = k
	}
	return keys
}

// updatedListOrder returns the keys of project "p" in List order,
// archived sessions included.
func updatedListOrder(e *env) []recall.Key {
	return keysOf(listAll(e.t, e.ctx, e.s, "p", recall.ListOptions{Limit: -1, IncludeArchived: true}))
}

// checkQuietChanges applies each quiet change to its session (imported at
// minute 10+i) and checks that it wrote an entry yet left Updated and
// Created where they were, that the List order did not move, and that
// List agrees with Stat on every session.
func checkQuietChanges(e *env, quiet []updateChange, keys map[string]recall.Key, orderBefore []recall.Key) {
	t := e.t
	for i, c := range quiet {
		k := keys[c.name]
		before := e.mustStat(k)
		e.later()
		if err := c.fn(k); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		m := e.mustStat(k)
		if m.LastSeq == before.LastSeq {
			t.Errorf("%s wrote nothing", c.name)
		}
		if !m.Updated.Equal(oldTime(10+i)) || !m.Created.Equal(oldTime(10+i)) {
			t.Errorf("%s moved Updated to %v (Created %v); want both still %v", c.name, m.Updated, m.Created, oldTime(10+i))
		}
	}
	if got := updatedListOrder(e); !slices.Equal(got, orderBefore) {
		t.Errorf("title and meta changes moved the List order:\n got %v\nwant %v", got, orderBefore)
	}
	for _, m := range listAll(t, e.ctx, e.s, "p", recall.ListOptions{Limit: -1, IncludeArchived: true}) {
		if d := MetaDiff(m, e.mustStat(m.Key), true); d != "" {
			t.Errorf("List: %s: %s", m.Key, d)
		}
	}
}

// checkActiveChanges applies each active change to its session and checks
// that it moved Updated to now. It returns the keys of the sessions the
// changes applied to, the latest first.
func checkActiveChanges(e *env, active []updateChange, keys map[string]recall.Key) []recall.Key {
	var moved []recall.Key
	for _, c := range active {
		k := keys[c.name]
		e.later()
		if err := c.fn(k); err != nil {
			e.t.Errorf("%s: %v", c.name, err)
			continue
		}
		m := e.mustStat(k)
		if !plausibleTime(m.Updated) || m.Created.Equal(m.Updated) {
			e.t.Errorf("%s left Updated at %v (Created %v); want it now", c.name, m.Updated, m.Created)
		}
		moved = append([]recall.Key{k}, moved...) // the latest first
	}
	return moved
}

// checkForkUpdated forks src (imported at minute 10) into p/fork and
// checks that the fork, a new session, is updated now while its source
// does not move. It returns moved with the fork in front.
func checkForkUpdated(e *env, src recall.Key, moved []recall.Key) []recall.Key {
	fork := recall.Key{Project: "p", Session: "fork"}
	e.later()
	if m, err := recall.NewSession(e.s, src).Fork(e.ctx, 0, fork); err != nil || !plausibleTime(m.Updated) || !m.Updated.Equal(m.Created) {
		e.t.Errorf("Fork = Updated %v, Created %v, %v; want both now", m.Updated, m.Created, err)
	}
	if m := e.mustStat(src); !m.Updated.Equal(oldTime(10)) {
		e.t.Errorf("forking moved the source's Updated to %v", m.Updated)
	}
	return append([]recall.Key{fork}, moved...)
}

// checkCleanupAge checks that Cleanup's age is Updated: a cutoff after the
// old times removes every session that only had title and meta changes
// (the pinned-then-unpinned one too), and none that had activity, which
// are the sessions moved lists in List order.
func checkCleanupAge(e *env, quiet []updateChange, quietKeys map[string]recall.Key, moved []recall.Key) {
	t := e.t
	rep, err := recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{OlderThan: oldTime(100)})
	if err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	var wantGone []recall.Key
	for _, c := range quiet {
		wantGone = append(wantGone, quietKeys[c.name])
	}
	got := keysOf(rep.Removed)
	slices.SortFunc(got, compareKeys)
	slices.SortFunc(wantGone, compareKeys)
	if !slices.Equal(got, wantGone) || rep.Kept != 0 {
		t.Errorf("Cleanup at an old cutoff removed %v and kept %d pinned; want %v and 0", got, rep.Kept, wantGone)
	}
	if got := updatedListOrder(e); !slices.Equal(got, moved) {
		t.Errorf("after Cleanup the store holds %v, want %v", got, moved)
	}
}

// checkUpdatedFromFirstEntry checks that Updated starts at the first
// entry's time whatever its kind, and moves only with activity after
// that; an imported log says so too. It imports into project "q" and
// expects project "p" to hold sessions still.
func checkUpdatedFromFirstEntry(e *env) {
	t := e.t
	yes := true
	first := recall.Key{Project: "q", Session: "title-first"}
	log := []recall.Entry{
		recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "t", Source: recall.TitleUser}),
		recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes}),
	}
	for i := range log {
		log[i].Seq, log[i].Time = int64(i+1), oldTime(i)
	}
	if _, err := e.s.Import(e.ctx, first, log...); err != nil {
		t.Fatal(err)
	}
	if m := e.mustStat(first); !m.Created.Equal(oldTime(0)) || !m.Updated.Equal(oldTime(0)) {
		t.Errorf("a log of a title and a pin: Created %v, Updated %v; want both %v", m.Created, m.Updated, oldTime(0))
	}
	more := []recall.Entry{msg("x").Entry(), recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes})}
	for i := range more {
		more[i].Seq, more[i].Time = int64(len(log)+i+1), oldTime(len(log)+i)
	}
	if _, err := e.s.Import(e.ctx, first, more...); err != nil {
		t.Fatal(err)
	}
	if m := e.mustStat(first); !m.Updated.Equal(oldTime(2)) {
		t.Errorf("after an item at %v and a pin at %v: Updated %v, want the item's time", oldTime(2), oldTime(3), m.Updated)
	}
	if ps, err := recall.Projects(e.ctx, e.s); err != nil || len(ps) != 2 || !ps[1].Updated.Equal(oldTime(2)) {
		t.Errorf("Projects = %+v, %v; want q updated at %v", ps, err, oldTime(2))
	}
}
