package storetest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// testListPinned checks ListOptions.Pinned: only pinned sessions, with and
// without archived ones, of one project or all, of a session's subagent
// records with Parent, walked by small pages with cursors, and still right
// after pins, unpins, archiving, activity and removals.
func testListPinned(e *env) {
	t := e.t
	yes := true
	keys, subX, subY := importPinnedSessions(e)
	checkPinnedListings(e, "imported", keys)

	a := func(i int) recall.Key { return recall.Key{Project: "a", Session: fmt.Sprintf("s%03d", i)} }
	steps := []struct {
		what string
		fn   func() error
	}{
		{"pin a/s002", e.changeMeta(a(2), recall.MetaChange{Pinned: new(true)})},
		{"unpin a/s000", e.changeMeta(a(0), recall.MetaChange{Pinned: new(false)})},
		{"archive a/s002", e.changeMeta(a(2), recall.MetaChange{Archived: new(true)})},
		{"unarchive a/s002", e.changeMeta(a(2), recall.MetaChange{Archived: new(false)})},
		{"append to a/s002", func() error {
			_, err := e.s.Append(e.ctx, a(2), recall.Guard{}, msg("now").Entry())
			return err
		}},
		{"unpin subagents/x", e.changeMeta(subX, recall.MetaChange{Pinned: new(false)})},
		{"pin subagents/y", e.changeMeta(subY, recall.MetaChange{Pinned: new(true)})},
		{"remove a/s001 and its records", func() error { return e.s.Remove(e.ctx, a(1)) }},
		{"remove pinned b/s000", func() error { return e.s.Remove(e.ctx, recall.Key{Project: "b", Session: "s000"}) }},
		{"create a pinned a/new", func() error {
			k := recall.Key{Project: "a", Session: "new"}
			keys = append(keys, k)
			_, err := e.s.Append(e.ctx, k, recall.Guard{}, msg("n").Entry(),
				recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes}))
			return err
		}},
	}
	for _, st := range steps {
		if err := st.fn(); err != nil {
			t.Fatalf("%s: %v", st.what, err)
		}
		checkPinnedListings(e, "after "+st.what, keys)
	}
}

// importPinnedSessions writes the sessions testListPinned lists: many
// sessions in projects a and b, few distinct times, so that pinned ones
// tie with each other and with unpinned ones on page boundaries (every
// third is pinned, every fifth archived, so 0 and 15 are both); and two
// subagent records of a/s001, never in a listing of main sessions, of
// which subX is pinned, so that only it is listed with Parent. It
// returns every key, and the two records.
func importPinnedSessions(e *env) (keys []recall.Key, subX, subY recall.Key) {
	t := e.t
	yes := true
	for _, proj := range []struct {
		name string
		n    int
	}{{"a", 23}, {"b", 14}} {
		for i := range proj.n {
			k := recall.Key{Project: proj.name, Session: fmt.Sprintf("s%03d", (i*37)%proj.n)}
			entries := []recall.Entry{msg("%s-%d", proj.name, i).Entry()}
			if i%3 == 0 {
				entries = append(entries, recall.NewEntry(recall.KindMeta, recall.MetaChange{Pinned: &yes}))
			}
			if i%5 == 0 {
				entries = append(entries, recall.NewEntry(recall.KindMeta, recall.MetaChange{Archived: &yes}))
			}
			if _, err := e.s.Import(e.ctx, k, imported(1, i%3, entries...)...); err != nil {
				t.Fatalf("Import %s: %v", k, err)
			}
			keys = append(keys, k)
		}
	}
	subX = recall.Key{Project: "a", Session: "s001", Subpath: "subagents/x"}
	subY = recall.Key{Project: "a", Session: "s001", Subpath: "subagents/y"}
	e.mustAdd(subX, msg("x"))
	e.mustAdd(subY, msg("y"))
	if _, err := recall.NewSession(e.s, subX).ChangeMeta(e.ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
		t.Fatal(err)
	}
	keys = append(keys, subX, subY)
	return keys, subX, subY
}

// checkPinnedListings checks List with Pinned set against the pinned ones
// of the sessions of keys that exist (as storekit.Matches and
// storekit.SortList derive it from their Stat): of every project and of
// each, of a/s001's records with Parent, with and without archived ones,
// walked by pages of 1, 2, 3 and all. when names the moment in failures.
func checkPinnedListings(e *env, when string, keys []recall.Key) {
	t := e.t
	t.Helper()
	var metas []recall.Meta
	for _, k := range keys {
		m, err := e.s.Stat(e.ctx, k)
		if errors.Is(err, recall.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: Stat %s: %v", when, k, err)
		}
		metas = append(metas, m)
	}
	type listing struct {
		project, parent string
	}
	for _, l := range []listing{{"", ""}, {"a", ""}, {"b", ""}, {"a", "s001"}} {
		for _, archived := range []bool{false, true} {
			opts := recall.ListOptions{IncludeArchived: archived, Parent: l.parent, Pinned: true}
			var want []recall.Meta
			for _, m := range metas {
				if storekit.Matches(m, l.project, opts) {
					want = append(want, m)
				}
			}
			storekit.SortList(want)
			for _, limit := range []int{1, 2, 3, -1} {
				opts.Limit = limit
				what := fmt.Sprintf("%s: List(%q, %+v)", when, l.project, opts)
				got := listAll(t, e.ctx, e.s, l.project, opts)
				if !slices.Equal(keysOf(got), keysOf(want)) {
					t.Errorf("%s visits\n %v\nwant\n %v", what, keysOf(got), keysOf(want))
					continue
				}
				for i := range got {
					if !got[i].Pinned {
						t.Errorf("%s: %s is not pinned", what, got[i].Key)
					}
					if d := MetaDiff(got[i], want[i], true); d != "" {
						t.Errorf("%s: %s: %s", what, got[i].Key, d)
					}
				}
			}
		}
	}
}
