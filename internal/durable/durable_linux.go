package durable

import (
	"os"

	"golang.org/x/sys/unix"
)

// SyncData makes the data written to f durable: fdatasync(2), which skips
// the metadata (timestamps) that recovery does not need, but not a size
// change, so an append is covered.
func SyncData(f *os.File) error {
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
	}
	return nil
}
