package mirror_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/storekit"
)

// keepOpen is a store whose Close does nothing, so a test can start a second
// mirror over the same in-memory store after the first one closed it. It
// counts the calls to Close.
type keepOpen struct {
	recall.Store
	closes atomic.Int32
}

func (k *keepOpen) Close() error { k.closes.Add(1); return nil }

// Search searches the wrapped store; keepOpen hides its other abilities
// (Purge, Fork, ...).
func (k *keepOpen) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	return recall.Search(ctx, k.Store, opts)
}

func newMirror(t testing.TB, primary, replica recall.Store, opts mirror.Options) *mirror.Store {
	t.Helper()
	m, err := mirror.New(primary, replica, opts)
	if err != nil {
		t.Fatalf("mirror.New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func TestReplicatesEveryOperation(t *testing.T) {
	ctx := context.Background()
	primary, replica := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	m := newMirror(t, primary, replica, fastOptions(t.TempDir()))
	k := recall.Key{Project: "p", Session: "s1"}
	fork := recall.Key{Project: "p", Session: "s2"}
	sub := recall.Key{Project: "p", Session: "s1", Subpath: "subagents/helper-1"}
	imported := recall.Key{Project: "q", Session: "s3"}

	// Each operation is followed by a flush and a comparison, so one that
	// the mirror fails to replicate cannot hide behind a later one.
	ops := []struct {
		name string
		do   func() error
	}{
		{"append", func() error {
			_, err := m.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("one"), item("two"), item("three"))...)
			return err
		}},
		{"append with usage", func() error {
			e := item("with usage").Entry()
			e.Usage = &recall.Usage{InputTokens: 3, OutputTokens: 4, TotalTokens: 7}
			_, err := m.Append(ctx, k, recall.Guard{}, e)
			return err
		}},
		{"pop", func() error {
			it, err := m.Pop(ctx, k)
			if err == nil && it == nil {
				err = errors.New("nothing popped")
			}
			return err
		}},
		{"auto title", func() error {
			_, err := recall.NewSession(m, k).SetTitle(ctx, "auto title", recall.TitleAuto)
			return err
		}},
		{"user title", func() error {
			_, err := recall.NewSession(m, k).SetTitle(ctx, "user title", recall.TitleUser)
			return err
		}},
		{"archive", func() error {
			_, err := recall.NewSession(m, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)})
			return err
		}},
		{"pin", func() error {
			_, err := recall.NewSession(m, k).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)})
			return err
		}},
		{"labels", func() error {
			_, err := recall.NewSession(m, k).ChangeMeta(ctx, recall.MetaChange{Labels: []string{"a", "b"}, SetLabels: true})
			return err
		}},
		{"compaction", func() error {
			st, err := m.Stat(ctx, k)
			if err != nil {
				return err
			}
			_, err = m.Append(ctx, k, recall.Guard{}, recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: st.LastSeq, Replaced: st.ItemCount, Items: []recall.Item{item("summary")}, Strategy: "test"}))
			return err
		}},
		{"append after compaction", func() error { _, err := m.Append(ctx, k, recall.Guard{}, item("after").Entry()); return err }},
		{"fork", func() error { _, err := recall.NewSession(m, k).Fork(ctx, 0, fork); return err }},
		{"clear", func() error { return recall.NewSession(m, fork).Clear(ctx) }},
		{"subagent record", func() error {
			_, err := m.Append(ctx, sub, recall.Guard{}, item("subagent").Entry())
			return err
		}},
		{"import", func() error {
			_, err := m.Import(ctx, imported, recall.Entry{Seq: 1, Kind: recall.KindItem, Time: storekit.Now(), Data: json.RawMessage(item("imported"))})
			return err
		}},
	}
	for _, op := range ops {
		if err := op.do(); err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		flush(t, m, 10*time.Second)
		if err := diffLogs(t, primary, replica, true); err != nil {
			t.Fatalf("after %s: %v", op.name, err)
		}
	}
	// The metadata the replica derives is the primary's.
	for _, key := range []recall.Key{k, fork, sub, imported} {
		a, _ := primary.Stat(ctx, key)
		b, err := replica.Stat(ctx, key)
		if err != nil {
			t.Fatalf("replica stat %s: %v", key, err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s: primary meta %s, replica %s", key, ja, jb)
		}
	}
	for _, ss := range m.Status(ctx) {
		if ss.Lag != 0 || ss.ReplicatedSeq != ss.PrimarySeq || ss.Pending {
			t.Errorf("status after flush: %+v", ss)
		}
	}
}

// blocking is a replica whose every call hangs until release is closed.
type blocking struct {
	recall.Store
	release chan struct{}
	entered atomic.Int32
}

func (b *blocking) wait(ctx context.Context) error {
	b.entered.Add(1)
	select {
	case <-b.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *blocking) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if err := b.wait(ctx); err != nil {
		return recall.Meta{}, err
	}
	return b.Store.Stat(ctx, key)
}

func (b *blocking) Import(ctx context.Context, key recall.Key, es ...recall.Entry) (int64, error) {
	if err := b.wait(ctx); err != nil {
		return 0, err
	}
	return b.Store.Import(ctx, key, es...)
}

// The write path does no replica I/O: appends complete while every call to
// the replica hangs.
func TestWritesDoNotWaitForAHungReplica(t *testing.T) {
	ctx := context.Background()
	primary := memstore.New(memstore.Options{})
	inner := memstore.New(memstore.Options{})
	replica := &blocking{Store: inner, release: make(chan struct{})}
	m := newMirror(t, primary, replica, fastOptions(""))
	for i := range 50 {
		k := recall.Key{Project: "p", Session: "s" + string(rune('a'+i%5))}
		if _, err := m.Append(ctx, k, recall.Guard{}, item("x").Entry()); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "a worker to call the replica", func() bool { return replica.entered.Load() > 0 })
	if sum := m.Summary(ctx); sum.Lag != 50 || sum.Behind != 5 {
		t.Fatalf("summary while the replica hangs: %+v", sum)
	}
	close(replica.release)
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, inner, true); err != nil {
		t.Fatal(err)
	}
}

// Flush waits for a copy that was under way when its session was removed
// locally: until it ends, it may still write to the replica.
func TestFlushWaitsForCopyOfRemovedSession(t *testing.T) {
	ctx := context.Background()
	primary := memstore.New(memstore.Options{})
	inner := memstore.New(memstore.Options{})
	replica := &blocking{Store: inner, release: make(chan struct{})}
	m := newMirror(t, primary, replica, fastOptions(""))
	k := recall.Key{Project: "p", Session: "s"}
	if _, err := m.Append(ctx, k, recall.Guard{}, item("x").Entry()); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "a worker to call the replica", func() bool { return replica.entered.Load() > 0 })
	if err := m.Remove(ctx, k); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- m.Flush(ctx) }()
	select {
	case err := <-flushed:
		t.Fatalf("Flush returned while a copy still ran: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(replica.release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if sum := m.Summary(ctx); sum.Sessions != 0 {
		t.Fatalf("summary: %+v", sum)
	}
}

// importLog records the imports a store received, to check their order.
type importLog struct {
	recall.Store
	mu  sync.Mutex
	log map[recall.Key][]int64 // first seq of each successful import
}

func (l *importLog) Import(ctx context.Context, key recall.Key, es ...recall.Entry) (int64, error) {
	last, err := l.Store.Import(ctx, key, es...)
	if err == nil && len(es) > 0 {
		l.mu.Lock()
		if l.log == nil {
			l.log = map[recall.Key][]int64{}
		}
		l.log[key] = append(l.log[key], es[0].Seq)
		l.mu.Unlock()
	}
	return last, err
}

// waitCalls waits until the mirror has called replica n more times.
func waitCalls(t *testing.T, replica *faulty, n int64) {
	t.Helper()
	want := replica.calls.Load() + n
	testkit.Eventually(t, 10*time.Second, fmt.Sprintf("%d calls of the replica", n), func() bool { return replica.calls.Load() >= want })
}

func TestOutageBacklogDrainsInOrder(t *testing.T) {
	ctx := context.Background()
	primary := memstore.New(memstore.Options{})
	inner := &importLog{Store: memstore.New(memstore.Options{})}
	replica := newFaulty(inner, 1)
	opts := fastOptions(t.TempDir())
	opts.BatchSize = 7 // several batches per session
	m := newMirror(t, primary, replica, opts)
	keys := []recall.Key{{Project: "p", Session: "a"}, {Project: "p", Session: "b"}, {Project: "q", Session: "c"}}

	// Some history replicates while the replica is up.
	for _, k := range keys {
		if _, err := m.Append(ctx, k, recall.Guard{}, item("before").Entry()); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, m, 10*time.Second)

	replica.setDown(true)
	start := time.Now()
	callsBefore := replica.calls.Load()
	for i := range 150 {
		k := keys[i%len(keys)]
		if _, err := m.Append(ctx, k, recall.Guard{}, item("during").Entry()); err != nil {
			t.Fatalf("append %d during the outage: %v", i, err)
		}
		if i%50 == 0 {
			// let the mirror call the replica (a replication or a probe)
			// meanwhile
			waitCalls(t, replica, 1)
		}
	}
	testkit.Eventually(t, 10*time.Second, "the outage to show in the summary", func() bool { return m.Summary(ctx).ReplicaDown })
	waitCalls(t, replica, 2) // probes go on during the outage
	sum := m.Summary(ctx)
	if !sum.ReplicaDown || sum.Lag != 150 || sum.Behind != 3 || !strings.Contains(sum.LastError, errUnreachable.Error()) {
		t.Fatalf("summary during the outage: %+v", sum)
	}
	failing := 0
	for _, ss := range m.Status(ctx) {
		if ss.Lag != 50 || ss.ReplicatedSeq != 1 || ss.PrimarySeq != 51 || !ss.Pending {
			t.Errorf("status during the outage: %+v", ss)
		}
		if strings.Contains(ss.LastError, errUnreachable.Error()) && !ss.LastErrorAt.IsZero() {
			failing++
		}
	}
	// The sessions queued behind the probing one have not been tried.
	if failing == 0 {
		t.Errorf("no session reports the replica's error")
	}
	// The replica is probed by one session at a time, with a delay that
	// doubles to RetryMax (at least RetryMax/2 with jitter): the calls are
	// bounded by the time elapsed, not by the number of writes.
	calls := replica.calls.Load() - callsBefore
	bound := int64(time.Since(start)/(opts.RetryMax/2)) + 20
	if calls > bound {
		t.Fatalf("%d replica calls in %s of outage; backoff allows at most %d", calls, time.Since(start), bound)
	}

	replica.setDown(false)
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, inner, true); err != nil {
		t.Fatal(err)
	}
	if sum := m.Summary(ctx); sum.ReplicaDown || sum.Lag != 0 || sum.Behind != 0 {
		t.Fatalf("summary after the drain: %+v", sum)
	}
	// Per session, imports arrived in seq order, each continuing the last.
	inner.mu.Lock()
	defer inner.mu.Unlock()
	for k, firsts := range inner.log {
		for i := 1; i < len(firsts); i++ {
			if firsts[i] <= firsts[i-1] {
				t.Errorf("%s: imports out of order: %v", k, firsts)
			}
		}
	}
}

func TestResumesFromCursorFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	primary := &keepOpen{Store: memstore.New(memstore.Options{})}
	inner := memstore.New(memstore.Options{})
	replica := &keepOpen{Store: inner}
	m := newMirror(t, primary, replica, fastOptions(dir))
	var keys []recall.Key
	for i := range 10 {
		k := recall.Key{Project: "p", Session: "s" + string(rune('a'+i))}
		keys = append(keys, k)
		if _, err := m.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("1"), item("2"))...); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if primary.closes.Load() != 1 || replica.closes.Load() != 1 {
		t.Fatalf("shutdown closed primary %d times, replica %d times; want once each", primary.closes.Load(), replica.closes.Load())
	}
	if _, err := m.Append(ctx, keys[0], recall.Guard{}, item("late").Entry()); !errors.Is(err, recall.ErrClosed) {
		t.Fatalf("append after shutdown: %v, want ErrClosed", err)
	}
	if err := m.Shutdown(ctx); !errors.Is(err, recall.ErrClosed) {
		t.Fatalf("second shutdown: %v, want ErrClosed", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "cursors.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"seq": 2`) {
		t.Fatalf("cursor file lacks the positions:\n%s", b)
	}

	// While no mirror runs, one session grows.
	if _, err := primary.Append(ctx, keys[3], recall.Guard{}, item("3").Entry()); err != nil {
		t.Fatal(err)
	}
	counting := newCountingStore(inner)
	m2 := newMirror(t, primary, counting, fastOptions(dir))
	flush(t, m2, 10*time.Second)
	if err := diffLogs(t, primary, inner, true); err != nil {
		t.Fatal(err)
	}
	// Only the session that grew was looked at on the replica: the cursor
	// file spared a round trip for every other one.
	for k, n := range counting.byKey() {
		if k != keys[3] {
			t.Errorf("the restarted mirror made %d replica calls for %s, which the cursor file shows replicated", n, k)
		}
	}
	if counting.byKey()[keys[3]] == 0 {
		t.Errorf("the session that grew was not replicated")
	}
}

// counting counts replica calls per session.
type counting struct {
	recall.Store
	mu sync.Mutex
	n  map[recall.Key]int
}

func newCountingStore(s recall.Store) *counting { return &counting{Store: s, n: map[recall.Key]int{}} }

func (c *counting) add(k recall.Key) { c.mu.Lock(); c.n[k]++; c.mu.Unlock() }

func (c *counting) byKey() map[recall.Key]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[recall.Key]int{}
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

func (c *counting) Stat(ctx context.Context, k recall.Key) (recall.Meta, error) {
	c.add(k)
	return c.Store.Stat(ctx, k)
}

func (c *counting) Entries(ctx context.Context, k recall.Key, after int64, limit int) ([]recall.Entry, error) {
	c.add(k)
	return c.Store.Entries(ctx, k, after, limit)
}

func (c *counting) Import(ctx context.Context, k recall.Key, es ...recall.Entry) (int64, error) {
	c.add(k)
	return c.Store.Import(ctx, k, es...)
}

func (c *counting) Close() error { return nil }

// A primary full of sessions the replica has never seen catches up at start:
// every project, archived sessions and subagent records included.
func TestBacklogAtStartCatchesUp(t *testing.T) {
	ctx := context.Background()
	primary := memstore.New(memstore.Options{})
	for i := range 30 {
		k := recall.Key{Project: []string{"p1", "p2", "p3"}[i%3], Session: fmt.Sprintf("s%02d", i)}
		if _, err := primary.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("a"), item("b"))...); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			if _, err := recall.NewSession(primary, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}); err != nil {
				t.Fatal(err)
			}
		}
		if i%5 == 0 {
			sub := k
			sub.Subpath = "subagents/w-1"
			if _, err := primary.Append(ctx, sub, recall.Guard{}, item("sub").Entry()); err != nil {
				t.Fatal(err)
			}
		}
	}
	replica := memstore.New(memstore.Options{})
	// The replica already holds part of one session: it is continued, not
	// duplicated.
	k0 := recall.Key{Project: "p1", Session: "s00"}
	_, es, _ := primary.Load(ctx, k0)
	if _, err := replica.Import(ctx, k0, es[:1]...); err != nil {
		t.Fatal(err)
	}
	m := newMirror(t, primary, replica, fastOptions(t.TempDir()))
	flush(t, m, 20*time.Second)
	if err := diffLogs(t, primary, replica, true); err != nil {
		t.Fatal(err)
	}
	if sum := m.Summary(ctx); sum.Sessions != 36 || sum.Lag != 0 || sum.Scanning {
		t.Fatalf("summary: %+v", sum)
	}
}

// listGate is a primary whose listing of subagent records waits for
// release: it holds the start scan between listing a session and noting it.
type listGate struct {
	recall.Store
	listed, release chan struct{}
	once            sync.Once
}

func (g *listGate) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	if opts.Parent != "" {
		g.once.Do(func() { close(g.listed); <-g.release })
	}
	return g.Store.List(ctx, project, opts)
}

func (g *listGate) Close() error { return nil }

// A session removed locally while the start scan was listing it is
// dropped, not reported as diverged from the replica's copy, which stays
// (deletes do not propagate by default).
func TestSessionRemovedDuringStartScanIsDropped(t *testing.T) {
	ctx := context.Background()
	mem := memstore.New(memstore.Options{})
	k := recall.Key{Project: "p", Session: "s"}
	if _, err := mem.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("a"), item("b"))...); err != nil {
		t.Fatal(err)
	}
	replica := memstore.New(memstore.Options{})
	_, es, _ := mem.Load(ctx, k)
	if _, err := replica.Import(ctx, k, es...); err != nil {
		t.Fatal(err)
	}
	primary := &listGate{Store: mem, listed: make(chan struct{}), release: make(chan struct{})}
	m := newMirror(t, primary, replica, fastOptions(""))
	<-primary.listed
	if err := m.Remove(ctx, k); err != nil {
		t.Fatal(err)
	}
	close(primary.release)
	flush(t, m, 10*time.Second)
	if st := m.Status(ctx); len(st) != 0 {
		t.Fatalf("status after the removal: %+v", st)
	}
	if _, err := replica.Stat(ctx, k); err != nil {
		t.Fatalf("the replica's copy: %v", err)
	}
}

// A replica that comes back empty after an outage (a Redis without
// persistence) is refilled, idle sessions included.
func TestReplicaThatLostDataIsRefilled(t *testing.T) {
	ctx := context.Background()
	primary := memstore.New(memstore.Options{})
	replica := newFaulty(memstore.New(memstore.Options{}), 2)
	m := newMirror(t, primary, replica, fastOptions(t.TempDir()))
	for i := range 5 {
		k := recall.Key{Project: "p", Session: "idle" + string(rune('0'+i))}
		if _, err := m.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("a"), item("b"))...); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, m, 10*time.Second)

	goDown(t, m, replica, recall.Key{Project: "p", Session: "busy"})
	replica.wipe()
	replica.setDown(false)
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, replica.store(), true); err != nil {
		t.Fatal(err)
	}
}

// The end of an outage is noticed, and the replica refilled, even when the
// session whose failure began it is gone and nothing else is queued.
func TestOutageEndIsProbedWithNothingQueued(t *testing.T) {
	ctx := context.Background()
	primary := memstore.New(memstore.Options{})
	replica := newFaulty(memstore.New(memstore.Options{}), 6)
	m := newMirror(t, primary, replica, fastOptions(""))
	idle, gone := recall.Key{Project: "p", Session: "idle"}, recall.Key{Project: "p", Session: "gone"}
	if _, err := m.Append(ctx, idle, recall.Guard{}, item("a").Entry()); err != nil {
		t.Fatal(err)
	}
	flush(t, m, 10*time.Second)
	goDown(t, m, replica, gone)
	replica.wipe()
	replica.setDown(false)
	if err := m.Remove(ctx, gone); err != nil {
		t.Fatal(err)
	}
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, replica.store(), true); err != nil {
		t.Fatal(err)
	}
	if sum := m.Summary(ctx); sum.ReplicaDown {
		t.Fatalf("the outage is still reported: %+v", sum)
	}
}

// statGate is a replica whose Stat of one key, once on, hangs until the
// call's context ends: a recheck of that session cannot finish.
type statGate struct {
	recall.Store
	key recall.Key
	on  atomic.Bool
}

func (g *statGate) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if g.on.Load() && key == g.key {
		<-ctx.Done()
		return recall.Meta{}, ctx.Err()
	}
	return g.Store.Stat(ctx, key)
}

// A session whose recheck after an outage had not run when the mirror
// stopped is checked again by the next mirror, although the cursor file
// shows it replicated in full: the replica may have lost it.
func TestPendingRecheckSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	primary := &keepOpen{Store: memstore.New(memstore.Options{})}
	replica := newFaulty(memstore.New(memstore.Options{}), 7)
	k, k2 := recall.Key{Project: "p", Session: "idle"}, recall.Key{Project: "p", Session: "busy"}
	gate := &statGate{Store: replica, key: k}
	opts := fastOptions(t.TempDir())
	opts.CallTimeout = time.Minute // the gated Stat ends with the shutdown, not before
	m, err := mirror.New(primary, &keepOpen{Store: gate}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("a"), item("b"))...); err != nil {
		t.Fatal(err)
	}
	flush(t, m, 10*time.Second)

	goDown(t, m, replica, k2)
	replica.wipe()
	gate.on.Store(true)
	replica.setDown(false)
	testkit.Eventually(t, 10*time.Second, "the outage to end and the recheck to start", func() bool {
		if m.Summary(ctx).ReplicaDown {
			return false
		}
		for _, ss := range m.Status(ctx) {
			if ss.Key == k {
				return !ss.Verified
			}
		}
		return false
	})
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := m.Shutdown(sctx); !errors.Is(err, mirror.ErrNotFlushed) {
		t.Fatalf("shutdown with a recheck pending: %v, want ErrNotFlushed", err)
	}
	if _, err := replica.store().Stat(ctx, k); !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("the wiped replica holds %s: %v; the test is broken", k, err)
	}
	sum, saved, err := mirror.ReadStatus(ctx, primary.Store, opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Unchecked != 1 {
		t.Fatalf("cursor file summary: %+v, want 1 unchecked", sum)
	}
	for _, ss := range saved {
		if ss.Key == k && (!ss.Pending || ss.Lag != 0) {
			t.Fatalf("cursor file status of %s: %+v, want pending with no lag", k, ss)
		}
	}

	m2 := newMirror(t, primary, replica, opts)
	flush(t, m2, 10*time.Second)
	if err := diffLogs(t, primary.Store, replica.store(), true); err != nil {
		t.Fatal(err)
	}
}

// Recheck refills a replica that lost data while the mirror saw no error.
func TestRecheck(t *testing.T) {
	ctx := context.Background()
	primary := memstore.New(memstore.Options{})
	replica := newFaulty(memstore.New(memstore.Options{}), 3)
	m := newMirror(t, primary, replica, fastOptions(""))
	for i := range 5 {
		k := recall.Key{Project: "p", Session: "s" + string(rune('0'+i))}
		if _, err := m.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("a"), item("b"))...); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, m, 10*time.Second)
	replica.wipe()
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, replica.store(), true); err == nil {
		t.Fatal("the wiped replica equals the primary before Recheck: the test is broken")
	}
	m.Recheck()
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, replica.store(), true); err != nil {
		t.Fatal(err)
	}
}

func TestDivergedReplicaIsReportedNotOverwritten(t *testing.T) {
	ctx := context.Background()
	primary := memstore.New(memstore.Options{})
	replica := memstore.New(memstore.Options{})
	k := recall.Key{Project: "p", Session: "s"}
	other := recall.Key{Project: "p", Session: "ok"}
	t0 := storekit.Now()
	if _, err := primary.Append(ctx, k, recall.Guard{}, at(t0, recall.ItemEntries(item("mine"), item("mine 2"))...)...); err != nil {
		t.Fatal(err)
	}
	if _, err := primary.Append(ctx, other, recall.Guard{}, item("fine").Entry()); err != nil {
		t.Fatal(err)
	}
	// Someone else wrote a different log under the same key, within the
	// same microsecond.
	if _, err := replica.Append(ctx, k, recall.Guard{}, at(t0, item("theirs").Entry())...); err != nil {
		t.Fatal(err)
	}
	_, theirs, _ := replica.Load(ctx, k)

	m := newMirror(t, primary, replica, fastOptions(""))
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := m.Flush(fctx)
	if !errors.Is(err, mirror.ErrNotFlushed) || fctx.Err() != nil {
		t.Fatalf("flush: %v, want ErrNotFlushed before the deadline", err)
	}
	_, got, _ := replica.Load(ctx, k)
	if err := sameEntries(theirs, got); err != nil {
		t.Fatalf("the diverged replica log was changed: %v", err)
	}
	var found bool
	for _, ss := range m.Status(ctx) {
		switch ss.Key {
		case k:
			found = true
			if !ss.Stuck || !strings.Contains(ss.LastError, mirror.ErrDiverged.Error()) {
				t.Errorf("status of the diverged session: %+v", ss)
			}
		case other:
			if ss.Lag != 0 {
				t.Errorf("the healthy session did not replicate: %+v", ss)
			}
		}
	}
	if !found {
		t.Fatal("the diverged session is missing from Status")
	}
}

func TestDeletesStayLocalByDefault(t *testing.T) {
	ctx := context.Background()
	primary, replica := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	m := newMirror(t, primary, replica, fastOptions(""))
	a, b := recall.Key{Project: "p", Session: "a"}, recall.Key{Project: "p", Session: "b"}
	for _, k := range []recall.Key{a, b} {
		if _, err := m.Append(ctx, k, recall.Guard{}, item("x").Entry()); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, m, 10*time.Second)
	if err := m.Remove(ctx, a); err != nil {
		t.Fatal(err)
	}
	rep, err := recall.Cleanup(ctx, m, recall.CleanupOptions{OlderThan: time.Now().Add(time.Hour), Purge: true})
	if err != nil || len(rep.Removed) != 1 {
		t.Fatalf("cleanup: %+v %v", rep, err)
	}
	flush(t, m, 10*time.Second)
	for _, k := range []recall.Key{a, b} {
		if _, err := replica.Stat(ctx, k); err != nil {
			t.Errorf("the replica lost %s after a local delete: %v", k, err)
		}
	}
	if n := len(m.Status(ctx)); n != 0 {
		t.Errorf("the mirror still tracks %d deleted sessions", n)
	}
}

func TestPropagateDeletes(t *testing.T) {
	ctx := context.Background()
	primary := memstore.New(memstore.Options{})
	replica := newFaulty(memstore.New(memstore.Options{}), 4)
	opts := fastOptions("")
	opts.PropagateDeletes = true
	m := newMirror(t, primary, replica, opts)
	a, b, c := recall.Key{Project: "p", Session: "a"}, recall.Key{Project: "p", Session: "b"}, recall.Key{Project: "p", Session: "c"}
	sub := recall.Key{Project: "p", Session: "a", Subpath: "subagents/x-1"}
	for _, k := range []recall.Key{a, b, c, sub} {
		if _, err := m.Append(ctx, k, recall.Guard{}, item("x").Entry()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := recall.NewSession(m, c).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
		t.Fatal(err)
	}
	flush(t, m, 10*time.Second)

	// Deletes made while the replica is down are owed and replayed.
	replica.setDown(true)
	if err := m.Remove(ctx, a); err != nil {
		t.Fatal(err)
	}
	rep, err := recall.Cleanup(ctx, m, recall.CleanupOptions{OlderThan: time.Now().Add(time.Hour), Purge: true})
	if err != nil || len(rep.Removed) != 1 || rep.Removed[0].Key != b {
		t.Fatalf("cleanup: %+v %v", rep, err)
	}
	testkit.Eventually(t, 10*time.Second, "the outage to be seen", func() bool { return m.Summary(ctx).ReplicaDown })
	if _, err := replica.store().Stat(ctx, a); err != nil {
		t.Fatalf("the replica lost %s while down: %v", a, err)
	}
	replica.setDown(false)
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, replica.store(), true); err != nil {
		t.Fatal(err)
	}
	// A session re-created after its removal replicates afresh.
	if _, err := m.Append(ctx, a, recall.Guard{}, item("again").Entry()); err != nil {
		t.Fatal(err)
	}
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, replica.store(), true); err != nil {
		t.Fatal(err)
	}
}

// Shutdown does not wait out the retry backoff: it tries the replica once
// more at once, flushes if the replica is back, and otherwise returns
// before its deadline.
func TestShutdownDoesNotWaitOutTheBackoff(t *testing.T) {
	for _, back := range []bool{false, true} {
		t.Run(map[bool]string{false: "still down", true: "back up"}[back], func(t *testing.T) {
			ctx := context.Background()
			primary := &keepOpen{Store: memstore.New(memstore.Options{})}
			inner := memstore.New(memstore.Options{})
			down := newFaulty(inner, 5)
			replica := &keepOpen{Store: down}
			down.setDown(true)
			opts := fastOptions(t.TempDir())
			opts.RetryMin, opts.RetryMax = 5*time.Second, time.Minute
			opts.CloseTimeout = time.Hour // the deadline the flush must not wait for
			m, err := mirror.New(primary, replica, opts)
			if err != nil {
				t.Fatal(err)
			}
			k := recall.Key{Project: "p", Session: "s"}
			for range 3 {
				if _, err := m.Append(ctx, k, recall.Guard{}, item("x").Entry()); err != nil {
					t.Fatal(err)
				}
			}
			// Wait until the next retry is due well after a short deadline.
			testkit.Eventually(t, 30*time.Second, "the retry delay to pass 2s", func() bool {
				sum := m.Summary(ctx)
				return sum.ReplicaDown && time.Until(sum.NextAttempt) > 2*time.Second
			})
			down.setDown(!back)
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			err = m.Shutdown(sctx)
			if sctx.Err() != nil {
				t.Fatalf("shutdown waited for its deadline: %v", err)
			}
			if back {
				if err != nil {
					t.Fatalf("shutdown with the replica back: %v", err)
				}
				if err := diffLogs(t, primary.Store, inner, true); err != nil {
					t.Fatal(err)
				}
			} else if !errors.Is(err, mirror.ErrNotFlushed) {
				t.Fatalf("shutdown with the replica down: %v, want ErrNotFlushed", err)
			}
			if primary.closes.Load() != 1 || replica.closes.Load() != 1 {
				t.Fatalf("closes: primary %d, replica %d", primary.closes.Load(), replica.closes.Load())
			}
			if _, err := m.Stat(ctx, k); !errors.Is(err, recall.ErrClosed) {
				t.Fatalf("stat after shutdown: %v", err)
			}
		})
	}
}

func TestNewRejectsNilStores(t *testing.T) {
	if _, err := mirror.New(nil, memstore.New(memstore.Options{}), mirror.Options{}); err == nil {
		t.Fatal("New accepted a nil primary")
	}
}

func TestCorruptCursorFileIsRebuilt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cursors.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	primary, replica := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	k := recall.Key{Project: "p", Session: "s"}
	if _, err := primary.Append(ctx, k, recall.Guard{}, item("x").Entry()); err != nil {
		t.Fatal(err)
	}
	m := newMirror(t, primary, replica, fastOptions(dir))
	flush(t, m, 10*time.Second)
	if err := diffLogs(t, primary, replica, true); err != nil {
		t.Fatal(err)
	}
	if sum := m.Summary(ctx); !strings.Contains(sum.LastError, "cursor file") {
		t.Errorf("the corrupt cursor file is not reported: %+v", sum)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "cursors.json"))
	if !json.Valid(b) {
		t.Fatalf("cursor file still corrupt after close:\n%s", b)
	}
}

// TestTrashReplicates checks that the trash is replicated like any other
// change: a session moved to the trash on the primary, by Trash or by
// Cleanup, is in the replica's trash too, and a restore brings it back
// there; the replica's logs equal the primary's throughout, with the
// replica down in between.
func TestTrashReplicates(t *testing.T) {
	ctx := context.Background()
	primary := memstore.New(memstore.Options{})
	replica := newFaulty(memstore.New(memstore.Options{}), 4)
	m := newMirror(t, primary, replica, fastOptions(""))
	a, b := recall.Key{Project: "p", Session: "a"}, recall.Key{Project: "p", Session: "b"}
	for _, k := range []recall.Key{a, b} {
		if _, err := m.Append(ctx, k, recall.Guard{}, item("x").Entry()); err != nil {
			t.Fatal(err)
		}
	}
	flush(t, m, 10*time.Second)
	inTrash := func(s recall.Store) []recall.Key {
		p, err := s.List(ctx, "", recall.ListOptions{Trashed: true})
		if err != nil {
			t.Fatal(err)
		}
		var keys []recall.Key
		for _, meta := range p.Sessions {
			keys = append(keys, meta.Key)
		}
		return keys
	}

	replica.setDown(true)
	if _, err := recall.NewSession(m, a).Trash(ctx); err != nil {
		t.Fatal(err)
	}
	replica.setDown(false)
	flush(t, m, 10*time.Second)
	if got := inTrash(replica.store()); !slices.Equal(got, []recall.Key{a}) {
		t.Errorf("the replica's trash after Trash: %v, want [%s]", got, a)
	}
	if err := diffLogs(t, primary, replica.store(), true); err != nil {
		t.Fatal(err)
	}

	if _, err := recall.NewSession(m, a).Restore(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := recall.Cleanup(ctx, m, recall.CleanupOptions{OlderThan: time.Now().Add(time.Hour), Project: "p"})
	if err != nil || len(rep.Removed) != 2 {
		t.Fatalf("cleanup to the trash: %+v %v", rep, err)
	}
	if _, err := recall.NewSession(m, b).Restore(ctx); err != nil {
		t.Fatal(err)
	}
	flush(t, m, 10*time.Second)
	if got := inTrash(replica.store()); !slices.Equal(got, []recall.Key{a}) {
		t.Errorf("the replica's trash after Restore, Cleanup and Restore: %v, want [%s]", got, a)
	}
	if err := diffLogs(t, primary, replica.store(), true); err != nil {
		t.Fatal(err)
	}
}
