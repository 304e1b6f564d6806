// Package durable holds the file-system steps that make a change survive
// a power loss, shared by the file store, the memory file and the mirror's
// cursor file.
package durable

import (
	"fmt"
	"os"
	"path/filepath"
)

// SyncDir fsyncs a directory, making the creation, rename or removal of
// the names in it durable.
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

// WriteFile replaces (or creates) path with data, atomically and durably:
// a temporary file beside it (named pattern, as os.CreateTemp does) is
// written and fsynced, renamed over path, and the directory is fsynced.
// A crash at any point leaves the old file or the new one, never a mix;
// a temporary file left behind by a crash is harmless.
func WriteFile(path, pattern string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return SyncDir(dir)
}
