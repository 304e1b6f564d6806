package storetest

import (
	"errors"
	"fmt"

	"github.com/recallkit/recall"
)

// viewAt returns the item view of a log as it stood after entry atSeq.
func viewAt(key recall.Key, log []recall.Entry, atSeq int64) []recall.Item {
	var upTo []recall.Entry
	for _, ent := range log {
		if atSeq > 0 && ent.Seq > atSeq {
			break
		}
		upTo = append(upTo, ent)
	}
	_, live := recall.Replay(key, upTo)
	return recall.PlainItems(live)
}

// testFork forks a session with pops, a clear and a compaction at every
// seq and checks each fork against the view at that seq, and that the
// original is untouched.
func testFork(e *env) {
	t := e.t
	src := recall.Key{Project: "p", Session: "src"}
	it := msgs("m", 6)
	// The source log, by seq: 1-2 items, 3 title, 4 item, 5 pop, 6 item,
	// 7 compaction, 8 item, 9 clear, 10 item, 11 pin.
	e.mustAdd(src, it[0], it[1])
	_, err := recall.NewSession(e.s, src).SetTitle(e.ctx, "T", recall.TitleUser)
	e.must(err)
	e.mustAdd(src, it[2])
	_, err = e.s.Pop(e.ctx, src)
	e.must(err)
	e.mustAdd(src, it[3])
	e.mustCompact(src, 6, 3, recall.Item(`{"type":"message","role":"system","content":"sum"}`), it[3])
	e.mustAdd(src, it[4])
	e.must(recall.NewSession(e.s, src).Clear(e.ctx))
	e.mustAdd(src, it[5])
	_, err = recall.NewSession(e.s, src).ChangeMeta(e.ctx, recall.MetaChange{Pinned: new(true)})
	e.must(err)
	srcMeta, srcLog := e.mustLoad(src)
	if srcMeta.LastSeq != 11 {
		t.Fatalf("source LastSeq = %d, want 11", srcMeta.LastSeq)
	}

	for at := int64(-1); at <= srcMeta.LastSeq; at++ {
		dst := recall.Key{Project: "p", Session: fmt.Sprintf("fork-%d", at+1)}
		m, err := recall.NewSession(e.s, src).Fork(e.ctx, at, dst)
		if err != nil {
			t.Errorf("Fork at %d: %v", at, err)
			continue
		}
		wantSeq := at
		if at <= 0 {
			wantSeq = srcMeta.LastSeq
		}
		want := viewAt(src, srcLog, at)
		e.wantView(dst, want)
		if m.Key != dst || m.ForkedFrom == nil || *m.ForkedFrom != (recall.ForkOrigin{Key: src, Seq: wantSeq}) {
			t.Errorf("Fork at %d returned key %s, forked from %s; want %s, %s@%d", at, m.Key, forkString(m.ForkedFrom), dst, src, wantSeq)
		}
		if m.ItemCount != len(want) {
			t.Errorf("Fork at %d returned ItemCount %d, want %d", at, m.ItemCount, len(want))
		}
		if d := MetaDiff(e.mustStat(dst), m, true); d != "" {
			t.Errorf("Fork at %d: Stat differs from the Meta Fork returned: %s", at, d)
		}
		// The fork's log: a fork entry, then its items, numbered from 1.
		_, log := e.mustLoad(dst)
		if len(log) == 0 || log[0].Kind != recall.KindFork || log[0].Seq != 1 {
			t.Errorf("Fork at %d: first entry %+v, want a fork entry at seq 1", at, log)
		}
		// A fork is a session like any other: it takes appends and pops.
		e.mustAdd(dst, msg("after fork"))
		e.wantView(dst, append(append([]recall.Item(nil), want...), msg("after fork")))
	}
	gotMeta, gotLog := e.mustLoad(src)
	if d := MetaDiff(gotMeta, srcMeta, true); d != "" {
		t.Errorf("forking changed the original: %s", d)
	}
	wantLog(t, "original log after forks", gotLog, srcLog, true)

	// Forks of forks, into another project, and of a subagent record.
	f2 := recall.Key{Project: "other", Session: "fork-of-fork"}
	if _, err := recall.NewSession(e.s, recall.Key{Project: "p", Session: "fork-3"}).Fork(e.ctx, 0, f2); err != nil {
		t.Errorf("fork of a fork: %v", err)
	} else {
		e.wantView(f2, []recall.Item{it[0], it[1], msg("after fork")})
	}
	sub := recall.Key{Project: "p", Session: "src", Subpath: "subagents/a"}
	e.mustAdd(sub, msg("sub"))
	subFork := recall.Key{Project: "p", Session: "src", Subpath: "subagents/b"}
	if _, err := recall.NewSession(e.s, sub).Fork(e.ctx, 0, subFork); err != nil {
		t.Errorf("fork of a subagent record: %v", err)
	} else {
		e.wantView(subFork, []recall.Item{msg("sub")})
	}
}

// testForkRefused checks the errors of Fork, and that a refused fork writes
// nothing.
func testForkRefused(e *env) {
	t := e.t
	src := recall.Key{Project: "p", Session: "src"}
	taken := recall.Key{Project: "p", Session: "taken"}
	e.mustAdd(src, msgs("m", 3)...)
	e.mustAdd(taken, msg("mine"))
	takenMeta, takenLog := e.mustLoad(taken)

	_, err := recall.NewSession(e.s, src).Fork(e.ctx, 0, taken)
	wantErr(t, "Fork onto an existing session", err, recall.ErrConflict)
	_, err = recall.NewSession(e.s, src).Fork(e.ctx, 2, src)
	wantErr(t, "Fork onto itself", err, recall.ErrConflict)
	m, log := e.mustLoad(taken)
	if d := MetaDiff(m, takenMeta, true); d != "" {
		t.Errorf("a refused fork changed the target: %s", d)
	}
	wantLog(t, "target log after a refused fork", log, takenLog, true)

	fresh := recall.Key{Project: "p", Session: "fresh"}
	_, err = recall.NewSession(e.s, src).Fork(e.ctx, 4, fresh)
	wantErr(t, "Fork past the end", err, recall.ErrNotFound)
	_, err = recall.NewSession(e.s, recall.Key{Project: "p", Session: "missing"}).Fork(e.ctx, 0, fresh)
	wantErr(t, "Fork of a missing session", err, recall.ErrNotFound)
	if _, err := e.s.Stat(e.ctx, fresh); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("a refused fork created its target: %v", err)
	}
	e.wantView(src, msgs("m", 3))
}
