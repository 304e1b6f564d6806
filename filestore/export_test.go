package filestore

import (
	"fmt"
	"time"

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

// TrustedLists returns how many times a project's records were taken from
// its journal alone, without a stat of every log.
func TrustedLists() int64 { return trustedLists.Load() }

// SetPageCheck turns List's stat of the logs of the page it returns on or
// off, and returns the previous setting: off, List shows what the journal
// says.
func SetPageCheck(on bool) bool {
	old := checkPage
	checkPage = on
	return old
}

// SetRacyWindow sets how old a directory's mtime must be for the journal
// to vouch for its names (see racyWindow), and returns the previous
// setting. A test of the paths a settled directory takes sets it to 0: it
// models Lists made after the file system's clock moved on.
func SetRacyWindow(d time.Duration) time.Duration {
	return time.Duration(racyWindow.Swap(int64(d)))
}

// HeadLists returns how many first pages were served from the journal's
// head, sorted section and tail (listHead).
func HeadLists() int64 { return headLists.Load() }

// SetHeadList turns List's read of a first page from the journal's head
// on or off, and returns the previous setting.
func SetHeadList(on bool) bool {
	old := headList
	headList = on
	return old
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
	p.settleLocked()
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
