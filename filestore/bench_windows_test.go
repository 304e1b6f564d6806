package filestore_test

import (
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/windows"
)

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	return ticks(kernel) + ticks(user)
}

// ticks converts a Filetime that holds a duration (in 100 ns ticks), not
// a date.
func ticks(ft windows.Filetime) time.Duration {
	return time.Duration(int64(ft.HighDateTime)<<32|int64(ft.LowDateTime)) * 100
}

// statAt stats name in the directory d, the floor of List's stat of a log.
func statAt(d *os.File, name string) error {
	_, err := os.Stat(filepath.Join(d.Name(), name))
	return err
}
