//go:build !windows

package durable

import (
	"fmt"
	"os"
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
