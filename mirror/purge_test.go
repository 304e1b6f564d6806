package mirror_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/storekit"
)

// purgeable writes a session with a title, items and a compaction entry
// through s, and returns the compaction entry's seq.
func purgeable(t *testing.T, s recall.Store, k recall.Key) int64 {
	t.Helper()
	ctx := context.Background()
	es := recall.ItemEntries(item("1"), item("2"), item("3"))
	es[0].Usage = &recall.Usage{InputTokens: 5, OutputTokens: 6, TotalTokens: 11} // the purge moves it
	if _, err := s.Append(ctx, k, recall.Guard{}, es...); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(s, k).SetTitle(ctx, "kept title", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	st, err := s.Stat(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := s.Append(ctx, k, recall.Guard{}, recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: st.LastSeq, Replaced: st.ItemCount, Items: []recall.Item{item("summary")}}))
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// A purge through the mirror purges the primary only; the replica keeps the
// dropped history and receives the entries that restore the metadata.
func TestPurgeStaysLocal(t *testing.T) {
	ctx := context.Background()
	primary, replica := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	m := newMirror(t, primary, replica, fastOptions(""))
	k := recall.Key{Project: "p", Session: "s"}
	comp := purgeable(t, m, k)
	flush(t, m, 10*time.Second)
	_, before, _ := replica.Load(ctx, k)

	res, err := m.Purge(ctx, k)
	if err != nil || res.Dropped == 0 || res.Restored == 0 {
		t.Fatalf("purge: %+v %v", res, err)
	}
	flush(t, m, 10*time.Second)
	_, mine, _ := primary.Load(ctx, k)
	_, theirs, _ := replica.Load(ctx, k)
	if mine[0].Seq != comp || len(theirs) != len(before)+res.Restored {
		t.Fatalf("primary log starts at %d (want %d); replica has %d entries, want %d", mine[0].Seq, comp, len(theirs), len(before)+res.Restored)
	}
	if err := sameEntries(before, theirs[:len(before)]); err != nil {
		t.Fatalf("the replica's history changed: %v", err)
	}
	if err := sameEntries(mine[1:], theirs[len(before):]); err != nil {
		t.Fatalf("the restoring entries did not replicate: %v", err)
	}
	a, _ := primary.Stat(ctx, k)
	b, _ := replica.Stat(ctx, k)
	if a.Title != b.Title || a.LastSeq != b.LastSeq || a.ItemCount != b.ItemCount {
		t.Fatalf("metadata: primary %+v, replica %+v", a, b)
	}
	if err := storekit.Verify(ctx, replica); err != nil {
		t.Fatal(err)
	}
}

// A replica whose last entry is the compaction entry a purge rewrote (it
// gained the session's creation time and the dropped entries' usage) is
// not mistaken for a diverged one when its position is checked again.
func TestPurgedCompactionEntryIsNotDivergence(t *testing.T) {
	ctx := context.Background()
	primary := &keepOpen{Store: memstore.New(memstore.Options{})}
	replica := &keepOpen{Store: memstore.New(memstore.Options{})}
	k := recall.Key{Project: "p", Session: "s"}
	m := newMirror(t, primary, replica, fastOptions(""))
	purgeable(t, m, k)
	flush(t, m, 10*time.Second)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := primary.Store.(storekit.Purger).Purge(ctx, k); err != nil {
		t.Fatal(err)
	}
	_, mine, _ := primary.Load(ctx, k)
	_, theirs, _ := replica.Load(ctx, k)
	if tip := theirs[len(theirs)-1]; tip.Seq != mine[0].Seq || string(tip.Data) == string(mine[0].Data) || tip.Usage != nil {
		t.Fatalf("the purge did not rewrite the compaction entry (%s) the replica holds as %s: the test is broken", mine[0].Data, tip.Data)
	}
	// No cursor file: the new mirror checks the replica's tip.
	m = newMirror(t, primary, replica, fastOptions(""))
	flush(t, m, 10*time.Second)
	a, _ := primary.Stat(ctx, k)
	b, _ := replica.Stat(ctx, k)
	if a.LastSeq != b.LastSeq {
		t.Fatalf("replica at %d, primary at %d", b.LastSeq, a.LastSeq)
	}
}

// A replica behind the point a purged log starts at cannot be continued:
// the session is reported diverged, and the replica is left as it is.
func TestPurgePastTheReplicaIsReported(t *testing.T) {
	ctx := context.Background()
	primary := memstore.New(memstore.Options{})
	replica := newFaulty(memstore.New(memstore.Options{}), 7)
	m := newMirror(t, primary, replica, fastOptions(""))
	k := recall.Key{Project: "p", Session: "s"}
	if _, err := m.Append(ctx, k, recall.Guard{}, item("0").Entry()); err != nil {
		t.Fatal(err)
	}
	flush(t, m, 10*time.Second)
	replica.setDown(true)
	purgeable(t, m, k)
	if _, err := m.Purge(ctx, k); err != nil {
		t.Fatal(err)
	}
	replica.setDown(false)
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := m.Flush(fctx); !errors.Is(err, mirror.ErrNotFlushed) || fctx.Err() != nil {
		t.Fatalf("flush: %v", err)
	}
	for _, ss := range m.Status(ctx) {
		if ss.Key == k && (!ss.Stuck || ss.ReplicatedSeq != 1) {
			t.Fatalf("status: %+v", ss)
		}
	}
	if _, es, _ := replica.store().Load(ctx, k); len(es) != 1 {
		t.Fatalf("the replica has %d entries, want its 1", len(es))
	}
}

func TestPurgeUnsupportedByPrimary(t *testing.T) {
	// keepOpen hides memstore's Purge: the primary cannot purge.
	m := newMirror(t, &keepOpen{Store: memstore.New(memstore.Options{})}, memstore.New(memstore.Options{}), fastOptions(""))
	if _, err := m.Purge(context.Background(), recall.Key{Project: "p", Session: "s"}); !errors.Is(err, recall.ErrUnsupported) {
		t.Fatalf("purge: %v, want ErrUnsupported", err)
	}
}

// A session purged before the replica ever received it replicates as the
// purged log, starting at its compaction entry, to every kind of replica;
// and the session goes on replicating afterwards.
func TestPurgeBeforeFirstReplication(t *testing.T) {
	ctx := context.Background()
	replicas := sharedReplicas()
	replicas["memstore"] = func(*testing.T) recall.Store { return memstore.New(memstore.Options{}) }
	for name, open := range replicas {
		t.Run(name, func(t *testing.T) {
			primary := openFileStore(t, t.TempDir())
			replica := open(t)
			down := newFaulty(replica, 3)
			down.setDown(true) // nothing reaches the replica before the purge
			m := newMirror(t, primary, down, fastOptions(t.TempDir()))
			k := recall.Key{Project: "p", Session: "s"}
			comp := purgeable(t, m, k)
			if _, err := m.Append(ctx, k, recall.Guard{}, item("after").Entry()); err != nil {
				t.Fatal(err)
			}
			if res, err := m.Purge(ctx, k); err != nil || res.Dropped == 0 {
				t.Fatalf("purge: %+v %v", res, err)
			}
			down.setDown(false)
			flush(t, m, 20*time.Second)
			if _, err := m.Append(ctx, k, recall.Guard{}, item("later").Entry()); err != nil {
				t.Fatal(err)
			}
			flush(t, m, 20*time.Second)

			pm, mine, err := primary.Load(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			rm, theirs, err := replica.Load(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if theirs[0].Seq != comp {
				t.Fatalf("the replica's log starts at seq %d, want the compaction entry's %d", theirs[0].Seq, comp)
			}
			if err := sameEntries(mine, theirs); err != nil {
				t.Fatalf("replica log: %v", err)
			}
			if pm.Title != rm.Title || pm.LastSeq != rm.LastSeq || pm.ItemCount != rm.ItemCount || !pm.Created.Equal(rm.Created) {
				t.Fatalf("metadata: primary %+v, replica %+v", pm, rm)
			}
			pi, _ := recall.NewSession(primary, k).GetItems(ctx, 0)
			ri, _ := recall.NewSession(replica, k).GetItems(ctx, 0)
			if len(pi) != 3 || len(ri) != len(pi) {
				t.Fatalf("views: primary %d items, replica %d", len(pi), len(ri))
			}
			for i := range pi {
				if string(pi[i]) != string(ri[i]) {
					t.Fatalf("view item %d: primary %s, replica %s", i, pi[i], ri[i])
				}
			}
			for _, ss := range m.Status(ctx) {
				if ss.Key == k && (ss.Stuck || ss.ReplicatedSeq != pm.LastSeq) {
					t.Fatalf("status: %+v", ss)
				}
			}
			if err := storekit.Verify(ctx, replica); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Sync copies a purged session to a store that never held it.
func TestSyncCopiesPurgedSession(t *testing.T) {
	ctx := context.Background()
	src := openFileStore(t, t.TempDir())
	k := recall.Key{Project: "p", Session: "s"}
	comp := purgeable(t, src, k)
	if res, err := src.Purge(ctx, k); err != nil || res.Dropped == 0 {
		t.Fatalf("purge: %+v %v", res, err)
	}
	dst := openFileStore(t, t.TempDir())
	rep, err := mirror.Sync(ctx, src, dst, mirror.SyncOptions{All: true})
	if err != nil || len(rep.Failed) != 0 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	_, mine, _ := src.Load(ctx, k)
	_, theirs, err := dst.Load(ctx, k)
	if err != nil || theirs[0].Seq != comp {
		t.Fatalf("copied log: %d entries, %v", len(theirs), err)
	}
	if err := sameEntries(mine, theirs); err != nil {
		t.Fatal(err)
	}
	// a second sync has nothing to do
	rep, err = mirror.Sync(ctx, src, dst, mirror.SyncOptions{All: true})
	if err != nil || len(rep.Failed) != 0 {
		t.Fatalf("second sync: %+v %v", rep, err)
	}
	if _, again, _ := dst.Load(ctx, k); len(again) != len(theirs) {
		t.Fatalf("a second sync changed the copy: %d entries, was %d", len(again), len(theirs))
	}
}

// headless writes a session with a compaction entry and a subagent record
// to primary, and gives replica only the part of the session from the
// compaction entry on, with the subagent record in full: what a replica
// that lost the session holds after a copy under way imported its next
// batch, which Import takes as the start of a purged log.
func headless(t *testing.T, primary, replica recall.Store, k recall.Key) {
	t.Helper()
	ctx := context.Background()
	at := purgeable(t, primary, k)
	if _, err := primary.Append(ctx, k, recall.Guard{}, item("after").Entry()); err != nil {
		t.Fatal(err)
	}
	sub := recall.Key{Project: k.Project, Session: k.Session, Subpath: "subagents/w-1"}
	if _, err := primary.Append(ctx, sub, recall.Guard{}, item("sub").Entry()); err != nil {
		t.Fatal(err)
	}
	_, es, err := primary.Load(ctx, k)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Import(ctx, k, es[at-1:]...); err != nil {
		t.Fatal(err)
	}
	_, es, err = primary.Load(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Import(ctx, sub, es...); err != nil {
		t.Fatal(err)
	}
	if err := diffLogs(t, primary, replica, true); err == nil {
		t.Fatal("the headless replica equals the primary: the test is broken")
	}
}

// A replica whose log of a session lacks the start (its tip matches, so
// only the start shows it) is rebuilt whole, subagent records included.
func TestReplicaMissingTheLogsStartIsRebuilt(t *testing.T) {
	primary, replica := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	headless(t, primary, replica, recall.Key{Project: "p", Session: "s"})
	m := newMirror(t, primary, replica, fastOptions(t.TempDir()))
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, replica, true); err != nil {
		t.Fatal(err)
	}
}

// Sync rebuilds such a session too, and a dry run counts it as missing.
func TestSyncRebuildsReplicaMissingTheLogsStart(t *testing.T) {
	ctx := context.Background()
	src, dst := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	k := recall.Key{Project: "p", Session: "s"}
	headless(t, src, dst, k)
	rep, err := mirror.Sync(ctx, src, dst, mirror.SyncOptions{All: true, DryRun: true})
	if err != nil || rep.Copied != 1 || rep.UpToDate != 1 {
		t.Fatalf("dry run: %+v %v", rep, err)
	}
	if rep, err = mirror.Sync(ctx, src, dst, mirror.SyncOptions{All: true}); err != nil || rep.Copied != 2 {
		t.Fatalf("sync: %+v %v", rep, err)
	}
	if err := diffLogs(t, src, dst, true); err != nil {
		t.Fatal(err)
	}
}
