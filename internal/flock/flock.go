// Package flock takes exclusive advisory file locks (flock(2)) that a
// context can give up on, for the writers that recall serialises across
// processes: session logs and memory files.
package flock

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Lock takes an exclusive advisory lock on f, polling while ctx lives so a
// writer stuck in another process cannot hang this one forever. The lock
// goes with the file descriptor: closing f releases it.
func Lock(ctx context.Context, f *os.File) error {
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
