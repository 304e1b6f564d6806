//go:build linux

package importtest

import (
	"os"
	"syscall"
)

// peakRSS returns the peak resident memory of an exited process, in bytes.
func peakRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10 // kB on Linux
	}
	return 0
}
