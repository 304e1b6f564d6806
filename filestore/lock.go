package filestore

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
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

// flock takes an exclusive advisory lock on f, polling while ctx lives so a
// writer stuck in another process cannot hang this one forever. The lock
// goes with the file descriptor: closing f releases it.
func flock(ctx context.Context, f *os.File) error {
	fd := int(f.Fd())
	if ctx.Done() == nil {
		// A context that never ends: block in the kernel, which wakes
		// waiters as soon as the lock is free.
		for {
			err := unix.Flock(fd, unix.LOCK_EX)
			if err == nil {
				return nil
			}
			if !errors.Is(err, unix.EINTR) {
				return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
			}
		}
	}
	wait := 50 * time.Microsecond
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		wait = min(2*wait, 5*time.Millisecond)
	}
}
