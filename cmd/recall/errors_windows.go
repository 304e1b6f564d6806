package main

import (
	"errors"

	"golang.org/x/sys/windows"
)

// readOnlyFS reports whether err says the volume is write-protected, the
// nearest Windows has to a read-only mount. (syscall.EROFS exists on
// Windows, but no system call returns it.)
func readOnlyFS(err error) bool {
	return errors.Is(err, windows.ERROR_WRITE_PROTECT)
}
