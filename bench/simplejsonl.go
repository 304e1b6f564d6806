package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/recallkit/recall"
)

// simpleJSONL is the design recall replaces: one JSONL file per session,
// one item a line. The agent holds each session's history in memory and
// every save re-serialises the whole history and rewrites the file (then
// fsyncs it, so a save is as durable as recall's). Listing parses every
// file in full. It is written the way a careful first version would be,
// and kept generous: the rewrite truncates in place instead of paying for a
// temp file and a rename.
type simpleJSONL struct {
	dir string

	mu      sync.Mutex
	history map[string]*simpleSession
}

type simpleSession struct {
	mu    sync.Mutex
	items []recall.Item
}

func openSimpleJSONL(_ context.Context, dir string) (subject, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &simpleJSONL{dir: dir, history: map[string]*simpleSession{}}, nil
}

func (s *simpleJSONL) path(session string) string {
	return filepath.Join(s.dir, session+".jsonl")
}

// session returns the in-memory history of session, reading its file the
// first time, the way an agent resumes before it goes on.
func (s *simpleJSONL) session(session string) (*simpleSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.history[session]; h != nil {
		return h, nil
	}
	items, err := s.read(session)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	h := &simpleSession{items: items}
	s.history[session] = h
	return h, nil
}

// read parses a session file in full: every line is decoded.
func (s *simpleJSONL) read(session string) ([]recall.Item, error) {
	data, err := os.ReadFile(s.path(session))
	if err != nil {
		return nil, err
	}
	var items []recall.Item
	for line := range bytes.Lines(data) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) == 0 {
			continue
		}
		var it json.RawMessage
		if err := json.Unmarshal(line, &it); err != nil {
			return nil, fmt.Errorf("%s: %w", session, err)
		}
		items = append(items, recall.Item(it))
	}
	return items, nil
}

// seedAt writes a session for W3's set-up, which is not timed: the items'
// bytes as they are (the corpus holds compact JSON, what save would
// produce), without fsync, and with the file's modification time set to
// updated.
func (s *simpleJSONL) seedAt(_ context.Context, session string, items []recall.Item, updated time.Time) error {
	var buf []byte
	for _, it := range items {
		buf = append(append(buf, it...), '\n')
	}
	path := s.path(session)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		return err
	}
	return os.Chtimes(path, updated, updated)
}

// save re-serialises items and rewrites the session file with them.
func (s *simpleJSONL) save(session string, items []recall.Item) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, it := range items {
		if err := enc.Encode(json.RawMessage(it)); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(s.path(session), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (s *simpleJSONL) append(_ context.Context, session string, items []recall.Item) error {
	h, err := s.session(session)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// The harness never changes an item after handing it over, so the
	// history shares them instead of holding a second copy of W3's data.
	h.items = append(h.items, items...)
	return s.save(session, h.items)
}

// seed writes a whole session with one save.
func (s *simpleJSONL) seed(_ context.Context, session string, items []recall.Item) error {
	h, err := s.session(session)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.items = append(h.items, items...)
	return s.save(session, h.items)
}

// load is a resume: a new process reads the session file.
func (s *simpleJSONL) load(_ context.Context, session string, limit int) ([]recall.Item, error) {
	items, err := s.read(session)
	if err != nil {
		return nil, err
	}
	if limit > 0 && len(items) > limit {
		items = items[len(items)-limit:]
	}
	return items, nil
}

func (s *simpleJSONL) fork(_ context.Context, src, dst string) error {
	items, err := s.read(src)
	if err != nil {
		return err
	}
	return s.save(dst, items)
}

func (s *simpleJSONL) pop(_ context.Context, session string) (recall.Item, error) {
	h, err := s.session(session)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(h.items)
	if n == 0 {
		return nil, nil
	}
	last := h.items[n-1]
	h.items = h.items[:n-1]
	return last, s.save(session, h.items)
}

// simpleMeta is what the simple design shows in its session list.
type simpleMeta struct {
	id      string
	title   string
	items   int
	updated time.Time
}

// list reads and parses every session file, then sorts by modification
// time (ties by name, newest first, as session IDs are time ordered).
func (s *simpleJSONL) list(_ context.Context, limit int) ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, err
	}
	var metas []simpleMeta
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		data, err := os.ReadFile(filepath.Join(s.dir, e.Name()))
		if err != nil {
			return nil, err
		}
		m := simpleMeta{id: id, updated: info.ModTime()}
		for line := range bytes.Lines(data) {
			var h lineHead
			if err := json.Unmarshal(line, &h); err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			m.items++
			if m.title == "" && h.Role == "user" {
				m.title = h.text()
			}
		}
		metas = append(metas, m)
	}
	return newestIDs(metas, limit), nil
}

// newestIDs sorts metas newest first and returns the first limit IDs.
func newestIDs(metas []simpleMeta, limit int) []string {
	slices.SortFunc(metas, func(a, b simpleMeta) int {
		if c := b.updated.Compare(a.updated); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	ids := make([]string, 0, min(limit, len(metas)))
	for _, m := range metas[:min(limit, len(metas))] {
		ids = append(ids, m.id)
	}
	return ids
}

func (s *simpleJSONL) close() error { return nil }

// lineHead is what a session picker decodes from a line: who spoke, and
// the text of the first user message for the title.
type lineHead struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []part `json:"content"`
}

func (h lineHead) text() string {
	if len(h.Content) == 0 {
		return ""
	}
	return h.Content[0].Text
}
