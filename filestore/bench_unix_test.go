//go:build unix

package filestore_test

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// statAt stats name in the directory d, the floor of List's stat of a log.
func statAt(d *os.File, name string) error {
	var st unix.Stat_t
	return unix.Fstatat(int(d.Fd()), name, &st, 0)
}
