//go:build !windows

package durable

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// SyncDir fsyncs a directory, making the creation, rename or removal of
// the names in it durable. (On macOS os.File.Sync is F_FULLFSYNC.)
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}

// ReadOnlyFS reports whether err says the file system is mounted
// read-only.
func ReadOnlyFS(err error) bool {
	return errors.Is(err, syscall.EROFS)
}
