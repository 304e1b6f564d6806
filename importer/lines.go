package importer

import (
	"bufio"
	"bytes"
	"errors"
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

// HomeDir returns the folder a tool keeps its files in: the one the
// environment variable env names when it is set ($CODEX_HOME), else elem
// under the user's home folder (~/.codex).
func HomeDir(env string, elem ...string) (string, error) {
	if dir := os.Getenv(env); dir != "" {
		return dir, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(append([]string{home}, elem...)...), nil
}

// Open opens a transcript for reading: a .zst file is decompressed as it
// is read (Codex may keep its rollouts as .jsonl.zst).
func Open(path string) (io.ReadCloser, error) {
	return open(path, nil)
}

// open is Open, counting in *read (when not nil) the bytes read from the
// file as it is on disk.
func open(path string, read *int64) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var r io.Reader = f
	if read != nil {
		r = &countingReader{r: f, n: read}
	}
	if !strings.HasSuffix(path, ".zst") {
		return struct {
			io.Reader
			io.Closer
		}{r, f}, nil
	}
	dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return zstdFile{dec, f}, nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

// zstdFile is a .zst file open for reading, decompressed.
type zstdFile struct {
	dec *zstd.Decoder
	f   *os.File
}

func (z zstdFile) Read(p []byte) (int, error) {
	n, err := z.dec.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = fmt.Errorf("zstd: %w", err)
	}
	return n, err
}

func (z zstdFile) Close() error {
	z.dec.Close()
	return z.f.Close()
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

// lineReader splits a transcript into lines as it reads it. It holds
// one buffer and the longest line read, never more.
type lineReader struct {
	r    *bufio.Reader
	long []byte // a line longer than the buffer, put together
	off  int64
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 256<<10)}
}

// next returns the next line, and its bytes as read (the newline
// included), valid until the following call; io.EOF after the last.
func (lr *lineReader) next() (Line, []byte, error) {
	raw, err := lr.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		lr.long = append(lr.long[:0], raw...)
		for errors.Is(err, bufio.ErrBufferFull) {
			raw, err = lr.r.ReadSlice('\n')
			lr.long = append(lr.long, raw...)
		}
		raw = lr.long
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return Line{}, nil, err // a line cut by a read error is not a line
	}
	if len(raw) == 0 {
		return Line{}, nil, io.EOF
	}
	l := Line{Bytes: raw, Start: lr.off, End: lr.off + int64(len(raw))}
	lr.off = l.End
	if raw[len(raw)-1] == '\n' {
		l.Bytes = raw[:len(raw)-1]
	} else {
		l.Unterminated = true
	}
	l.Bytes = bytes.TrimSuffix(l.Bytes, []byte("\r"))
	return l, raw, nil
}

// blank reports whether l holds only white space.
func (l Line) blank() bool { return len(bytes.TrimSpace(l.Bytes)) == 0 }
