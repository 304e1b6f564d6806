package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Head/tail listing: how Claude Code's session picker lists sessions. It
// stats every session file and reads the first and last 64 KiB of each, 32
// files at a time: the head gives the first user message (the title), the
// tail the newest records (summaries, custom titles). Then it sorts by
// modification time.
const (
	headTailChunk = 64 << 10
	headTailWidth = 32
)

// headTail lists the session files that the simple JSONL baseline writes;
// its other operations are the simple JSONL ones, used only to set up the
// data.
type headTail struct {
	*simpleJSONL
}

func openHeadTail(ctx context.Context, dir string) (subject, error) {
	s, err := openSimpleJSONL(ctx, dir)
	if err != nil {
		return nil, err
	}
	return headTail{s.(*simpleJSONL)}, nil
}

func (h headTail) list(_ context.Context, limit int) ([]string, error) {
	ents, err := os.ReadDir(h.dir)
	if err != nil {
		return nil, err
	}
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, headTailWidth)
		mu    sync.Mutex
		metas []simpleMeta
		errs  []error
	)
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			m, err := headTailMeta(filepath.Join(h.dir, e.Name()), id)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			metas = append(metas, m)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return newestIDs(metas, limit), nil
}

// headTailMeta reads one session file's head and tail.
func headTailMeta(path, id string) (simpleMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return simpleMeta{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return simpleMeta{}, err
	}
	m := simpleMeta{id: id, updated: info.ModTime()}
	buf := make([]byte, headTailChunk)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return simpleMeta{}, err
	}
	for _, line := range completeLines(buf[:n], n < headTailChunk, false) {
		var h lineHead
		if json.Unmarshal(line, &h) == nil && h.Role == "user" {
			m.title = h.text()
			break
		}
	}
	if size := info.Size(); size > headTailChunk {
		n, err = f.ReadAt(buf, size-headTailChunk)
		if err != nil && err != io.EOF {
			return simpleMeta{}, err
		}
		// The tail's records are decoded: the picker looks for the newest
		// summary and title records among them. Decoding into a small
		// struct keeps the baseline as cheap as it can honestly be.
		for _, line := range completeLines(buf[:n], true, true) {
			var rec lineHead
			_ = json.Unmarshal(line, &rec)
		}
	}
	return m, nil
}

// completeLines splits a chunk cut out of a JSONL file into its whole lines:
// a chunk from the middle of a file starts (cutStart) or ends (unless
// atEnd) inside a line, and that part is dropped.
func completeLines(chunk []byte, atEnd, cutStart bool) [][]byte {
	if cutStart {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			return nil
		}
		chunk = chunk[i+1:]
	}
	if !atEnd {
		i := bytes.LastIndexByte(chunk, '\n')
		if i < 0 {
			return nil
		}
		chunk = chunk[:i+1]
	}
	var lines [][]byte
	for line := range bytes.Lines(chunk) {
		if line = bytes.TrimSuffix(line, []byte("\n")); len(line) > 0 {
			lines = append(lines, line)
		}
	}
	return lines
}
