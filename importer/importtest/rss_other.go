//go:build !linux

package importtest

import "os"

// peakRSS is known on Linux only.
func peakRSS(*os.ProcessState) int64 { return 0 }
