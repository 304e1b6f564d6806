package flock_test

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// lockWaiter reports whether a flock(2) locker is queued in the kernel,
// waiting for path's file: /proc/locks lists each waiter on a line of
// its own marked "->", naming the file's device and inode. seen is false
// when /proc/locks cannot tell.
func lockWaiter(path string) (waiting, seen bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false, false
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return false, false
	}
	ino := fmt.Sprintf(":%d ", st.Ino)
	for line := range strings.Lines(string(locks)) {
		if strings.Contains(line, "-> FLOCK") && strings.Contains(line, ino) {
			return true, true
		}
	}
	return false, true
}
