package filestore

import (
	"context"
	"sync"
)

// Writers of one log are serialised twice: a lock per key inside the
// process, so goroutines queue without tying up threads in flock, and an
// advisory flock on the log itself, which orders writers across processes.
// Readers take neither: they read only committed batches (see scan.go), and
// a batch reaches the file in one write.

// keyLocks hands out one lock per log, created on demand and dropped when
// nobody holds or waits for it, so a long-lived store does not accumulate
// one per session ever touched.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	ch   chan struct{} // holds a token while locked
	refs int
}

// lock takes the lock of name, or gives up when ctx ends. The caller runs
// the returned unlock exactly once.
func (l *keyLocks) lock(ctx context.Context, name string) (unlock func(), err error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*keyLock{}
	}
	k := l.m[name]
	if k == nil {
		k = &keyLock{ch: make(chan struct{}, 1)}
		l.m[name] = k
	}
	k.refs++
	l.mu.Unlock()

	release := func() {
		l.mu.Lock()
		if k.refs--; k.refs == 0 {
			delete(l.m, name)
		}
		l.mu.Unlock()
	}
	select {
	case k.ch <- struct{}{}:
		return func() { <-k.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}
