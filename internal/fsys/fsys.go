// Package fsys holds the file store's system calls that differ by
// platform: the stat that names a file's identity (the inode on unix, the
// NTFS file index on Windows), whether a file lost its last name, whether a
// process is gone, and the name of the running boot. fsys_unix.go and
// fsys_windows.go have the calls; boot_*.go the boot's name.
//
// It is a leaf of its own so that the checks for macOS and Windows, which
// compile what they read for that platform, read only this package, not
// the file store and everything it imports.
package fsys

import (
	"fmt"
	"os"
)

// Stat is what tells one version of a file from another: the same
// identity, size and modification time.
type Stat struct {
	Ino   uint64 // the inode; on Windows the file index
	Size  int64
	Mtime int64 // nanoseconds since the epoch
}

// ErrNotRegular reports a path that exists but is not a regular file (a
// directory or a device). It wraps os.ErrNotExist: for a caller looking
// for a file, there is none there.
var ErrNotRegular = fmt.Errorf("not a regular file: %w", os.ErrNotExist)
