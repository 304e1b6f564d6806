// Package flock takes exclusive advisory file locks that a context can
// give up on, for the writers that recall serialises across processes:
// session logs and memory files. The lock is flock(2) on unix and
// LockFileEx on Windows (flock_unix.go, flock_windows.go).
package flock

import (
	"context"
	"os"
	"time"
)

// Lock takes an exclusive advisory lock on f, polling while ctx lives so a
// writer stuck in another process cannot hang this one forever. The lock
// goes with the open file: closing f releases it.
func Lock(ctx context.Context, f *os.File) error {
	if ctx.Done() == nil {
		// A context that never ends: block in the kernel, which wakes
		// waiters as soon as the lock is free.
		if err := lock(f); err != nil {
			return &os.PathError{Op: lockOp, Path: f.Name(), Err: err}
		}
		return nil
	}
	wait := 50 * time.Microsecond
	for {
		ok, err := tryLock(f)
		if err != nil {
			return &os.PathError{Op: lockOp, Path: f.Name(), Err: err}
		}
		if ok {
			return nil
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

// LockShared blocks until it holds a shared lock on f: shared lockers run
// together, and an exclusive locker (Lock, TryLock) waits for all of them
// and they for it. The index journal's appenders take it, so that a rewrite
// of the journal, which takes the exclusive lock, never loses an append.
func LockShared(f *os.File) error {
	if err := lockShared(f); err != nil {
		return &os.PathError{Op: lockOp, Path: f.Name(), Err: err}
	}
	return nil
}

// TryLock takes the exclusive lock on f if no other open file holds a lock
// on it, and reports whether it did.
func TryLock(f *os.File) (bool, error) {
	ok, err := tryLock(f)
	if err != nil {
		return false, &os.PathError{Op: lockOp, Path: f.Name(), Err: err}
	}
	return ok, nil
}

// Unlock releases the lock held on f, as closing f does.
func Unlock(f *os.File) error {
	if err := unlock(f); err != nil {
		return &os.PathError{Op: lockOp, Path: f.Name(), Err: err}
	}
	return nil
}
