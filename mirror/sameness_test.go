package mirror_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/sqlstore"
	"github.com/recallkit/recall/storekit"
)

// at returns entries stamped with the time t, which stores keep: the way a
// test makes two logs' entries carry one time, as two writes within the
// same microsecond do.
func at(t time.Time, es ...recall.Entry) []recall.Entry {
	out := make([]recall.Entry, len(es))
	for i, e := range es {
		e.Time = t
		out[i] = e
	}
	return out
}

// A replica's log is the primary's only if the entries agree in content:
// kind, time, payload and usage, at the first entry and at the replica's
// last one. Each case gives the replica a log whose entries all carry the
// primary's times and differ in one thing only; Sync, which trusts no
// cursor, must refuse to continue it and leave it as it is.
func TestSamenessComparesContent(t *testing.T) {
	t0 := storekit.Now()
	withUsage := func(e recall.Entry) recall.Entry {
		e.Usage = &recall.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}
		return e
	}
	primaryLog := at(t0, item("one").Entry(), item("two").Entry(), item("three").Entry())
	cases := []struct {
		name    string
		replica []recall.Entry // imported as seq 1, 2, ...
		same    bool
	}{
		{"the same prefix", at(t0, item("one").Entry(), item("two").Entry()), true},
		{"another first item", at(t0, item("uno").Entry(), item("two").Entry()), false},
		{"another item at the replica's last seq", at(t0, item("one").Entry(), item("dos").Entry()), false},
		{"usage at the replica's last seq", at(t0, item("one").Entry(), withUsage(item("two").Entry())), false},
		{"another kind at the replica's last seq", at(t0, item("one").Entry(), recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "two", Source: recall.TitleUser})), false},
		{"a re-created empty session", at(t0, recall.Entry{Kind: recall.KindCreate}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			src, dst := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
			k := recall.Key{Project: "p", Session: "s"}
			if _, err := src.Append(ctx, k, recall.Guard{}, primaryLog...); err != nil {
				t.Fatal(err)
			}
			theirs := make([]recall.Entry, len(tc.replica))
			for i, e := range tc.replica {
				e.Seq = int64(i + 1)
				theirs[i] = e
			}
			if _, err := dst.Import(ctx, k, theirs...); err != nil {
				t.Fatal(err)
			}
			_, before, _ := dst.Load(ctx, k)
			rep, err := mirror.Sync(ctx, src, dst, mirror.SyncOptions{All: true})
			if tc.same {
				if err != nil || rep.Copied != 1 {
					t.Fatalf("sync: %+v %v", rep, err)
				}
				if err := diffLogs(t, src, dst, true); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, mirror.ErrDiverged) || len(rep.Failed) != 1 {
				t.Fatalf("sync: %+v %v, want the session diverged", rep, err)
			}
			_, got, _ := dst.Load(ctx, k)
			if err := sameEntries(before, got); err != nil {
				t.Fatalf("the diverged replica log was changed: %v", err)
			}
		})
	}
}

// A session removed and re-created within one microsecond (its first
// entries carry the old log's times), with deletes not propagated: the
// replica keeps the old log and the session is reported diverged; the new
// log is never appended onto the old one.
func TestRecreatedSessionIsNotMixedIntoOldReplicaLog(t *testing.T) {
	ctx := context.Background()
	primary, replica := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	m := newMirror(t, primary, replica, fastOptions(""))
	k := recall.Key{Project: "p", Session: "s"}
	t0 := storekit.Now()
	if _, err := m.Append(ctx, k, recall.Guard{}, at(t0, recall.ItemEntries(item("old 1"), item("old 2"))...)...); err != nil {
		t.Fatal(err)
	}
	flush(t, m, 10*time.Second)
	if err := m.Remove(ctx, k); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Append(ctx, k, recall.Guard{}, at(t0, recall.ItemEntries(item("new 1"), item("new 2"), item("new 3"))...)...); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := m.Flush(fctx); !errors.Is(err, mirror.ErrNotFlushed) || !strings.Contains(err.Error(), "diverged") {
		t.Fatalf("flush: %v, want ErrNotFlushed for a diverged session", err)
	}
	_, es, _ := replica.Load(ctx, k)
	if len(es) != 2 || string(es[1].Data) != string(item("old 2")) {
		t.Fatalf("the replica's old log is now %d entries, want its 2", len(es))
	}
}

// A session removed and re-created within one microsecond, with deletes
// propagated: the replica converges to the new log, when the mirror sees
// both writes, and when it stops in between with the removal owed (the
// replica was down) and a new mirror takes over from the cursor file.
func TestRecreatedSessionConvergesWithPropagatedDeletes(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "one mirror", true: "removal owed across a restart"}[restart], func(t *testing.T) {
			ctx := context.Background()
			primary := &keepOpen{Store: memstore.New(memstore.Options{})}
			inner := memstore.New(memstore.Options{})
			replica := newFaulty(inner, 8)
			opts := fastOptions(t.TempDir())
			opts.PropagateDeletes = true
			m := newMirror(t, primary, &keepOpen{Store: replica}, opts)
			k := recall.Key{Project: "p", Session: "s"}
			sub := recall.Key{Project: "p", Session: "s", Subpath: "subagents/w-1"}
			t0 := storekit.Now()
			if _, err := m.Append(ctx, k, recall.Guard{}, at(t0, recall.ItemEntries(item("old 1"), item("old 2"))...)...); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Append(ctx, sub, recall.Guard{}, at(t0, item("old sub").Entry())...); err != nil {
				t.Fatal(err)
			}
			flush(t, m, 10*time.Second)
			if restart {
				replica.setDown(true)
			}
			if err := m.Remove(ctx, k); err != nil {
				t.Fatal(err)
			}
			// The new log is longer than the old one and starts with the
			// same kind at the same time.
			if _, err := m.Append(ctx, k, recall.Guard{}, at(t0, recall.ItemEntries(item("new 1"), item("new 2"), item("new 3"))...)...); err != nil {
				t.Fatal(err)
			}
			if restart {
				sctx, cancel := context.WithTimeout(ctx, time.Second)
				err := m.Shutdown(sctx)
				cancel()
				if !errors.Is(err, mirror.ErrNotFlushed) {
					t.Fatalf("shutdown with the replica down: %v, want ErrNotFlushed", err)
				}
				if _, es, _ := inner.Load(ctx, k); len(es) != 2 {
					t.Fatalf("the replica changed while down: %d entries", len(es))
				}
				sum, saved, err := mirror.ReadStatus(ctx, primary.Store, opts.StateDir)
				if err != nil {
					t.Fatal(err)
				}
				if len(saved) != 1 || !saved[0].Removing || sum.Behind != 1 {
					t.Fatalf("cursor file: %+v %+v, want the removal owed", sum, saved)
				}
				replica.setDown(false)
				m = newMirror(t, primary, &keepOpen{Store: replica}, opts)
			}
			flush(t, m, 10*time.Second)
			if err := diffLogs(t, primary.Store, inner, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Content is compared across stores: every kind of entry, as the file
// store holds it and as each kind of replica keeps it, compares equal, so
// a mirror that checks its positions against the replica (a new mirror
// without a cursor file) finds nothing diverged and goes on.
func TestSamenessAcrossStores(t *testing.T) {
	t.Parallel() // waits on servers and fsync, not the CPU
	replicas := sharedReplicas()
	replicas["sqlite"] = func(t *testing.T) recall.Store {
		s, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	replicas["file"] = func(t *testing.T) recall.Store { return openFileStore(t, t.TempDir()) }
	for name, open := range replicas {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			// The stores outlive the first mirror, and are closed after
			// the second.
			primary := &keepOpen{Store: openFileStore(t, t.TempDir())}
			replica := &keepOpen{Store: open(t)}
			t.Cleanup(func() { primary.Store.Close(); replica.Store.Close() })
			m := newMirror(t, primary, replica, fastOptions(""))
			keys := everyKind(t, m)
			flush(t, m, 20*time.Second)
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if _, err := primary.Append(ctx, k, recall.Guard{}, item("later").Entry()); err != nil {
					t.Fatal(err)
				}
			}
			// No cursor file: every position is checked against the
			// replica, first entry and last entry.
			m = newMirror(t, primary, replica, fastOptions(""))
			flush(t, m, 20*time.Second)
			if err := diffLogs(t, primary.Store, replica.Store, true); err != nil {
				t.Fatal(err)
			}
			if sum := m.Summary(ctx); sum.Stuck != 0 || sum.Lag != 0 {
				t.Fatalf("summary: %+v", sum)
			}
		})
	}
}

// everyKind writes, through s, sessions whose logs hold every entry kind
// (each also the last entry of some session), and returns their keys.
func everyKind(t *testing.T, s recall.Store) []recall.Key {
	t.Helper()
	ctx := context.Background()
	key := func(id string) recall.Key { return recall.Key{Project: "p", Session: id} }
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	var keys []recall.Key
	add := func(id string) recall.Key { k := key(id); keys = append(keys, k); return k }

	_, err := recall.NewSession(s, add("empty")).Create(ctx, recall.CreateOptions{})
	must("create", err)
	k := add("titled")
	_, err = recall.NewSession(s, k).Create(ctx, recall.CreateOptions{Title: "a title", Metadata: map[string]string{"a": "b"}})
	must("create with title", err)
	k = add("items")
	used := item("used").Entry()
	used.Usage = &recall.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}
	_, err = s.Append(ctx, k, recall.Guard{}, used, item("two").Entry(), item("three").Entry())
	must("append", err)
	live, _, err := s.Items(ctx, k, 0)
	must("items", err)
	_, err = recall.NewSession(s, k).RemoveItem(ctx, live[1].Ref)
	must("remove item", err)
	k = add("popped")
	_, err = s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("a"), item("b"))...)
	must("append", err)
	_, err = s.Pop(ctx, k)
	must("pop", err)
	k = add("cleared")
	_, err = s.Append(ctx, k, recall.Guard{}, item("a").Entry())
	must("append", err)
	must("clear", recall.NewSession(s, k).Clear(ctx))
	k = add("retitled")
	_, err = s.Append(ctx, k, recall.Guard{}, item("a").Entry())
	must("append", err)
	_, err = recall.NewSession(s, k).SetTitle(ctx, "later title", recall.TitleUser)
	must("title", err)
	k = add("meta")
	_, err = s.Append(ctx, k, recall.Guard{}, item("a").Entry())
	must("append", err)
	_, err = recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)})
	must("pin", err)
	_, err = recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Labels: []string{"x", "y"}, SetLabels: true})
	must("labels", err)
	_, err = recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{ClearMetadata: true, Metadata: map[string]*string{"k": new("v")}})
	must("metadata", err)
	k = add("compacted")
	_, err = s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("a"), item("b"))...)
	must("append", err)
	st, err := s.Stat(ctx, k)
	must("stat", err)
	_, err = s.Append(ctx, k, recall.IfLastSeq(st.LastSeq), recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: st.LastSeq, Replaced: st.ItemCount, Items: []recall.Item{item("summary")}, Strategy: "test"}))
	must("compact", err)
	_, err = recall.NewSession(s, key("items")).Fork(ctx, 0, add("forked"))
	must("fork", err)
	return keys
}
