//go:build !linux && !darwin

package durable

import "os"

// SyncData makes the data written to f durable: os.File.Sync, which is
// fsync(2) on unix and FlushFileBuffers on Windows.
func SyncData(f *os.File) error { return f.Sync() }
