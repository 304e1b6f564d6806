package mirror_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// errUnreachable is what the faulty store returns for a call it fails: an
// error that is none of recall's sentinels, like a refused connection.
var errUnreachable = errors.New("faulty: replica unreachable")

// faulty wraps a store and fails calls on demand: all of them while down,
// or each with probability rate, either before the call reaches the store
// or after it (the store did it, the caller hears an error: a lost reply).
// wipe replaces the store with an empty one, like a Redis that restarts
// without persistence.
type faulty struct {
	mu    sync.Mutex
	inner recall.Store
	down  bool
	rate  float64
	rng   *rand.Rand
	// calls and failed count calls to the store and calls failed.
	calls, failed atomic.Int64
}

var (
	_ recall.Store           = (*faulty)(nil)
	_ storekit.Cleaner       = (*faulty)(nil)
	_ storekit.ProjectLister = (*faulty)(nil)
)

func newFaulty(inner recall.Store, seed uint64) *faulty {
	return &faulty{inner: inner, rng: rand.New(rand.NewPCG(seed, 1))}
}

func (f *faulty) setDown(down bool) { f.mu.Lock(); f.down = down; f.mu.Unlock() }
func (f *faulty) setRate(r float64) { f.mu.Lock(); f.rate = r; f.mu.Unlock() }

// wipe drops everything the store holds.
func (f *faulty) wipe() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inner.Close()
	f.inner = memstore.New(memstore.Options{})
}

// store returns the wrapped store without faults, for checks.
func (f *faulty) store() recall.Store { f.mu.Lock(); defer f.mu.Unlock(); return f.inner }

// call runs op on the wrapped store unless a fault hits it.
func call[T any](f *faulty, op func(recall.Store) (T, error)) (T, error) {
	f.calls.Add(1)
	f.mu.Lock()
	inner, down := f.inner, f.down
	before := !down && f.rate > 0 && f.rng.Float64() < f.rate/2
	after := !down && f.rate > 0 && f.rng.Float64() < f.rate/2
	f.mu.Unlock()
	var zero T
	if down || before {
		f.failed.Add(1)
		return zero, errUnreachable
	}
	v, err := op(inner)
	if after && err == nil {
		f.failed.Add(1)
		return zero, errUnreachable
	}
	return v, err
}

func (f *faulty) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	return call(f, func(s recall.Store) (int64, error) { return s.Append(ctx, key, guard, entries...) })
}

type view struct {
	live []recall.LiveItem
	last int64
}

func (f *faulty) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	v, err := call(f, func(s recall.Store) (view, error) {
		live, last, err := s.Items(ctx, key, limit)
		return view{live, last}, err
	})
	return v.live, v.last, err
}

func (f *faulty) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	return call(f, func(s recall.Store) (recall.Item, error) { return s.Pop(ctx, key) })
}

func (f *faulty) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	return call(f, func(s recall.Store) (recall.Meta, error) { return s.Stat(ctx, key) })
}

type loaded struct {
	meta    recall.Meta
	entries []recall.Entry
}

func (f *faulty) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	l, err := call(f, func(s recall.Store) (loaded, error) {
		m, es, err := s.Load(ctx, key)
		return loaded{m, es}, err
	})
	return l.meta, l.entries, err
}

func (f *faulty) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	return call(f, func(s recall.Store) ([]recall.Entry, error) { return s.Entries(ctx, key, after, limit) })
}

func (f *faulty) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	return call(f, func(s recall.Store) (recall.Page, error) { return s.List(ctx, project, opts) })
}

func (f *faulty) Projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	return call(f, func(s recall.Store) ([]recall.ProjectInfo, error) { return recall.Projects(ctx, s) })
}

func (f *faulty) Remove(ctx context.Context, key recall.Key) error {
	_, err := call(f, func(s recall.Store) (struct{}, error) { return struct{}{}, s.Remove(ctx, key) })
	return err
}

func (f *faulty) Cleanup(ctx context.Context, opts recall.CleanupOptions) (recall.CleanupReport, error) {
	return call(f, func(s recall.Store) (recall.CleanupReport, error) { return recall.Cleanup(ctx, s, opts) })
}

func (f *faulty) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	return call(f, func(s recall.Store) (int64, error) { return s.Import(ctx, key, entries...) })
}

func (f *faulty) Close() error { return f.store().Close() }
