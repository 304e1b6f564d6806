package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// contextSessions are the sessions testContext's calls act on.
type contextSessions struct {
	key    recall.Key // p/s: items, a compaction, an item after it
	sub    recall.Key // a subagent record of key
	oldKey recall.Key // q/old, imported at an old time
	fresh  recall.Key // p/fresh, which no call may create
	last   int64      // key's LastSeq
}

// contextCall is one call testContext makes under a context that has
// ended.
type contextCall struct {
	name string
	fn   func(ctx context.Context) error
}

// testContext calls every Store method, the optional abilities the store
// has (Cleaner, ProjectLister, Purger) and the root helpers with a context
// that is already cancelled and with one whose deadline has passed: each
// returns an error wrapping context.Canceled or context.DeadlineExceeded
// and changes nothing. The calls are ones that would write or remove
// something under a live context.
func testContext(e *env) {
	cs := setupContextSessions(e)
	calls := slices.Concat(storeMethodCalls(e, cs), helperCalls(e, cs), abilityCalls(e, cs))
	checkUnderEndedContexts(e, calls, []recall.Key{cs.key, cs.sub, cs.oldKey, cs.fresh})
}

// setupContextSessions writes the sessions testContext's calls act on.
func setupContextSessions(e *env) contextSessions {
	cs := contextSessions{
		key:    recall.Key{Project: "p", Session: "s"},
		sub:    recall.Key{Project: "p", Session: "s", Subpath: "subagents/x"},
		oldKey: recall.Key{Project: "q", Session: "old"},
		fresh:  recall.Key{Project: "p", Session: "fresh"},
	}
	e.mustAdd(cs.key, msgs("m", 3)...)
	e.mustCompact(cs.key, 3, 3, msg("summary"), msg("m-2"))
	e.mustAdd(cs.key, msg("after"))
	e.mustAdd(cs.sub, msg("sub"))
	if _, err := e.s.Import(e.ctx, cs.oldKey, imported(1, 0, msg("old").Entry())...); err != nil {
		e.t.Fatal(err)
	}
	cs.last = e.mustStat(cs.key).LastSeq
	return cs
}

// storeMethodCalls returns a call of each recall.Store method on the
// sessions cs.
func storeMethodCalls(e *env, cs contextSessions) []contextCall {
	key, sub, oldKey, fresh := cs.key, cs.sub, cs.oldKey, cs.fresh
	return []contextCall{
		{"Append", func(ctx context.Context) error {
			_, err := e.s.Append(ctx, key, recall.Guard{}, msg("x").Entry())
			return err
		}},
		{"Append to a new session", func(ctx context.Context) error {
			_, err := e.s.Append(ctx, fresh, recall.IfNew(), msg("x").Entry())
			return err
		}},
		{"Append of an empty batch", func(ctx context.Context) error { _, err := e.s.Append(ctx, key, recall.IfExists()); return err }},
		{"Items", func(ctx context.Context) error { _, _, err := e.s.Items(ctx, key, 0); return err }},
		{"Items(1)", func(ctx context.Context) error { _, _, err := e.s.Items(ctx, key, 1); return err }},
		{"Pop", func(ctx context.Context) error { _, err := e.s.Pop(ctx, key); return err }},
		{"Stat", func(ctx context.Context) error { _, err := e.s.Stat(ctx, key); return err }},
		{"Load", func(ctx context.Context) error { _, _, err := e.s.Load(ctx, key); return err }},
		{"Entries", func(ctx context.Context) error { _, err := e.s.Entries(ctx, key, 0, 0); return err }},
		{"List", func(ctx context.Context) error { _, err := e.s.List(ctx, "", recall.ListOptions{}); return err }},
		{"List(parent)", func(ctx context.Context) error {
			_, err := e.s.List(ctx, "p", recall.ListOptions{Parent: "s"})
			return err
		}},
		{"Remove", func(ctx context.Context) error { return e.s.Remove(ctx, key) }},
		{"Remove of a subagent record", func(ctx context.Context) error { return e.s.Remove(ctx, sub) }},
		{"Import", func(ctx context.Context) error {
			_, err := e.s.Import(ctx, oldKey, imported(2, 1, msg("more").Entry())...)
			return err
		}},
		{"Import of a new session", func(ctx context.Context) error {
			_, err := e.s.Import(ctx, fresh, imported(1, 1, msg("x").Entry())...)
			return err
		}},
	}
}

// helperCalls returns a call of each root helper, of the storekit checks
// and of the Session handle, on the sessions cs.
func helperCalls(e *env, cs contextSessions) []contextCall {
	key, fresh, last := cs.key, cs.fresh, cs.last
	v := "v"
	return []contextCall{
		{"recall.StoreSession.Create", func(ctx context.Context) error {
			_, err := recall.NewSession(e.s, fresh).Create(ctx, recall.CreateOptions{Title: "t"})
			return err
		}},
		{"recall.StoreSession.SetTitle", func(ctx context.Context) error {
			_, err := recall.NewSession(e.s, key).SetTitle(ctx, "t", recall.TitleUser)
			return err
		}},
		{"recall.StoreSession.SetTitle(auto)", func(ctx context.Context) error {
			_, err := recall.NewSession(e.s, key).SetTitle(ctx, "t", recall.TitleAuto)
			return err
		}},
		{"recall.StoreSession.ChangeMeta(pinned)", func(ctx context.Context) error {
			_, err := recall.NewSession(e.s, key).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)})
			return err
		}},
		{"recall.StoreSession.ChangeMeta(metadata)", func(ctx context.Context) error {
			_, err := recall.NewSession(e.s, key).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{"k": &v}})
			return err
		}},
		{"recall.Clear", func(ctx context.Context) error { return recall.NewSession(e.s, key).Clear(ctx) }},
		{"recall.StoreSession.RemoveItem", func(ctx context.Context) error {
			_, err := recall.NewSession(e.s, key).RemoveItem(ctx, recall.ItemRef{Seq: last})
			return err
		}},
		{"recall.StoreSession.Fork", func(ctx context.Context) error { _, err := recall.NewSession(e.s, key).Fork(ctx, 0, fresh); return err }},
		{"recall.Cleanup", func(ctx context.Context) error {
			_, err := recall.Cleanup(ctx, e.s, recall.CleanupOptions{OlderThan: time.Now().Add(2 * time.Hour)})
			return err
		}},
		{"recall.Projects", func(ctx context.Context) error { _, err := recall.Projects(ctx, e.s); return err }},
		{"storekit.Verify", func(ctx context.Context) error { return storekit.Verify(ctx, e.s) }},
		{"storekit.VerifySession", func(ctx context.Context) error { return storekit.VerifySession(ctx, e.s, key) }},
		{"Session.GetItems", func(ctx context.Context) error { _, err := recall.NewSession(e.s, key).GetItems(ctx, 0); return err }},
		{"Session.AddItems", func(ctx context.Context) error { return recall.NewSession(e.s, key).AddItems(ctx, msg("x")) }},
		{"Session.PopItem", func(ctx context.Context) error { _, err := recall.NewSession(e.s, key).PopItem(ctx); return err }},
	}
}

// abilityCalls returns a call of each optional ability the store has
// (Cleaner, ProjectLister, Purger, Forker) on the sessions cs.
func abilityCalls(e *env, cs contextSessions) []contextCall {
	key, fresh := cs.key, cs.fresh
	var calls []contextCall
	if c, ok := e.s.(storekit.Cleaner); ok {
		calls = append(calls, contextCall{"Cleaner.Cleanup", func(ctx context.Context) error {
			_, err := c.Cleanup(ctx, recall.CleanupOptions{OlderThan: time.Now().Add(2 * time.Hour)})
			return err
		}})
	}
	if p, ok := e.s.(storekit.ProjectLister); ok {
		calls = append(calls, contextCall{"ProjectLister.Projects", func(ctx context.Context) error { _, err := p.Projects(ctx); return err }})
	}
	if p, ok := e.s.(storekit.Purger); ok {
		calls = append(calls, contextCall{"Purger.Purge", func(ctx context.Context) error { _, err := p.Purge(ctx, key); return err }})
	}
	if f, ok := e.s.(storekit.Forker); ok {
		calls = append(calls, contextCall{"Forker.Fork", func(ctx context.Context) error { _, err := f.Fork(ctx, key, 0, fresh); return err }})
	}
	return calls
}

// checkUnderEndedContexts makes each call with a context that is already
// cancelled and with one whose deadline has passed, and checks that it
// returns an error wrapping the context's and changes nothing: neither
// the listed sessions nor the watched keys.
func checkUnderEndedContexts(e *env, calls []contextCall, watched []recall.Key) {
	t := e.t
	ends := []struct {
		name string
		ctx  func() context.Context
		want error
	}{
		{"a cancelled context", func() context.Context {
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			return ctx
		}, context.Canceled},
		{"an expired deadline", func() context.Context {
			ctx, cancel := context.WithDeadline(e.ctx, time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}, context.DeadlineExceeded},
	}
	for _, end := range ends {
		for _, c := range calls {
			before := e.storeState(watched)
			err := c.fn(end.ctx())
			if !errors.Is(err, end.want) {
				t.Errorf("%s under %s: %v; want an error wrapping %v", c.name, end.name, err, end.want)
			}
			if d := e.storeState(watched).diff(before); d != "" {
				t.Errorf("%s under %s changed the store: %s", c.name, end.name, d)
			}
		}
	}
}

// storeState is every session of a store, for checking that a call
// changed nothing.
type storeState struct {
	keys  []recall.Key // List of every project, archived included, then the watched keys that exist
	metas map[recall.Key]recall.Meta
	logs  map[recall.Key][]recall.Entry
}

// storeState reads the listed sessions and the watched keys (which may
// not exist, or not be listed: subagent records).
func (e *env) storeState(watched []recall.Key) storeState {
	e.t.Helper()
	st := storeState{metas: map[recall.Key]recall.Meta{}, logs: map[recall.Key][]recall.Entry{}}
	st.keys = keysOf(listAll(e.t, e.ctx, e.s, "", recall.ListOptions{Limit: -1, IncludeArchived: true}))
	for _, k := range append(slices.Clone(st.keys), watched...) {
		m, log, err := e.s.Load(e.ctx, k)
		switch {
		case errors.Is(err, recall.ErrNotFound):
		case err != nil:
			e.t.Fatalf("Load %s: %v", k, err)
		default:
			st.metas[k], st.logs[k] = m, log
		}
	}
	return st
}

// diff describes how st differs from before, or returns "".
func (st storeState) diff(before storeState) string {
	if !slices.Equal(st.keys, before.keys) {
		return fmt.Sprintf("List shows %v, before %v", st.keys, before.keys)
	}
	for k, m := range before.metas {
		got, ok := st.metas[k]
		if !ok {
			return fmt.Sprintf("%s is gone", k)
		}
		if d := MetaDiff(got, m, true); d != "" {
			return fmt.Sprintf("%s: %s", k, d)
		}
		if len(st.logs[k]) != len(before.logs[k]) {
			return fmt.Sprintf("%s: %d entries, before %d", k, len(st.logs[k]), len(before.logs[k]))
		}
	}
	for k := range st.metas {
		if _, ok := before.metas[k]; !ok {
			return fmt.Sprintf("%s was created", k)
		}
	}
	return ""
}

// blockedGrace is how soon a write blocked behind another writer returns
// once its context ends: far longer than a store needs to notice (a
// goroutine's wake-up, a cancel request to a server), far shorter than
// any lock timeout (SQLite's busy_timeout is 10 s).
const blockedGrace = 5 * time.Second

// testBlocked: a write waiting for the lock another writer holds
// (Config.Hold) returns promptly once its context ends, with the
// context's error, while that lock is still held, and nothing of it is
// written, even once the lock is released right after.
func testBlocked(e *env) {
	if e.hold == nil {
		e.t.Log("storetest: Config.Hold is nil: the blocked-write cases are skipped")
		return
	}
	t, key := e.t, recall.Key{Project: "p", Session: "blocked"}
	e.mustAdd(key, msgs("m", 3)...)
	title := recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "late", Source: recall.TitleUser})
	writes := []struct {
		name string
		fn   func(ctx context.Context) error
	}{
		{"Append", func(ctx context.Context) error {
			_, err := e.s.Append(ctx, key, recall.Guard{}, msg("late").Entry())
			return err
		}},
		{"Append of a title", func(ctx context.Context) error {
			_, err := e.s.Append(ctx, key, recall.IfExists(), title)
			return err
		}},
		{"Pop", func(ctx context.Context) error { _, err := e.s.Pop(ctx, key); return err }},
		{"Remove", func(ctx context.Context) error { return e.s.Remove(ctx, key) }},
	}
	for i, w := range writes {
		before, beforeItems := e.mustStat(key), e.mustItems(key, 0)
		waiting, release := e.hold(t, e.s, key)
		released := false
		unhold := func() {
			if !released {
				released = true
				release()
			}
		}
		t.Cleanup(unhold) // should the test stop early
		ctx, cancel := context.WithCancel(e.ctx)
		done := make(chan error, 1)
		go func() { done <- w.fn(ctx) }()
		var err error
		returned := false
		if waiting != nil {
			// The store can tell that the write waits for the lock.
			for deadline := time.Now().Add(30 * time.Second); !waiting() && !returned; {
				select {
				case err = <-done:
					returned = true
				case <-time.After(2 * time.Millisecond): // the polling interval
				}
				if !returned && time.Now().After(deadline) {
					cancel()
					unhold()
					t.Fatalf("%s: the write never waited for the lock the other writer holds", w.name)
				}
			}
		}
		if returned {
			t.Errorf("%s returned while another writer held its lock: %v", w.name, err)
		}
		cancel()
		if !returned {
			select {
			case err = <-done:
				returned = true
			case <-time.After(blockedGrace):
				t.Errorf("%s blocked behind another writer still waits %v after its context ended", w.name, blockedGrace)
			}
		}
		// The lock goes at once: a write that was still to go on after
		// its caller left (its statement still queued for the lock) would
		// now, before the next one, which every store orders after it.
		unhold()
		if !returned {
			<-done
		} else if !errors.Is(err, context.Canceled) {
			t.Errorf("%s cancelled while blocked behind another writer = %v, want an error wrapping context.Canceled", w.name, err)
		}
		seq := e.mustAdd(key, msg("after-%d", i))
		want := append(recall.PlainItems(beforeItems), msg("after-%d", i))
		e.wantView(key, want)
		if m := e.mustStat(key); m.LastSeq != seq || seq != before.LastSeq+1 || m.Title != before.Title {
			t.Errorf("%s cancelled while blocked: after the lock's release and one more item the session is %+v, want LastSeq %d and its title %q",
				w.name, m, before.LastSeq+1, before.Title)
		}
	}
}
