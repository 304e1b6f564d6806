// Package durable holds the file-system steps that make a change survive
// a power loss, shared by the file store, the memory file and the mirror's
// cursor file.
//
// The system calls differ by platform, one file each: SyncData is
// fdatasync(2) on Linux, fcntl(F_FULLFSYNC) on macOS (its fsync leaves the
// data in the drive's cache), fsync(2) on other unixes and FlushFileBuffers
// on Windows; SyncDir fsyncs the directory on unix and does nothing on
// Windows (see durable_windows.go).
package durable

import (
	"os"
	"path/filepath"
)

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
