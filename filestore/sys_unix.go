//go:build unix

package filestore

import (
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The file store's system calls on unix; sys_windows.go has Windows'.

func statOf(st *unix.Stat_t) fileStat {
	return fileStat{ino: uint64(st.Ino), size: st.Size, mtime: st.Mtim.Nano()}
}

// fstat stats an open log; a directory or device is errNotLog.
func fstat(f *os.File) (fileStat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileStat{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileStat{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: errNotLog}
	}
	return statOf(&st), nil
}

// statPath stats a log by name; a directory or device is errNotLog.
func statPath(path string) (fileStat, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileStat{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fileStat{}, &os.PathError{Op: "stat", Path: path, Err: errNotLog}
	}
	return statOf(&st), nil
}

// statLogs fills in the stat of each log in the directory d, dropping the
// ones that vanished or are not regular files. One stat per log is most of
// List's time; it runs in one goroutine on purpose: stats of one directory
// from two threads contend in the kernel and cost more CPU in all, for
// little or no gain in time.
func statLogs(d *os.File, logs []logFile) []logFile {
	fd := int(d.Fd())
	out := logs[:0]
	for _, lf := range logs {
		var st unix.Stat_t
		name := lf.rel[strings.LastIndexByte(lf.rel, '/')+1:] + logExt
		if unix.Fstatat(fd, name, &st, 0) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			lf.st = statOf(&st)
			out = append(out, lf)
		}
	}
	return out
}

// processGone reports whether no process has the ID pid.
func processGone(pid int) bool {
	return unix.Kill(pid, 0) == unix.ESRCH
}

// removeOldTemp removes name, in the directory d, if it was last modified
// more than age ago (a symbolic link is judged by itself).
func removeOldTemp(d *os.File, name string, age time.Duration) {
	var st unix.Stat_t
	if unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || time.Since(time.Unix(st.Mtim.Unix())) < age {
		return
	}
	unix.Unlinkat(int(d.Fd()), name, 0)
}

// dirMtime returns the modification time of the directory dir in
// nanoseconds: it moves whenever a name in dir is created, removed or
// renamed.
func dirMtime(dir string) (int64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	return st.Mtim.Nano(), nil
}

// unlinked reports whether the open file f no longer has a name: it was
// removed, or another file was renamed over it.
func unlinked(f *os.File) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return st.Nlink == 0, nil
}
