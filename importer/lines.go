package importer

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Files returns the files below path that keep accepts, in the order
// filepath.WalkDir visits them; or path itself when it is a file, whether
// keep accepts it or not, since a file given by name is meant to be read.
// A folder below path that cannot be read is left out, so that one
// unreadable folder does not stop the import of the others; path itself
// must be readable.
func Files(path string, keep func(path string) bool) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return []string{path}, nil
	}
	var files []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == path {
				return err
			}
			return nil // an unreadable folder below path is left out
		}
		if !d.IsDir() && keep(p) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}

// ReadFile reads a transcript whole: a .zst file is decompressed (Codex
// may keep its rollouts as .jsonl.zst).
func ReadFile(path string) ([]byte, error) {
	if !strings.HasSuffix(path, ".zst") {
		return os.ReadFile(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer dec.Close()
	data, err := io.ReadAll(dec)
	if err != nil {
		return nil, fmt.Errorf("%s: zstd: %w", path, err)
	}
	return data, nil
}

// FileTime returns the modification time of path, or the zero time: the
// time of records in a transcript whose lines carry none.
func FileTime(path string) time.Time {
	fi, err := os.Stat(path)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// Line is one line of a transcript.
type Line struct {
	// Bytes is the line without its newline (and without a trailing CR).
	Bytes []byte
	// Start and End are the offsets of the line and just past its newline.
	Start, End int64
	// Unterminated reports a last line without a newline: when it does
	// not decode, it is a line torn by a writer still at work (or killed),
	// which a later import reads whole.
	Unterminated bool
}

// EachLine calls fn for every non-blank line of data, in order.
func EachLine(data []byte, fn func(Line)) {
	for off := 0; off < len(data); {
		l := Line{Start: int64(off)}
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			l.Bytes, l.End, l.Unterminated = data[off:], int64(len(data)), true
			off = len(data)
		} else {
			l.Bytes, l.End = data[off:off+i], int64(off+i+1)
			off += i + 1
		}
		l.Bytes = bytes.TrimSuffix(l.Bytes, []byte("\r"))
		if len(bytes.TrimSpace(l.Bytes)) == 0 {
			continue
		}
		fn(l)
	}
}

// Torn records that line l did not decode: a torn last line is counted as
// "torn" and cut from Data, so no offset ever points past it; any other
// line that does not decode is counted as "malformed" and skipped.
func (t *Transcript) Torn(l Line) {
	if l.Unterminated {
		t.Skip("torn")
		t.Data = t.Data[:l.Start]
		return
	}
	t.Skip("malformed")
}
