package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/storekit"
)

// failAfter is a store whose Imports fail once n have succeeded, like a
// server that goes away in the middle of a backfill.
type failAfter struct {
	recall.Store
	n atomic.Int64
}

func (f *failAfter) Import(ctx context.Context, k recall.Key, es ...recall.Entry) (int64, error) {
	if f.n.Add(-1) < 0 {
		return 0, errUnreachable
	}
	return f.Store.Import(ctx, k, es...)
}

func fillStore(t *testing.T, s recall.Store, projects, sessions, entries int) {
	t.Helper()
	ctx := context.Background()
	for p := range projects {
		for i := range sessions {
			k := recall.Key{Project: fmt.Sprintf("p%d", p), Session: fmt.Sprintf("s%02d", i)}
			for j := range entries {
				if _, err := s.Append(ctx, k, recall.Guard{}, item(fmt.Sprintf("%d", j)).Entry()); err != nil {
					t.Fatal(err)
				}
			}
			if i%4 == 0 {
				if _, err := recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}); err != nil {
					t.Fatal(err)
				}
				sub := k
				sub.Subpath = "subagents/s-1"
				if _, err := s.Append(ctx, sub, recall.Guard{}, item("sub").Entry()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

func TestSyncIsResumable(t *testing.T) {
	ctx := context.Background()
	src := memstore.New(memstore.Options{})
	fillStore(t, src, 2, 8, 10)
	inner := memstore.New(memstore.Options{})
	dst := &failAfter{Store: inner}
	dst.n.Store(9)
	state := t.TempDir()

	var calls []int
	opts := mirror.SyncOptions{All: true, BatchSize: 4, StateDir: state, ReplicaName: "test",
		Progress: func(done, total int, key recall.Key) {
			calls = append(calls, done)
			if total != 20 {
				t.Errorf("progress total %d, want 20 records", total)
			}
		}}
	rep, err := mirror.Sync(ctx, src, dst, opts)
	if err == nil || len(rep.Failed) == 0 || !errors.Is(err, errUnreachable) {
		t.Fatalf("sync with the replica failing: %+v, %v", rep, err)
	}
	if len(calls) != 20 || calls[19] != 20 {
		t.Fatalf("progress calls %v", calls)
	}
	partial := total(t, inner)
	if partial == 0 || partial >= total(t, src) {
		t.Fatalf("the interrupted sync copied %d of %d entries; want part", partial, total(t, src))
	}

	// Run again with the replica back: only what is missing is copied.
	dst.n.Store(1 << 30)
	rep, err = mirror.Sync(ctx, src, dst, mirror.SyncOptions{All: true, BatchSize: 4, StateDir: state})
	if err != nil {
		t.Fatalf("resumed sync: %v", err)
	}
	if int64(rep.Entries) != total(t, src)-partial {
		t.Fatalf("the resumed sync copied %d entries, want the %d missing", rep.Entries, total(t, src)-partial)
	}
	if err := diffLogs(t, src, inner, true); err != nil {
		t.Fatal(err)
	}
	rep, err = mirror.Sync(ctx, src, dst, mirror.SyncOptions{All: true})
	if err != nil || rep.Entries != 0 || rep.UpToDate != 20 || rep.Sessions != 20 {
		t.Fatalf("sync of a complete replica: %+v %v", rep, err)
	}

	// The state dir knows the positions: a status read offline shows no lag.
	sum, sessions, err := mirror.ReadStatus(ctx, src, state)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Lag != 0 || sum.Sessions != 20 || sum.Replica != "test" || len(sessions) != 20 {
		t.Fatalf("status after sync: %+v", sum)
	}
	for _, ss := range sessions {
		if ss.LastError != "" {
			t.Errorf("%s keeps the error of the failed run: %s", ss.Key, ss.LastError)
		}
	}
}

func TestSyncOneProjectAndDryRun(t *testing.T) {
	ctx := context.Background()
	src := memstore.New(memstore.Options{})
	fillStore(t, src, 2, 3, 4)
	dst := memstore.New(memstore.Options{})

	rep, err := mirror.Sync(ctx, src, dst, mirror.SyncOptions{Project: "p1", DryRun: true})
	if err != nil || rep.Sessions != 4 || rep.Copied != 4 || rep.Entries != 3*4+1+1 { // items, s00's archive entry, its subagent record
		t.Fatalf("dry run: %+v %v", rep, err)
	}
	if n := len(allKeys(t, dst)); n != 0 {
		t.Fatalf("a dry run wrote %d sessions", n)
	}
	rep, err = mirror.Sync(ctx, src, dst, mirror.SyncOptions{Project: "p1"})
	if err != nil || rep.Copied != 4 {
		t.Fatalf("sync of p1: %+v %v", rep, err)
	}
	for _, k := range allKeys(t, dst) {
		if k.Project != "p1" {
			t.Errorf("sync of p1 copied %s", k)
		}
	}
	if _, err := mirror.Sync(ctx, src, dst, mirror.SyncOptions{}); !errors.Is(err, recall.ErrInvalidKey) {
		t.Fatalf("sync without a project: %v", err)
	}
	if _, err := mirror.Sync(ctx, src, dst, mirror.SyncOptions{Project: "p1", All: true}); !errors.Is(err, recall.ErrInvalidKey) {
		t.Fatalf("sync with a project and all: %v", err)
	}
}

func TestSyncReportsDivergedSessions(t *testing.T) {
	ctx := context.Background()
	src, dst := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	k := recall.Key{Project: "p", Session: "s"}
	t0 := storekit.Now() // both logs written within one microsecond
	if _, err := src.Append(ctx, k, recall.Guard{}, at(t0, recall.ItemEntries(item("a"), item("b"))...)...); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Append(ctx, k, recall.Guard{}, at(t0, item("other").Entry())...); err != nil {
		t.Fatal(err)
	}
	rep, err := mirror.Sync(ctx, src, dst, mirror.SyncOptions{All: true})
	if !errors.Is(err, mirror.ErrDiverged) || len(rep.Failed) != 1 || rep.Failed[0].Key != k {
		t.Fatalf("sync onto a diverged session: %+v %v", rep, err)
	}
}

func TestReadStatusShowsLagAndErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	primary := &keepOpen{Store: memstore.New(memstore.Options{})}
	replica := newFaulty(memstore.New(memstore.Options{}), 9)
	opts := fastOptions(dir)
	opts.ReplicaName = "redis://user:xxxxx@host:6379/0"
	m := newMirror(t, primary, replica, opts)
	a, b := recall.Key{Project: "p", Session: "a"}, recall.Key{Project: "p", Session: "b"}
	for _, k := range []recall.Key{a, b} {
		if _, err := m.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("1"), item("2"))...); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, m, 10*time.Second)
	goDown(t, m, replica, b)
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := m.Shutdown(sctx); !errors.Is(err, mirror.ErrNotFlushed) {
		t.Fatalf("shutdown: %v", err)
	}

	sum, sessions, err := mirror.ReadStatus(ctx, primary.Store, dir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Replica != "redis://user:xxxxx@host:6379/0" || sum.Lag != 1 || sum.Behind != 1 || sum.Saved.IsZero() {
		t.Fatalf("summary: %+v", sum)
	}
	if len(sessions) != 2 {
		t.Fatalf("sessions: %+v", sessions)
	}
	sb := sessions[1]
	if sb.Key != b || sb.PrimarySeq != 3 || sb.ReplicatedSeq != 2 || sb.Lag != 1 || !strings.Contains(sb.LastError, errUnreachable.Error()) {
		t.Fatalf("status of the lagging session: %+v", sb)
	}
	if sa := sessions[0]; sa.Lag != 0 || sa.LastError != "" {
		t.Fatalf("status of the replicated session: %+v", sa)
	}
}

func TestStateDir(t *testing.T) {
	dir := func(url string) string { return mirror.StateDir("/home/u/.recall", url) }
	a, b := dir("postgres://u:one@db/x"), dir("postgres://u:two@db/x")
	c, d := dir("postgres://u:one@db/x?password=three"), dir("postgres://u:two@db/x?password=four")
	if a != b || c != d {
		t.Errorf("a new password moves the state dir: %s %s, %s %s", a, b, c, d)
	}
	if e := dir("redis://db:6379/0"); a == e || a == c || !strings.HasPrefix(a, "/home/u/.recall/mirror/") {
		t.Errorf("state dirs %s, %s and %s", a, c, e)
	}
	// The hash is of the redacted URL, which reads as it did when
	// redaction hid only passwords: positions kept by earlier versions
	// stay where they were.
	for in, want := range map[string]string{
		"postgres://u:secret@db:5432/x?sslmode=disable": "af6c10ee8d804f6f",
		"host=db user=u password=secret dbname=x":       "cd70c73e6bfd4936",
	} {
		if got := mirror.StateDir("/h", in); got != "/h/mirror/"+want {
			t.Errorf("StateDir(%q) = %s, want /h/mirror/%s", in, got, want)
		}
	}
}
