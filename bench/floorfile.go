package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/recallkit/recall"
)

// fileFloor is the physical floor of a file store: what the disk and the
// kernel cost with no store around them. Every operation is the least a
// correct JSONL store could do:
//
//   - append: one write of the items' bytes on an open O_APPEND file, then
//     fsync (the bare write+fsync loop);
//   - load: read the file, split it into lines, json.Valid each line (the
//     last n items: read 64 KiB blocks back from the end until n lines are
//     in);
//   - list: readdir plus a stat of every file, nothing read, nothing sorted;
//   - fork: read the file, write a copy, fsync it;
//   - pop: read the last block to find the last line, cut it off with
//     ftruncate, fsync.
type fileFloor struct {
	dir string
	// listDir is the directory list reads, when not dir: the scale
	// workloads list the folder of recall's file store itself.
	listDir string
	// sync makes a write durable; fsync (os.File.Sync) when nil.
	sync func(*os.File) error

	mu    sync.Mutex
	files map[string]*os.File
}

func openFileFloor(_ context.Context, dir string) (subject, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &fileFloor{dir: dir, files: map[string]*os.File{}}, nil
}

func (f *fileFloor) path(session string) string {
	return filepath.Join(f.dir, session+".jsonl")
}

// file returns session's file, opened for appending; a bare loop keeps it
// open.
func (f *fileFloor) file(session string) (*os.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fd := f.files[session]; fd != nil {
		return fd, nil
	}
	fd, err := os.OpenFile(f.path(session), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	f.files[session] = fd
	return fd, nil
}

func (f *fileFloor) append(_ context.Context, session string, items []recall.Item) error {
	fd, err := f.file(session)
	if err != nil {
		return err
	}
	var buf []byte
	for _, it := range items {
		buf = append(buf, it...)
		buf = append(buf, '\n')
	}
	if _, err := fd.Write(buf); err != nil {
		return err
	}
	return f.syncFile(fd)
}

func (f *fileFloor) syncFile(fd *os.File) error {
	if f.sync != nil {
		return f.sync(fd)
	}
	return fd.Sync()
}

func (f *fileFloor) load(_ context.Context, session string, limit int) ([]recall.Item, error) {
	if limit > 0 {
		return f.tail(session, limit)
	}
	data, err := os.ReadFile(f.path(session))
	if err != nil {
		return nil, err
	}
	return validLines(data, 0)
}

// tail reads blocks back from the end of the file until it holds limit
// whole lines.
func (f *fileFloor) tail(session string, limit int) ([]recall.Item, error) {
	fd, err := os.Open(f.path(session))
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	info, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	size := info.Size()
	var data []byte
	for off := size; off > 0; {
		n := min(int64(headTailChunk), off)
		off -= n
		block := make([]byte, n)
		if _, err := fd.ReadAt(block, off); err != nil && err != io.EOF {
			return nil, err
		}
		data = append(block, data...)
		// limit lines need limit+1 newlines when the block starts inside
		// a line (the file ends with a newline).
		if off == 0 || bytes.Count(data, []byte("\n")) > limit {
			break
		}
	}
	return validLines(data, limit)
}

// validLines splits data into lines and checks each with json.Valid; with
// limit > 0 it keeps the last limit whole lines (data may start inside a
// line).
func validLines(data []byte, limit int) ([]recall.Item, error) {
	var lines []recall.Item
	for line := range bytes.Lines(data) {
		lines = append(lines, recall.Item(bytes.TrimSuffix(line, []byte("\n"))))
	}
	if limit > 0 && len(lines) > limit {
		lines = lines[len(lines)-limit:]
	}
	for i, line := range lines {
		if !json.Valid(line) {
			return nil, fmt.Errorf("line %d of the last %d: invalid JSON", i, len(lines))
		}
	}
	return lines, nil
}

func (f *fileFloor) list(context.Context, int) ([]string, error) {
	dir := f.dir
	if f.listDir != "" {
		dir = f.listDir
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	ents, err := d.ReadDir(-1) // in directory order: os.ReadDir would sort
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(ents))
	for _, e := range ents {
		if _, err := e.Info(); err != nil {
			return nil, err
		}
		ids = append(ids, e.Name())
	}
	return ids, nil
}

func (f *fileFloor) fork(_ context.Context, src, dst string) error {
	data, err := os.ReadFile(f.path(src))
	if err != nil {
		return err
	}
	fd, err := os.OpenFile(f.path(dst), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := fd.Write(data); err != nil {
		fd.Close()
		return err
	}
	if err := fd.Sync(); err != nil {
		fd.Close()
		return err
	}
	return fd.Close()
}

func (f *fileFloor) pop(_ context.Context, session string) (recall.Item, error) {
	fd, err := f.file(session)
	if err != nil {
		return nil, err
	}
	info, err := fd.Stat()
	if err != nil {
		return nil, err
	}
	size := info.Size()
	if size == 0 {
		return nil, nil
	}
	n := min(int64(headTailChunk), size)
	block := make([]byte, n)
	if _, err := fd.ReadAt(block, size-n); err != nil && err != io.EOF {
		return nil, err
	}
	// The workloads' items are at most 2,000 bytes, so the last line is
	// always inside the last block.
	body := bytes.TrimSuffix(block, []byte("\n"))
	start := bytes.LastIndexByte(body, '\n') + 1
	last := slices.Clone(body[start:])
	if err := fd.Truncate(size - n + int64(start)); err != nil {
		return nil, err
	}
	return recall.Item(last), f.syncFile(fd)
}

func (f *fileFloor) close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var first error
	for _, fd := range f.files {
		if err := fd.Close(); err != nil && first == nil {
			first = err
		}
	}
	f.files = nil
	return first
}
