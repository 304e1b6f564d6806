package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/recallkit/recall"
)

// guardState is a state a session can be in when a guarded Append
// comes.
type guardState struct {
	name  string
	setup func(key recall.Key) // leaves key in the state
	last  int64                // LastSeq once set up (0: missing)
}

// guardCase is one guard of Append against one state, and what it must
// return.
type guardCase struct {
	state string
	guard recall.Guard
	want  error // nil: the batch goes through
}

// testGuard checks every guard of Append against every state a session
// can be in: missing, existing, moved since the caller read it, removed.
// A guard that holds lets the batch through (an empty batch returns the
// last seq); a guard that fails is ErrNotFound or ErrConflict, as
// recall.Guard documents, and writes nothing: LastSeq, the log and List
// stay as they were, and a missing session stays missing.
func testGuard(e *env) {
	// Each case gets a session of its own, set up afresh.
	byName := map[string]guardState{}
	for _, s := range guardStates(e) {
		byName[s.name] = s
	}
	keep := recall.Key{Project: "p", Session: "bystander"}
	e.mustAdd(keep, msg("bystander"))
	n := 0
	for _, c := range guardCases() {
		st := byName[c.state]
		for _, empty := range []bool{false, true} {
			n++
			key := recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", n)}
			st.setup(key)
			checkGuardedAppend(e, key, st, c, empty)
		}
	}
	parent := checkSubagentGuards(e)
	e.wantView(keep, []recall.Item{msg("bystander")})
	checkGuardBeforeItems(e, parent)
}

// guardStates returns the states testGuard puts a session in: missing,
// existing, moved since the caller read it, removed.
func guardStates(e *env) []guardState {
	t := e.t
	return []guardState{
		{"missing", func(recall.Key) {}, 0},
		{"existing", func(k recall.Key) { e.mustAdd(k, msg("a"), msg("b")) }, 2},
		// moved: read at 2 by the caller, then a pop moved it to 3.
		{"moved", func(k recall.Key) {
			e.mustAdd(k, msg("a"), msg("b"))
			if _, err := e.s.Pop(e.ctx, k); err != nil {
				t.Fatalf("Pop %s: %v", k, err)
			}
		}, 3},
		// removed: existed at 2, then removed.
		{"removed", func(k recall.Key) {
			e.mustAdd(k, msg("a"), msg("b"))
			if err := e.s.Remove(e.ctx, k); err != nil {
				t.Fatalf("Remove %s: %v", k, err)
			}
		}, 0},
	}
}

// guardCases returns every guard testGuard tries against each state, with
// what recall.Guard documents it returns.
func guardCases() []guardCase {
	both := recall.Guard{Exists: true, CheckSeq: true, LastSeq: 2}
	return []guardCase{
		{"missing", recall.Guard{}, nil},
		{"missing", recall.IfExists(), recall.ErrNotFound},
		{"missing", recall.IfNew(), nil},
		{"missing", recall.IfLastSeq(0), nil},
		{"missing", recall.IfLastSeq(2), recall.ErrNotFound},
		{"missing", both, recall.ErrNotFound},

		{"existing", recall.Guard{}, nil},
		{"existing", recall.IfExists(), nil},
		{"existing", recall.IfNew(), recall.ErrConflict},
		{"existing", recall.IfLastSeq(2), nil},
		{"existing", recall.IfLastSeq(1), recall.ErrConflict},
		{"existing", recall.IfLastSeq(3), recall.ErrConflict},
		{"existing", recall.IfLastSeq(0), recall.ErrConflict},
		{"existing", both, nil},

		{"moved", recall.IfExists(), nil},
		{"moved", recall.IfNew(), recall.ErrConflict},
		{"moved", recall.IfLastSeq(2), recall.ErrConflict}, // what the caller read
		{"moved", recall.IfLastSeq(3), nil},
		{"moved", both, recall.ErrConflict},

		{"removed", recall.Guard{}, nil},
		{"removed", recall.IfExists(), recall.ErrNotFound},
		{"removed", recall.IfNew(), nil},
		{"removed", recall.IfLastSeq(2), recall.ErrNotFound}, // what the caller read
		{"removed", recall.IfLastSeq(0), nil},
		{"removed", both, recall.ErrNotFound},
	}
}

// checkGuardedAppend appends to key, which is in the state st, under
// c.guard (an empty batch when empty, else two items) and checks the
// outcome: a refused append is c.want and writes nothing; an empty batch
// that goes through returns the last seq and writes nothing; a batch that
// goes through ends the log.
func checkGuardedAppend(e *env, key recall.Key, st guardState, c guardCase, empty bool) {
	t := e.t
	what := fmt.Sprintf("Append to a %s session (LastSeq %d) with guard %+v", c.state, st.last, c.guard)
	var batch []recall.Entry
	if empty {
		what = "empty " + what
	} else {
		batch = recall.ItemEntries(msg("new-1"), msg("new-2"))
	}
	before := e.state(key)
	seq, err := e.s.Append(e.ctx, key, c.guard, batch...)
	switch {
	case c.want != nil:
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v (%s), want %v", what, err, ErrorClass(err), c.want)
		}
		e.wantState(what+" (refused)", key, before)
	case err != nil:
		t.Errorf("%s: %v, want success", what, err)
	case empty:
		if seq != st.last {
			t.Errorf("%s = %d, want the last seq %d", what, seq, st.last)
		}
		e.wantState(what, key, before)
	default:
		if seq != st.last+2 {
			t.Errorf("%s = %d, want %d", what, seq, st.last+2)
		}
		m, log := e.mustLoad(key)
		if m.LastSeq != st.last+2 || len(log) < 2 || !jsonEqual(log[len(log)-1].Data, msg("new-2")) {
			t.Errorf("%s: LastSeq %d, %d entries; want the batch at the end", what, m.LastSeq, len(log))
		}
	}
}

// checkSubagentGuards checks that a subagent record is a session of its
// own: IfExists of a record that does not exist fails even when its
// parent exists, and IfNew of a record passes, while IfNew of the parent
// fails. It returns the parent, p/parent, holding one item.
func checkSubagentGuards(e *env) recall.Key {
	t := e.t
	parent := recall.Key{Project: "p", Session: "parent"}
	e.mustAdd(parent, msg("parent"))
	sub := recall.Key{Project: "p", Session: "parent", Subpath: "subagents/x"}
	_, err := e.s.Append(e.ctx, sub, recall.IfExists(), msg("x").Entry())
	wantErr(t, "Append guarded by IfExists to a missing subagent record", err, recall.ErrNotFound)
	e.wantAbsent("a refused guarded append", sub)
	if seq, err := e.s.Append(e.ctx, sub, recall.IfNew(), msg("x").Entry()); seq != 1 || err != nil {
		t.Errorf("Append guarded by IfNew to a new subagent record = %d, %v; want 1, nil", seq, err)
	}
	_, err = e.s.Append(e.ctx, parent, recall.IfNew(), msg("x").Entry())
	wantErr(t, "Append guarded by IfNew to a parent with records", err, recall.ErrConflict)
	e.wantView(parent, []recall.Item{msg("parent")})
	return parent
}

// checkGuardBeforeItems checks that the guard is checked before anything
// else the batch could fail on is written: a bad item under a failing
// guard (IfNew of parent, which exists) is refused either way, and writes
// nothing.
func checkGuardBeforeItems(e *env, parent recall.Key) {
	_, err := e.s.Append(e.ctx, parent, recall.IfNew(), recall.ItemEntries(msg("x"), recall.Item("[1]"))...)
	if !errors.Is(err, recall.ErrConflict) && !errors.Is(err, recall.ErrInvalidItem) {
		e.t.Errorf("a bad batch under a failing guard: %v, want ErrConflict or ErrInvalidItem", err)
	}
	e.wantView(parent, []recall.Item{msg("parent")})
}

// sessionState is what a refused write must leave as it was.
type sessionState struct {
	exists bool
	meta   recall.Meta
	log    []recall.Entry
	listed []recall.Meta // List of the key's project, archived included
}

// state reads key's state; a missing session is a state too.
func (e *env) state(key recall.Key) sessionState {
	e.t.Helper()
	var st sessionState
	m, log, err := e.s.Load(e.ctx, key)
	switch {
	case err == nil:
		st.exists, st.meta, st.log = true, m, log
	case !errors.Is(err, recall.ErrNotFound):
		e.t.Fatalf("Load %s: %v", key, err)
	}
	st.listed = listAll(e.t, e.ctx, e.s, key.Project, recall.ListOptions{Limit: -1, IncludeArchived: true})
	return st
}

// wantState reports any difference between key's state now and before.
func (e *env) wantState(what string, key recall.Key, before sessionState) {
	e.t.Helper()
	t := e.t
	now := e.state(key)
	switch {
	case now.exists != before.exists:
		t.Errorf("%s: the session exists: %t, before: %t", what, now.exists, before.exists)
	case now.exists:
		if d := MetaDiff(now.meta, before.meta, true); d != "" {
			t.Errorf("%s changed the session: %s", what, d)
		}
		wantLog(t, what+": log", now.log, before.log, true)
	}
	if !slices.Equal(keysOf(now.listed), keysOf(before.listed)) {
		t.Errorf("%s: List shows %v, before %v", what, keysOf(now.listed), keysOf(before.listed))
	}
	for i := range min(len(now.listed), len(before.listed)) {
		if d := MetaDiff(now.listed[i], before.listed[i], true); d != "" {
			t.Errorf("%s: List: %s: %s", what, now.listed[i].Key, d)
		}
	}
	live, last, err := e.s.Items(e.ctx, key, 0)
	if err != nil {
		t.Errorf("%s: Items: %v", what, err)
	} else if last != before.meta.LastSeq || len(live) != before.meta.ItemCount {
		t.Errorf("%s: Items returns %d items at LastSeq %d, want %d at %d", what, len(live), last, before.meta.ItemCount, before.meta.LastSeq)
	}
}

// testGuardConcurrent races guarded appends: of the writers that read the
// same LastSeq and append with recall.IfLastSeq, exactly one wins each
// seq, and of the writers that create one key with recall.IfNew, exactly
// one succeeds. A guard checked apart from the write lets two through.
func testGuardConcurrent(e *env) {
	t := e.t
	key := recall.Key{Project: "p", Session: "cas"}
	e.mustAdd(key, msg("start"))
	const rounds = 6
	var mu sync.Mutex
	wins := map[int64]int{} // guard -> writers that won it
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				m, err := e.s.Stat(e.ctx, key)
				if err != nil {
					t.Errorf("writer %d: Stat: %v", w, err)
					return
				}
				seq, err := e.s.Append(e.ctx, key, recall.IfLastSeq(m.LastSeq), tagItem(w, r, 0, 1).Entry())
				switch {
				case errors.Is(err, recall.ErrConflict):
				case err != nil:
					t.Errorf("writer %d: Append guarded at %d: %v", w, m.LastSeq, err)
					return
				case seq != m.LastSeq+1:
					t.Errorf("writer %d: Append guarded at %d returned seq %d", w, m.LastSeq, seq)
				default:
					mu.Lock()
					wins[m.LastSeq]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for at, n := range wins {
		if n > 1 {
			t.Errorf("%d writers guarded by IfLastSeq(%d) all succeeded: the guard is not atomic with the write", n, at)
		}
		total += n
	}
	if m := e.mustStat(key); m.LastSeq != int64(1+total) || m.ItemCount != 1+total {
		t.Errorf("after %d successful guarded appends: LastSeq %d, ItemCount %d; want %d", total, m.LastSeq, m.ItemCount, 1+total)
	}

	for r := range 4 {
		fresh := recall.Key{Project: "p", Session: fmt.Sprintf("new-%d", r)}
		ok, conflicts := race(t, writers, "creating "+fresh.String()+" with IfNew", func(w int) error {
			_, err := e.s.Append(e.ctx, fresh, recall.IfNew(), tagItem(w, r, 0, 1).Entry())
			return err
		})
		if ok != 1 || ok+conflicts != writers {
			t.Errorf("%d writers creating %s with IfNew: %d succeeded, %d conflicts; want exactly 1 success", writers, fresh, ok, conflicts)
		}
		if m := e.mustStat(fresh); m.LastSeq != 1 || m.ItemCount != 1 {
			t.Errorf("%s created by %d racing writers: LastSeq %d, ItemCount %d; want 1, 1", fresh, writers, m.LastSeq, m.ItemCount)
		}
	}
}

// race runs f(0) ... f(writers-1) at once and counts the calls that
// succeeded and those refused with ErrConflict; any other error fails t,
// named by what.
func race(t *testing.T, writers int, what string, f func(w int) error) (ok, conflicts int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			err := f(w)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, recall.ErrConflict):
				conflicts++
			default:
				t.Errorf("%s: %v", what, err)
			}
		})
	}
	wg.Wait()
	return ok, conflicts
}
