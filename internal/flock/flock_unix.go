//go:build unix

package flock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

const lockOp = "flock"

// lock blocks until it holds flock(LOCK_EX) on f.
func lock(f *os.File) error {
	fd := int(f.Fd())
	for {
		err := unix.Flock(fd, unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// tryLock takes flock(LOCK_EX) on f if it is free, reporting false when
// another open file holds it (or a signal cut the call short).
func tryLock(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, unix.EWOULDBLOCK) || errors.Is(err, unix.EINTR) {
		return false, nil
	}
	return false, err
}

// lockShared blocks until it holds flock(LOCK_SH) on f.
func lockShared(f *os.File) error {
	fd := int(f.Fd())
	for {
		err := unix.Flock(fd, unix.LOCK_SH)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// unlock releases f's flock.
func unlock(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}
