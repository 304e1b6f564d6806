package filestore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"

	"github.com/recallkit/recall/internal/durable"
	"github.com/recallkit/recall/internal/flock"
	"github.com/recallkit/recall/internal/fsys"
)

var errNotDir = syscall.ENOTDIR

// mkdirDurable creates dir and any missing parents, fsyncing the parent of
// each directory it creates, so a file later made durable in dir cannot be
// lost with a directory entry that never reached the disk.
func mkdirDurable(dir string, perm os.FileMode) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &os.PathError{Op: "mkdir", Path: dir, Err: errNotDir}
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirDurable(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil {
		if errors.Is(err, os.ErrExist) {
			if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
				return nil // made by a concurrent writer
			}
		}
		return err
	}
	return durable.SyncDir(parent)
}

var tmpCounter atomic.Uint64

// tempName returns a name beside path for a file being prepared. It holds
// a '#', so it can never be mistaken for a log.
func tempName(path string) string {
	return path + "#tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(tmpCounter.Add(1), 10)
}

// createAtomic makes a new file at path holding data, or fails with an
// error wrapping os.ErrExist when path exists: temp file, fsync, link into
// place (link never replaces an existing name, unlike rename), fsync of the
// directory. Readers see either no file or the whole of it. The stat
// returned is the file's as this call wrote it, taken before anyone else
// could open it.
//
// The file comes back open for appending with its flock held, taken
// before the link: no other writer can change the new log before its
// creator has told the index (see index.go). On Windows, where an open
// file's name cannot go, the file is closed and nil returned; the index
// is never believed there without a stat of each log.
func createAtomic(path string, data []byte) (*os.File, fsys.Stat, error) {
	if err := mkdirDurable(filepath.Dir(path), 0o700); err != nil {
		return nil, fsys.Stat{}, err
	}
	tmp := tempName(path)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fsys.Stat{}, err
	}
	fail := func(err error) (*os.File, fsys.Stat, error) {
		f.Close()
		os.Remove(tmp)
		return nil, fsys.Stat{}, err
	}
	if err := flock.Lock(context.Background(), f); err != nil { // a new file: free
		return fail(err)
	}
	if _, err := f.Write(data); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	st, err := fsys.Fstat(f)
	if err != nil {
		return fail(err)
	}
	if runtime.GOOS == "windows" {
		f.Close()
		f = nil
	}
	err = os.Link(tmp, path)
	os.Remove(tmp)
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, fsys.Stat{}, err
	}
	if err := durable.SyncDir(filepath.Dir(path)); err != nil {
		return f, st, err
	}
	return f, st, nil
}

// replaceQuick replaces (or creates) path with data through a temp file
// and a rename, with no fsync: for the index journal, which a new boot
// never believes (see index.go), so a power failure that loses the rename
// or the file's data costs a rebuild, nothing more. Readers see the old
// file or the new one whole. It returns the new file, open for reading.
func replaceQuick(path string, data []byte) (*os.File, error) {
	tmp := tempName(path)
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return nil, err
	}
	if runtime.GOOS == "windows" {
		f.Close() // an open file cannot be renamed there
		f = nil
	}
	if err := os.Rename(tmp, path); err != nil {
		if f != nil {
			f.Close()
		}
		os.Remove(tmp)
		return nil, err
	}
	if f == nil {
		return os.Open(path)
	}
	return f, nil
}
