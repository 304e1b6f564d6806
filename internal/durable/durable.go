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
	"io"
	"os"
	"path/filepath"
)

// WriteFile replaces (or creates) path with data, atomically and durably:
// a temporary file beside it (named pattern, as os.CreateTemp does) is
// written and fsynced, renamed over path, and the directory is fsynced.
// A crash at any point leaves the old file or the new one, never a mix;
// a temporary file left behind by a crash is harmless.
func WriteFile(path, pattern string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return err
	}
	return Replace(path, tmp, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// Replace replaces (or creates) path with what write writes to tmp, a new
// file beside path that the caller created: tmp is written, fsynced,
// closed and renamed over path, and the directory is fsynced. On failure
// tmp is closed and removed and path is as it was.
func Replace(path string, tmp *os.File, write func(io.Writer) error) error {
	err := write(tmp)
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
	return SyncDir(filepath.Dir(path))
}
