package filestore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/windows"
)

// The file store's system calls on Windows; sys_unix.go has unix's. A
// log's identity, the inode on unix, is here its NTFS file index, which a
// file keeps across renames and a replaced log changes.

func statOf(fi *windows.ByHandleFileInformation) fileStat {
	return fileStat{
		ino:   uint64(fi.FileIndexHigh)<<32 | uint64(fi.FileIndexLow),
		size:  int64(fi.FileSizeHigh)<<32 | int64(fi.FileSizeLow),
		mtime: fi.LastWriteTime.Nanoseconds(),
	}
}

// regular reports whether fi describes a regular file.
func regular(fi *windows.ByHandleFileInformation) bool {
	return fi.FileAttributes&(windows.FILE_ATTRIBUTE_DIRECTORY|windows.FILE_ATTRIBUTE_DEVICE) == 0
}

// fstat stats an open log; a directory or device is errNotLog.
func fstat(f *os.File) (fileStat, error) {
	var fi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &fi); err != nil {
		return fileStat{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if !regular(&fi) {
		return fileStat{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: errNotLog}
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

// statPath stats a log by name; a directory or device is errNotLog.
func statPath(path string) (fileStat, error) {
	fi, err := statName(path)
	if err != nil {
		return fileStat{}, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	if !regular(&fi) {
		return fileStat{}, &os.PathError{Op: "stat", Path: path, Err: errNotLog}
	}
	return statOf(&fi), nil
}

// statLogs fills in the stat of each log in the directory d, dropping the
// ones that vanished or are not regular files. Windows has no stat by
// name that returns the file index, so each log is opened for its
// attributes.
func statLogs(d *os.File, logs []logFile) []logFile {
	out := logs[:0]
	for _, lf := range logs {
		name := lf.rel[strings.LastIndexByte(lf.rel, '/')+1:] + logExt
		if fi, err := statName(filepath.Join(d.Name(), name)); err == nil && regular(&fi) {
			lf.st = statOf(&fi)
			out = append(out, lf)
		}
	}
	return out
}

// stillActive is the exit code GetExitCodeProcess reports for a process
// that is running (STILL_ACTIVE).
const stillActive = 259

// processGone reports whether no process has the ID pid. A process that
// exists but may not be queried (another user's) is not gone.
func processGone(pid int) bool {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, windows.ERROR_INVALID_PARAMETER)
	}
	defer windows.CloseHandle(h)
	var code uint32
	return windows.GetExitCodeProcess(h, &code) == nil && code != stillActive
}

// removeOldTemp removes name, in the directory d, if it was last modified
// more than age ago (a symbolic link is judged by itself).
func removeOldTemp(d *os.File, name string, age time.Duration) {
	path := filepath.Join(d.Name(), name)
	fi, err := os.Lstat(path)
	if err != nil || time.Since(fi.ModTime()) < age {
		return
	}
	os.Remove(path)
}

// dirMtime returns the last write time of the directory dir in
// nanoseconds.
func dirMtime(dir string) (int64, error) {
	fi, err := statName(dir)
	if err != nil {
		return 0, &os.PathError{Op: "stat", Path: dir, Err: err}
	}
	return fi.LastWriteTime.Nanoseconds(), nil
}

// unlinked reports whether the open file f no longer has a name.
func unlinked(f *os.File) (bool, error) {
	var fi windows.ByHandleFileInformation
	if err := windows.GetFileInformationByHandle(windows.Handle(f.Fd()), &fi); err != nil {
		return false, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return fi.NumberOfLinks == 0, nil
}
