package fsys

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/windows"
)

// The system calls on Windows; fsys_unix.go has unix's. A file's
// identity, the inode on unix, is here its NTFS file index, which a file
// keeps across renames and a replaced file changes.

func statOf(fi *windows.ByHandleFileInformation) Stat {
	return Stat{
		Ino:   uint64(fi.FileIndexHigh)<<32 | uint64(fi.FileIndexLow),
		Size:  int64(fi.FileSizeHigh)<<32 | int64(fi.FileSizeLow),
		Mtime: fi.LastWriteTime.Nanoseconds(),
	}
}

// regular reports whether fi describes a regular file.
func regular(fi *windows.ByHandleFileInformation) bool {
	return fi.FileAttributes&(windows.FILE_ATTRIBUTE_DIRECTORY|windows.FILE_ATTRIBUTE_DEVICE) == 0
}

// Fstat stats the open file f; a directory or device is ErrNotRegular.
func Fstat(f *os.File) (Stat, error) {
	var fi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &fi); err != nil {
		return Stat{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if !regular(&fi) {
		return Stat{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: ErrNotRegular}
	}
	return statOf(&fi), nil
}

// statName stats path, following a symbolic link. It opens the file for
// its attributes only, sharing it fully, so it never stands in the way of
// a writer, a rename or a removal.
func statName(path string) (windows.ByHandleFileInformation, error) {
	var fi windows.ByHandleFileInformation
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return fi, err
	}
	h, err := windows.CreateFile(p, windows.FILE_READ_ATTRIBUTES,
		windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_FLAG_BACKUP_SEMANTICS, 0)
	if err != nil {
		return fi, err
	}
	err = windows.GetFileInformationByHandle(h, &fi)
	windows.CloseHandle(h)
	return fi, err
}

// StatPath stats the file at path, following a symbolic link; a directory
// or device is ErrNotRegular.
func StatPath(path string) (Stat, error) {
	fi, err := statName(path)
	if err != nil {
		return Stat{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if !regular(&fi) {
		return Stat{}, &os.PathError{Op: "stat", Path: path, Err: ErrNotRegular}
	}
	return statOf(&fi), nil
}

// StatAt stats name in the open directory d, following a symbolic link,
// and reports whether it is a regular file. Windows has no stat by name
// that returns the file index, so the file is opened for its attributes.
func StatAt(d *os.File, name string) (Stat, bool) {
	fi, err := statName(filepath.Join(d.Name(), name))
	if err != nil || !regular(&fi) {
		return Stat{}, false
	}
	return statOf(&fi), true
}

// stillActive is the exit code GetExitCodeProcess reports for a process
// that is running (STILL_ACTIVE).
const stillActive = 259

// ProcessGone reports whether no process has the ID pid. A process that
// exists but may not be queried (another user's) is not gone.
func ProcessGone(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code != stillActive
}

// RemoveOldTemp removes name, in the directory d, if it was last modified
// more than age ago (a symbolic link is judged by itself).
func RemoveOldTemp(d *os.File, name string, age time.Duration) {
	path := filepath.Join(d.Name(), name)
	fi, err := os.Lstat(path)
	if err != nil || time.Since(fi.ModTime()) < age {
		return
	}
	os.Remove(path)
}

// DirMtime returns the last write time of the directory dir in
// nanoseconds.
func DirMtime(dir string) (int64, error) {
	fi, err := statName(dir)
	if err != nil {
		return 0, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	return fi.LastWriteTime.Nanoseconds(), nil
}

// Unlinked reports whether the open file f no longer has a name.
func Unlinked(f *os.File) (bool, error) {
	var fi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &fi); err != nil {
		return false, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return fi.NumberOfLinks == 0, nil
}

// CPUTime returns the CPU time this process has used, user and system (for
// benchmarks that report it).
func CPUTime() time.Duration {
	var creation, exit, kernel, user windows.Filetime
	if windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	return ticks(kernel) + ticks(user)
}

// ticks converts a Filetime that holds a duration (in 100 ns ticks), not
// a date.
func ticks(ft windows.Filetime) time.Duration {
	return time.Duration(int64(ft.HighDateTime)<<32|int64(ft.LowDateTime)) * 100
}
