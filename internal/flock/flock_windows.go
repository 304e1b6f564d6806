package flock

import (
	"errors"
	"math"
	"os"

	"golang.org/x/sys/windows"
)

const lockOp = "LockFileEx"

// lockFileEx locks one byte of f at the largest offset there is. Windows
// byte-range locks are mandatory, not advisory: a lock over bytes of the
// file would make reads of them through other handles fail. No file gets
// that long, so this lock keeps out only other lockers, as flock does
// (bbolt locks the same byte). The handle's close releases it.
func lockFileEx(f *os.File, flags uint32) error {
	ol := &windows.Overlapped{Offset: math.MaxUint32, OffsetHigh: math.MaxUint32}
	return windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, ol)
}

// lock blocks until it holds the exclusive lock on f. (os.File handles
// are synchronous, so LockFileEx waits for the lock.)
func lock(f *os.File) error {
	return lockFileEx(f, windows.LOCKFILE_EXCLUSIVE_LOCK)
}

// lockShared blocks until it holds a shared lock on f's byte.
func lockShared(f *os.File) error {
	return lockFileEx(f, 0)
}

// unlock releases the lock on f's byte.
func unlock(f *os.File) error {
	ol := &windows.Overlapped{Offset: math.MaxUint32, OffsetHigh: math.MaxUint32}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ol)
}

// tryLock takes the exclusive lock on f if it is free, reporting false
// when another handle holds it.
func tryLock(f *os.File) (bool, error) {
	err := lockFileEx(f, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return false, err
}
