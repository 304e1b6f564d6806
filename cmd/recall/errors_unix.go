//go:build !windows

package main

import (
	"errors"
	"syscall"
)

// readOnlyFS reports whether err says the file system is mounted
// read-only.
func readOnlyFS(err error) bool {
	return errors.Is(err, syscall.EROFS)
}
