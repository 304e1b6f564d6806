package filestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/recallkit/recall/internal/durable"
)

// repairTorn moves the torn tail of a log, the bytes from its committed end
// off to size, into a new side file <log>#torn-<n>, then cuts the log at
// off, so the next batch starts on a clean line and never glues onto the
// torn bytes. The caller holds the log's write lock, so the tail is not a
// batch being written: it is what a crashed writer left.
//
// The side file is made durable before the log is cut: a crash in between
// leaves the bytes in both places, never in neither.
func repairTorn(f *os.File, path string, off, size int64) error {
	torn := make([]byte, size-off)
	if _, err := f.ReadAt(torn, off); err != nil {
		return fmt.Errorf("read torn tail: %w", err)
	}
	side, err := createSideFile(path, torn)
	if err != nil {
		return fmt.Errorf("keep torn tail: %w", err)
	}
	if err := f.Truncate(off); err != nil {
		return fmt.Errorf("cut torn tail (kept in %s): %w", side, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("cut torn tail (kept in %s): %w", side, err)
	}
	return nil
}

// createSideFile writes data to the first free <path>#torn-<n>, fsyncs it
// and its directory, and returns its name.
func createSideFile(path string, data []byte) (string, error) {
	for n := 1; ; n++ {
		name := path + "#torn-" + strconv.Itoa(n)
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = durable.SyncDir(filepath.Dir(path))
		}
		if err != nil {
			os.Remove(name)
			return "", err
		}
		return name, nil
	}
}

// tornFiles returns the side files kept for the log at path.
func tornFiles(path string) []string {
	names, _ := filepath.Glob(globEscape(path) + "#torn-*")
	return names
}

// globEscape escapes the pattern characters of a path; the store's own
// names hold none, but its home may.
func globEscape(s string) string {
	var b []byte
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', '\\':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return string(b)
}
