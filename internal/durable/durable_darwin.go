package durable

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// SyncData makes the data written to f durable: fcntl(F_FULLFSYNC). On
// macOS fsync(2) only hands the data to the drive, which may keep it in a
// volatile cache; F_FULLFSYNC also flushes that cache.
//
// File systems that cannot do it (SMB and other network mounts) refuse it
// with ENOTSUP or the like; then fsync(2) is the best there is. Any other
// failure is returned as it is and not retried with fsync, which could
// report success for data whose write-back just failed.
func SyncData(f *os.File) error {
	fd := f.Fd()
	for {
		_, err := unix.FcntlInt(fd, unix.F_FULLFSYNC, 0)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EOPNOTSUPP),
			errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EINVAL):
			return fsync(f)
		default:
			return &os.PathError{Op: "fcntl F_FULLFSYNC", Path: f.Name(), Err: err}
		}
	}
}

// fsync is a plain fsync(2): os.File.Sync would try F_FULLFSYNC again.
func fsync(f *os.File) error {
	for {
		err := unix.Fsync(int(f.Fd()))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fsync", Path: f.Name(), Err: err}
		}
		return nil
	}
}
