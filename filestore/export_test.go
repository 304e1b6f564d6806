package filestore

import (
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fsys"
)

// IndexStat returns the "<ino> <size> <mtime-ns>" of the log at path, as
// the index writes them.
func IndexStat(path string) (string, error) {
	st, err := fsys.StatPath(path)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d %d %d", int64(st.Ino), st.Size, st.Mtime), nil
}

// Hooks are the switches and counters a test gives the stores it opens
// with OpenHooked (see testHooks).
type Hooks = testHooks

// OpenHooked opens a store as Open does, with a test's hooks: its
// switches, and the counters it shares with the other stores it opened.
func OpenHooked(opts Options, h *Hooks) (*Store, error) {
	s, err := Open(opts)
	if s != nil {
		s.test = h
	}
	return s, err
}

// Rewrite rewrites project's journal as a compaction does: the records in
// List's order in a sorted section, then an intent per pending log.
func Rewrite(s *Store, project string) error {
	p := s.project(project)
	f, err := p.lockJournal()
	if isNotExist(err) {
		return nil // no project yet
	}
	if err != nil {
		return err
	}
	defer f.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.refresh(); err != nil {
		return err
	}
	p.resolvePending()
	return p.rewriteLocked(p.header && !p.damaged && !p.jTail, p.dirSeen, p.dirTime)
}

// AppendIntent appends an intent for the main session k to its project's
// journal, as a writer that died before its first change leaves it.
func AppendIntent(s *Store, k recall.Key) error {
	err := s.project(k.Project).appendJournal(appendMark(nil, k.Session, lineIntent))
	if isNotExist(err) {
		return nil // no project yet
	}
	return err
}

// IndexMaps returns the sizes of a project's in-memory index: its records
// and its map of the last journal line about each log.
func IndexMaps(s *Store, project string) (recs, last int) {
	p := s.project(project)
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.recs), len(p.last)
}
