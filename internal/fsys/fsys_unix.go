//go:build unix

package fsys

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func statOf(st *unix.Stat_t) Stat {
	return Stat{Ino: uint64(st.Ino), Size: st.Size, Mtime: st.Mtim.Nano()}
}

// Fstat stats the open file f; a directory or device is ErrNotRegular.
func Fstat(f *os.File) (Stat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return Stat{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Stat{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: ErrNotRegular}
	}
	return statOf(&st), nil
}

// StatPath stats the file at path, following a symbolic link; a directory
// or device is ErrNotRegular.
func StatPath(path string) (Stat, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return Stat{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Stat{}, &os.PathError{Op: "stat", Path: path, Err: ErrNotRegular}
	}
	return statOf(&st), nil
}

// StatAt stats name in the open directory d, following a symbolic link,
// and reports whether it is a regular file. It is one fstatat(2), the
// cheapest stat there is: a list of many files calls it once a file.
func StatAt(d *os.File, name string) (Stat, bool) {
	var st unix.Stat_t
	if unix.Fstatat(int(d.Fd()), name, &st, 0) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Stat{}, false
	}
	return statOf(&st), true
}

// ProcessGone reports whether no process has the ID pid.
func ProcessGone(pid int) bool {
	return unix.Kill(pid, 0) == unix.ESRCH
}

// RemoveOldTemp removes name, in the directory d, if it was last modified
// more than age ago (a symbolic link is judged by itself).
func RemoveOldTemp(d *os.File, name string, age time.Duration) {
	var st unix.Stat_t
	if unix.Fstatat(int(d.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || time.Since(time.Unix(st.Mtim.Unix())) < age {
		return
	}
	unix.Unlinkat(int(d.Fd()), name, 0)
}

// DirMtime returns the modification time of the directory dir in
// nanoseconds: it moves whenever a name in dir is created, removed or
// renamed.
func DirMtime(dir string) (int64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	return st.Mtim.Nano(), nil
}

// Unlinked reports whether the open file f no longer has a name: it was
// removed, or another file was renamed over it.
func Unlinked(f *os.File) (bool, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return st.Nlink == 0, nil
}

// CPUTime returns the CPU time this process has used, user and system (for
// benchmarks that report it).
func CPUTime() time.Duration {
	var ru unix.Rusage
	if unix.Getrusage(unix.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
