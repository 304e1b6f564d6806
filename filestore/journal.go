package filestore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/recallkit/recall/internal/flock"
	"github.com/recallkit/recall/internal/fsys"
)

// Writing the journal: appends under its shared lock, and rewrites
// (compactions) under its exclusive one, which settle the pending logs
// and leave the records in List's order in a sorted section.

// appendJournal appends buf, whole journal lines, to the journal in one
// write, under the journal's shared lock (so a rewrite, which holds the
// exclusive one, never loses it). It starts with a newline: if a crash
// left the journal's last line torn, the lines must not glue onto it (the
// blank line this leaves otherwise is skipped). The caller must not hold
// p.mu.
func (p *projectIndex) appendJournal(buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	p.jfMu.Lock()
	defer p.jfMu.Unlock()
	for range 16 {
		if p.jf == nil {
			f, err := os.OpenFile(p.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			p.jf = f
		}
		if err := flock.LockShared(p.jf); err != nil {
			p.closeJournalLocked()
			return err
		}
		if gone, err := fsys.Unlinked(p.jf); err != nil || gone {
			p.closeJournalLocked() // replaced by a rewrite since it was opened: the new one
			if err != nil {
				return err
			}
			continue
		}
		_, err := p.jf.Write(append([]byte{'\n'}, buf...))
		if keepJournalOpen {
			flock.Unlock(p.jf)
		} else {
			p.closeJournalLocked() // releases the lock
		}
		if err == nil {
			p.mu.Lock()
			p.written += bytes.Count(buf, []byte{'\n'})
			p.mu.Unlock()
		}
		return err
	}
	return fmt.Errorf("%s keeps being replaced", p.path)
}

// keepJournalOpen keeps a process's journal file open between appends,
// saving an open and a close each. Not on Windows, where a file that is
// open cannot be renamed over (a rewrite of the journal).
const keepJournalOpen = runtime.GOOS != "windows"

// closeJournalLocked closes the journal file kept for appends. The caller
// holds p.jfMu.
func (p *projectIndex) closeJournalLocked() {
	if p.jf != nil {
		p.jf.Close()
		p.jf = nil
	}
}

// appendLocked appends buf through f, the journal held with lockJournal.
func (p *projectIndex) appendLocked(f *os.File, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	_, err := f.Write(append([]byte{'\n'}, buf...))
	return err
}

// lockJournal opens the journal, creating it when missing, and takes its
// exclusive lock: no line is appended until f is closed.
func (p *projectIndex) lockJournal() (*os.File, error) {
	for range 16 {
		f, err := os.OpenFile(p.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		if err := flock.Lock(context.Background(), f); err != nil {
			f.Close()
			return nil, err
		}
		if gone, err := fsys.Unlinked(f); err != nil || gone {
			f.Close()
			if err != nil {
				return nil, err
			}
			continue
		}
		return f, nil
	}
	return nil, fmt.Errorf("%s keeps being replaced", p.path)
}

// resolvePending finds out how the changes of the pending logs ended, for
// the logs no writer holds any more: a log whose lock it can take is
// derived under that lock (its writer died mid-way), and a log that is
// gone is gone. It returns the journal lines that say so. The caller
// holds the journal's exclusive lock (so no writer is between its intent
// and its first change with that intent unread) and p.mu.
func (p *projectIndex) resolvePending() []byte {
	var buf []byte
	for rel := range p.pending {
		k, ok := keyOf(p.name, rel)
		if !ok {
			continue
		}
		path := filepath.Join(p.dir, filepath.FromSlash(rel)+logExt)
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if isNotExist(err) {
			delete(p.pending, rel)
			p.delRec(rel)
			buf = appendTombstone(buf, rel)
			continue
		}
		if err != nil {
			continue
		}
		if ok, err := flock.TryLock(f); err != nil || !ok {
			f.Close() // its writer is at work
			continue
		}
		if st, err := fsys.Fstat(f); err == nil {
			if r, err := derive(context.Background(), f, k, rel, st, p.recs[rel]); err == nil {
				delete(p.pending, rel)
				p.setRec(r)
				buf = appendRecord(buf, r)
			}
		}
		f.Close()
	}
	return buf
}

// rewriteLocked replaces the journal with one line per record and an
// intent per pending log; a believable journal (header) starts with the
// #boot header, and one that also vouches for the directory's names (dir)
// says its mtime was dirTime. The records come in List's order, in a
// section a #sorted line announces, so that a new process can read a first
// page from the journal's start (see listHead).
// The caller holds the journal's exclusive lock and p.mu.
func (p *projectIndex) rewriteLocked(header, dir bool, dirTime int64) error {
	dir = header && dir
	var buf []byte
	if header {
		buf = appendControl(buf, "#boot "+fsys.BootID())
	}
	if dir {
		buf = appendControl(buf, "#dir "+strconv.FormatInt(dirTime, 10))
	}
	recs := make([]*record, 0, len(p.recs))
	for _, r := range p.recs {
		recs = append(recs, r)
	}
	slices.SortFunc(recs, listOrder)
	var section []byte
	count := 0
	for _, r := range recs {
		n := len(section)
		if section = appendRecord(section, r); len(section) > n {
			count++ // an undecodable record is not carried over
		}
	}
	buf = appendControl(buf, "#sorted "+strconv.Itoa(len(section))+" "+strconv.Itoa(count))
	buf = append(buf, section...)
	for rel := range p.pending {
		buf = appendMark(buf, rel, lineIntent)
	}
	nf, err := replaceQuick(p.path, buf)
	if err != nil {
		return err
	}
	// The first rewrite of a project in a process removes the journals of
	// earlier index versions (see oldIndexNames): they are never read, and
	// the logs they describe are derived afresh. Only a write does it, so
	// that a List, which rewrites only a journal it could not trust, costs
	// no unlinks.
	if !p.oldGone {
		p.oldGone = true
		for _, name := range oldIndexNames {
			os.Remove(filepath.Join(p.dir, name))
		}
	}
	st, err := fsys.Fstat(nf)
	if err != nil {
		nf.Close()
		p.reset(0) // read it all again next time
		return nil
	}
	if p.jr != nil {
		p.jr.Close()
		p.jr = nil
	}
	if keepJournalOpen {
		p.jr = nf // what it holds up to len(buf) is known
	} else {
		nf.Close()
	}
	p.jIno, p.jOff, p.jLines, p.jTail = st.Ino, int64(len(buf)), bytes.Count(buf, []byte{'\n'}), false
	p.header, p.damaged, p.dirSeen, p.dirTime, p.sorted = header, false, dir, dirTime, count
	p.written = 0
	return nil
}

// racyWindow is how long a directory's mtime may stay the same while
// names in it change: file systems stamp times from a clock that ticks
// (every few milliseconds on Linux, every second or two on older file
// systems), so a log created in the tick of the directory's last change
// leaves its mtime as it was. A journal vouches for the names of its
// directory (#dir) only with an mtime older than that when the names were
// read, as git does for its index's "racily clean" entries: then the names
// read include every change of that mtime's tick, and any later change
// moves the mtime.
const racyWindow = 2 * time.Second

// settled reports whether a directory whose mtime is mtime, read just
// before its names were, may be vouched for by those names. A test of the
// paths a settled directory takes counts every directory as settled
// (testHooks.Settled): it models a List made after the clock moved on.
func (s *Store) settled(mtime int64) bool {
	return s.test.settled() || time.Since(time.Unix(0, mtime)) >= racyWindow
}

// long reports whether the journal, with more lines appended, is due for
// a rewrite: it holds more than twice as many lines as records, or more
// lines after its sorted section than tailAt allows. The caller holds
// p.mu.
func (p *projectIndex) long(more int) bool {
	live := len(p.recs) + len(p.pending)
	lines := p.jLines + more
	return lines > 2*live+256 || lines-p.sorted > tailAt(live)
}

// tailAt is how many lines may follow the sorted section of a journal of
// records records before a rewrite is due: max(1024, records/32), so a
// rewrite of R records every R/32 lines costs 32 record lines per line
// appended. A new process that finds twice that many reads the journal
// whole instead of its head (listHead), and so rewrites it: by then every
// count of the records agrees the journal is long.
func tailAt(records int) int {
	return max(1024, records/32)
}

// compact rewrites the journal when it is long, or whatever its length
// with always, keeping it as trusted as it was. Rewritten, it holds one
// line a record: the lines of records since replaced (an old title, an
// old first prompt) are gone from the file.
func (p *projectIndex) compact(always bool) {
	f, err := p.lockJournal()
	if err != nil {
		return
	}
	defer f.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written = 0
	if p.refresh() != nil || !always && !p.long(0) {
		return
	}
	p.resolvePending() // what it finds goes into the rewrite
	p.rewriteLocked(p.header && !p.damaged && !p.jTail, p.dirSeen, p.dirTime)
}

// drop forgets rel, and with subtree every record under it, and appends
// their tombstones. A remover calls it holding the log's locks, whether or
// not the removal went through: a tombstone for a log still there would
// hide it, so each is checked.
func (p *projectIndex) drop(rel string, subtree bool) {
	var rels []string
	p.mu.Lock()
	for r := range p.recs {
		if r == rel || subtree && len(r) > len(rel) && r[:len(rel)] == rel && r[len(rel)] == '/' {
			rels = append(rels, r)
		}
	}
	if !slices.Contains(rels, rel) {
		rels = append(rels, rel)
	}
	p.mu.Unlock()
	var buf []byte
	for _, r := range rels {
		if _, err := os.Lstat(filepath.Join(p.dir, filepath.FromSlash(r)+logExt)); !isNotExist(err) {
			continue // still there (a removal that failed): its intent stays
		}
		p.mu.Lock()
		p.delRec(r)
		delete(p.loose, r)
		p.mu.Unlock()
		buf = appendTombstone(buf, r)
	}
	p.appendJournal(buf)
}

// maybeCompact compacts the journal once this process has appended
// compactEvery lines to it since it last looked.
func (p *projectIndex) maybeCompact() {
	p.mu.Lock()
	due := p.written >= compactEvery || p.written >= 256 && p.long(p.written)
	p.mu.Unlock()
	if due {
		p.compact(false)
	}
}

// close is called by Store.Close; the journal holds everything already.
func (p *projectIndex) close() {
	p.jfMu.Lock()
	p.closeJournalLocked()
	p.jfMu.Unlock()
	p.mu.Lock()
	if p.jr != nil {
		p.jr.Close()
		p.jr = nil
	}
	p.mu.Unlock()
	p.headMu.Lock()
	p.dropHead()
	p.headMu.Unlock()
}
