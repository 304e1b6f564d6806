package durable

import (
	"errors"

	"golang.org/x/sys/windows"
)

// SyncDir does nothing on Windows, where a directory cannot be opened for
// FlushFileBuffers. It need not: NTFS journals its metadata, so a file's
// creation or removal, and the rename that os.Rename makes with
// MoveFileEx(MOVEFILE_REPLACE_EXISTING), is durable once the journal is,
// without a flush of the directory.
func SyncDir(dir string) error { return nil }

// ReadOnlyFS reports whether err says the volume is write-protected, the
// nearest Windows has to a read-only mount. (syscall.EROFS exists on
// Windows, but no system call returns it.)
func ReadOnlyFS(err error) bool {
	return errors.Is(err, windows.ERROR_WRITE_PROTECT)
}
