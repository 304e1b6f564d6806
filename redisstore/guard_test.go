package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/recallkit/recall"
)

// TestAppendGuard checks each guard against a missing and an existing
// session: a failed guard is ErrNotFound or ErrConflict, as
// recall.Guard.Check words it, and writes nothing (no key at all for a
// missing session); an empty batch checks the guard and returns the last
// seq.
func TestAppendGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "g"}
	e := item("x").Entry()
	for _, c := range []struct {
		guard recall.Guard
		want  error
	}{
		{recall.IfExists(), recall.ErrNotFound},
		{recall.IfLastSeq(3), recall.ErrNotFound},
		{recall.Guard{Exists: true, CheckSeq: true}, recall.ErrNotFound},
	} {
		for _, batch := range [][]recall.Entry{{e}, nil} {
			_, err := s.Append(ctx, k, c.guard, batch...)
			if !errors.Is(err, c.want) || err.Error() != fmt.Sprintf("redisstore: append %s: %v", k, c.guard.Check(false, 0)) {
				t.Errorf("Append(%+v, %d entries) on a missing session = %v, want %v", c.guard, len(batch), err, c.guard.Check(false, 0))
			}
		}
	}
	if keys := prefixKeys(t, s.k.prefix); len(keys) != 0 {
		t.Fatalf("failed guards wrote %q", keys)
	}
	if last, err := s.Append(ctx, k, recall.IfNew()); err != nil || last != 0 {
		t.Fatalf("empty batch, IfNew, missing session = %d, %v; want 0, nil", last, err)
	}
	if last, err := s.Append(ctx, k, recall.IfLastSeq(0), e); err != nil || last != 1 {
		t.Fatalf("IfLastSeq(0) on a missing session = %d, %v; want 1, nil", last, err)
	}
	mustAppend(t, s, k, e, e) // last 3
	for _, c := range []struct {
		guard recall.Guard
		want  error
	}{
		{recall.IfNew(), recall.ErrConflict},
		{recall.IfLastSeq(2), recall.ErrConflict},
		{recall.IfLastSeq(4), recall.ErrConflict},
		{recall.IfLastSeq(-1), recall.ErrConflict},
		{recall.Guard{Exists: true, CheckSeq: true, LastSeq: 1}, recall.ErrConflict},
	} {
		for _, batch := range [][]recall.Entry{{e}, nil} {
			if _, err := s.Append(ctx, k, c.guard, batch...); !errors.Is(err, c.want) {
				t.Errorf("Append(%+v, %d entries) at seq 3 = %v, want %v", c.guard, len(batch), err, c.want)
			}
		}
	}
	if n := adminClient(t).LLen(ctx, s.k.log(k)).Val(); n != 3 {
		t.Fatalf("failed guards wrote: the log holds %d elements, want 3", n)
	}
	for _, g := range []recall.Guard{{}, recall.IfExists(), recall.IfLastSeq(3), {Exists: true, CheckSeq: true, LastSeq: 3}} {
		if last, err := s.Append(ctx, k, g); err != nil || last != 3 {
			t.Errorf("empty batch with %+v = %d, %v; want 3, nil", g, last, err)
		}
	}
	if last, err := s.Append(ctx, k, recall.IfLastSeq(3), e, e); err != nil || last != 5 {
		t.Fatalf("IfLastSeq(3) at seq 3 = %d, %v; want 5", last, err)
	}
	// A compaction is no longer compared with anything but the guard: the
	// caller passes IfLastSeq(through).
	comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: 1, Items: []recall.Item{item("sum")}})
	if _, err := s.Append(ctx, k, recall.IfLastSeq(4), comp); !errors.Is(err, recall.ErrConflict) {
		t.Errorf("compaction guarded by a stale seq = %v, want ErrConflict", err)
	}
	if last, err := s.Append(ctx, k, recall.Guard{}, comp); err != nil || last != 6 {
		t.Errorf("unguarded compaction with an old Through = %d, %v; want it written at 6", last, err)
	}
	verify(t, s)
}

// TestGuardRaces runs compare-and-swap writers against each other and
// against Remove, many rounds: IfLastSeq lets exactly one writer extend
// each seq, and IfExists never brings a removed session back.
func TestGuardRaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "cas"}
	mustAppend(t, s, k, item("start").Entry())
	const writers, rounds = 4, 40
	var won atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for r := range rounds {
				_, last, err := s.Items(ctx, k, 1)
				if err != nil {
					t.Error(err)
					return
				}
				_, err = s.Append(ctx, k, recall.IfLastSeq(last), item(fmt.Sprintf("w%d r%d", w, r)).Entry())
				switch {
				case err == nil:
					won.Add(1)
				case !errors.Is(err, recall.ErrConflict):
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if m, _ := s.Stat(ctx, k); m.LastSeq != 1+won.Load() || m.ItemCount != int(m.LastSeq) {
		t.Fatalf("%d guarded appends won, but the session is at seq %d with %d items", won.Load(), m.LastSeq, m.ItemCount)
	}

	ghost := recall.Key{Project: "p", Session: "ghost"}
	for round := range 60 {
		mustAppend(t, s, ghost, item("x").Entry())
		wg.Go(func() {
			if err := s.Remove(ctx, ghost); err != nil {
				t.Error(err)
			}
		})
		_, err := recall.NewSession(s, ghost).ChangeMeta(ctx, recall.MetaChange{Pinned: new(round%2 == 0)})
		wg.Wait()
		m, serr := s.Stat(ctx, ghost)
		switch {
		case err == nil && serr == nil:
			// Remove has returned, yet the session exists: the pin
			// brought it back (a ghost)
			t.Fatalf("round %d: a pin racing a Remove brought the session back: %+v", round, m)
		case err != nil && !errors.Is(err, recall.ErrNotFound):
			t.Fatal(err)
		case !errors.Is(serr, recall.ErrNotFound):
			t.Fatalf("round %d: a pin racing a Remove left %+v, %v", round, m, serr)
		}
	}
	if keys := slices.DeleteFunc(prefixKeys(t, s.k.prefix), func(key string) bool { return key != s.k.meta(ghost) && key != s.k.log(ghost) }); len(keys) != 0 {
		t.Fatalf("a removed session left %q", keys)
	}
	verify(t, s)
}

// TestImportGapWritesNothing sends the append script an import whose
// second entry leaves a gap (storekit.ImportPlan refuses that before the
// script; this is the script's own check): the script refuses before its
// first write, so not even the first entry's usage is counted.
func TestImportGapWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t, Options{})
	k := recall.Key{Project: "p", Session: "gap"}
	mustAppend(t, s, k, item("a").Entry())
	before := dumpPrefix(t, s.k.prefix)
	e2, e4 := item("b").Entry(), item("d").Entry()
	e2.Seq, e2.Usage, e4.Seq = 2, &recall.Usage{InputTokens: 5, OutputTokens: 1, TotalTokens: 6}, 4
	keys, args, err := s.writeArgs(k, modeImport, 1, recall.Guard{}, stamp([]recall.Entry{e2, e4}))
	if err != nil {
		t.Fatal(err)
	}
	err = scriptError(appendScript.Run(ctx, s.rdb, keys, args...).Err())
	if !errors.Is(err, recall.ErrConflict) {
		t.Fatalf("import with a gap = %v, want ErrConflict", err)
	}
	if after := dumpPrefix(t, s.k.prefix); after != before {
		t.Fatalf("a refused import wrote:\nbefore\n%s\nafter\n%s", before, after)
	}
}
