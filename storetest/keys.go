package storetest

import (
	"fmt"
	"slices"

	"github.com/recallkit/recall"
)

// testInvalidKeys calls every method with every hostile key and demands
// ErrInvalidKey, then checks that the store is still empty: a bad key never
// reaches storage.
func testInvalidKeys(e *env) {
	t := e.t
	good := recall.Key{Project: "p", Session: "good"}
	e.mustAdd(good, msg("x"))
	goodMeta, goodLog := e.mustLoad(good)
	item := msg("x").Entry()

	for _, bad := range InvalidKeys() {
		name := fmt.Sprintf("%q/%q/%q", bad.Project, bad.Session, bad.Subpath)
		calls := []struct {
			method string
			err    error
		}{}
		call := func(method string, err error) {
			calls = append(calls, struct {
				method string
				err    error
			}{method, err})
		}
		sess := recall.NewSession(e.s, bad)

		_, err := e.s.Append(e.ctx, bad, recall.Guard{}, item)
		call("Append", err)
		_, err = e.s.Append(e.ctx, bad, recall.Guard{})
		call("Append (empty batch)", err)
		_, _, err = e.s.Items(e.ctx, bad, 0)
		call("Items", err)
		_, err = e.s.Pop(e.ctx, bad)
		call("Pop", err)
		_, err = e.s.Stat(e.ctx, bad)
		call("Stat", err)
		_, _, err = e.s.Load(e.ctx, bad)
		call("Load", err)
		_, err = e.s.Entries(e.ctx, bad, 0, 0)
		call("Entries", err)
		call("Remove", e.s.Remove(e.ctx, bad))
		_, err = recall.NewSession(e.s, bad).Fork(e.ctx, 0, recall.Key{Project: "p", Session: "fork-target"})
		call("Fork from", err)
		_, err = recall.NewSession(e.s, good).Fork(e.ctx, 0, bad)
		call("Fork onto", err)
		_, err = e.s.Import(e.ctx, bad, imported(1, 0, item)...)
		call("Import", err)
		_, err = sess.GetItems(e.ctx, 0)
		call("Session.GetItems", err)
		call("Session.AddItems", sess.AddItems(e.ctx, msg("x")))
		_, err = sess.PopItem(e.ctx)
		call("Session.PopItem", err)
		call("Session.Clear", sess.Clear(e.ctx))
		_, err = recall.NewSession(e.s, bad).SetTitle(e.ctx, "t", recall.TitleUser)
		call("SetTitle", err)
		_, err = recall.NewSession(e.s, bad).ChangeMeta(e.ctx, recall.MetaChange{Archived: new(true)})
		call("SetArchived", err)

		// The project alone, where the method takes one ("" means every
		// project there).
		if bad.Project != "" && (recall.Key{Project: bad.Project, Session: "x"}).Validate() != nil {
			_, err = e.s.List(e.ctx, bad.Project, recall.ListOptions{})
			call("List(project)", err)
			_, err = recall.Cleanup(e.ctx, e.s, recall.CleanupOptions{OlderThan: oldTime(0), Project: bad.Project})
			call("Cleanup(project)", err)
		}
		// The session alone, as a List parent.
		if bad.Session != "" && recall.ValidateID(bad.Session) != nil {
			_, err = e.s.List(e.ctx, "p", recall.ListOptions{Parent: bad.Session})
			call("List(parent)", err)
		}

		for _, c := range calls {
			wantErr(t, fmt.Sprintf("%s with key %s", c.method, name), c.err, recall.ErrInvalidKey)
		}
	}

	// Nothing reached the store.
	got := listAll(t, e.ctx, e.s, "", recall.ListOptions{Limit: -1, IncludeArchived: true})
	if keys := keysOf(got); !slices.Equal(keys, []recall.Key{good}) {
		t.Errorf("after calls with bad keys the store lists %v, want only %s", keys, good)
	}
	if ps, err := recall.Projects(e.ctx, e.s); err != nil || len(ps) != 1 || ps[0].Project != "p" {
		t.Errorf("after calls with bad keys Projects = %+v, %v", ps, err)
	}
	if got := listAll(t, e.ctx, e.s, "p", recall.ListOptions{Limit: -1, IncludeArchived: true, Parent: "s"}); len(got) != 0 {
		t.Errorf("after calls with bad keys p/s has records %v", keysOf(got))
	}
	m, log := e.mustLoad(good)
	if d := MetaDiff(m, goodMeta, true); d != "" {
		t.Errorf("calls with bad keys changed %s: %s", good, d)
	}
	wantLog(t, "log of "+good.String(), log, goodLog, true)
	if _, err := e.s.Stat(e.ctx, recall.Key{Project: "p", Session: "fork-target"}); err == nil {
		t.Errorf("a fork from a bad key created its target")
	}
}

// testEdgeKeys stores a session under every edge-of-valid key and reads
// each back, all kept apart.
func testEdgeKeys(e *env) {
	t := e.t
	keys := EdgeKeys()
	for i, k := range keys {
		if e.maxProject > 0 && len(k.Project) > e.maxProject {
			t.Logf("the store takes projects of up to %d bytes (Config.MaxProject): the edge key's project of %d is cut to that", e.maxProject, len(k.Project))
			keys[i].Project = k.Project[:e.maxProject]
			k = keys[i]
		}
		if err := k.Validate(); err != nil {
			t.Fatalf("edge key %s does not validate: %v", k, err)
		}
		e.mustAdd(k, msg("item %d", i))
	}
	var mains []recall.Key
	for i, k := range keys {
		e.wantView(k, []recall.Item{msg("item %d", i)})
		if m := e.mustStat(k); m.Key != k {
			t.Errorf("Stat(%s).Key = %s", k, m.Key)
		}
		if k.IsMain() {
			mains = append(mains, k)
		}
	}
	got := keysOf(listAll(t, e.ctx, e.s, "", recall.ListOptions{Limit: -1}))
	slices.SortFunc(got, compareKeys)
	slices.SortFunc(mains, compareKeys)
	if !slices.Equal(got, mains) {
		t.Errorf("List = %v, want %v", got, mains)
	}
	fork := recall.Key{Project: keys[1].Project, Session: keys[0].Session}
	if _, err := recall.NewSession(e.s, keys[0]).Fork(e.ctx, 0, fork); err != nil {
		t.Errorf("Fork between edge keys: %v", err)
	} else {
		e.wantView(fork, []recall.Item{msg("item 0")})
	}
	// Remove from the last: subagent records before their session.
	for i := len(keys) - 1; i >= 0; i-- {
		if err := e.s.Remove(e.ctx, keys[i]); err != nil {
			t.Errorf("Remove(%s): %v", keys[i], err)
		}
		for _, k := range keys[:i] {
			if _, err := e.s.Stat(e.ctx, k); err != nil {
				t.Errorf("after removing %s, Stat(%s): %v", keys[i], k, err)
			}
		}
	}
}
