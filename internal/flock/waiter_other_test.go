//go:build !linux

package flock_test

// lockWaiter cannot see the kernel's queue of lockers here: it reports
// that it cannot tell.
func lockWaiter(path string) (waiting, seen bool) { return false, false }
