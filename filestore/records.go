package filestore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fsys"
	"github.com/recallkit/recall/storekit"
)

// The records of a project's logs, as List and the search index's
// catch-up see them: taken from the journal when it can be believed
// (trusted), otherwise checked against the directory (check) and written
// back to the journal (writeBack).

// logFile is a log found on disk.
type logFile struct {
	rel string
	st  fsys.Stat
}

// readLogDir lists the *.jsonl files of dir/sub, descending depth levels
// of subdirectories, with their stats when stat is set. rel names are
// sub-relative, '/'-separated. It stops with ctx's error, checked before
// each directory, when ctx ends.
func readLogDir(ctx context.Context, dir, sub string, depth int, stat bool) ([]logFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := os.Open(filepath.Join(dir, filepath.FromSlash(sub)))
	if err != nil {
		if isNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var own, below []logFile
	for _, e := range ents {
		name := e.Name()
		if strings.IndexByte(name, '#') >= 0 {
			sweepTemp(d, name) // the store's own files; a dead writer's temp goes
			continue
		}
		t := e.Type()
		if t.IsDir() {
			if depth > 0 {
				more, err := readLogDir(ctx, dir, path.Join(sub, name), depth-1, stat)
				if err != nil {
					return nil, err
				}
				below = append(below, more...)
			}
			continue
		}
		if strings.HasSuffix(name, logExt) && (t.IsRegular() || t&os.ModeSymlink != 0) {
			rel := strings.TrimSuffix(name, logExt)
			if sub != "" {
				rel = sub + "/" + rel
			}
			own = append(own, logFile{rel: rel})
		}
	}
	if stat {
		// One stat per log is most of List's time; it runs in one
		// goroutine on purpose: stats of one directory from two threads
		// contend in the kernel and cost more CPU in all, for little or no
		// gain in time. What vanished or is not a regular file is dropped.
		kept := own[:0]
		for _, lf := range own {
			var ok bool
			if lf.st, ok = fsys.StatAt(d, lf.rel[strings.LastIndexByte(lf.rel, '/')+1:]+logExt); ok {
				kept = append(kept, lf)
			}
		}
		own = kept
	}
	return append(own, below...), nil
}

// freshRecords is records without byStat.
func (s *Store) freshRecords(ctx context.Context, p *projectIndex, parent string) ([]*record, error) {
	recs, _, err := s.records(ctx, p, parent, nil)
	return recs, err
}

// trust is how far the journal can be believed as it stands (believe).
type trust int

const (
	journalBelieved trust = iota // List may take it as it is
	journalDirMoved              // believable, but a name came or went in the directory since its #dir
	journalDoubted               // no header of this boot, damage, an older writer: every log is checked
)

// records returns an up-to-date record of every log of the project's main
// sessions (parent empty) or of the subagent records under parent.
//
// For main sessions it believes the journal when it can (trusted): no log
// is read or stat'ed but the pending ones. When only the directory moved,
// it reads the directory's names and derives just the logs the journal
// does not know. Otherwise, and for subagent records, it reads the
// directory, stats every log and re-derives the ones whose record is
// stale (usually from the record's committed end). What it derived goes
// back to the journal (writeBack). byStat reports that every record
// returned was just checked against its log's stat.
//
// With a listing (sel), a believed journal gives the main sessions that
// listing can show and the pending logs, which the caller filters: the
// pinned ones, read from the project's set of pinned records, or the
// first sel.n that match from sel's cursor on, walked in List's order, so
// a page costs O(page) rather than O(sessions). The other ways return
// every record as without it.
func (s *Store) records(ctx context.Context, p *projectIndex, parent string, sel *listing) (recs []*record, byStat bool, err error) {
	if parent == "" {
		recs, state, err := s.trusted(ctx, p, sel)
		if err != nil || state == journalBelieved {
			return recs, false, err
		}
		return s.check(ctx, p, "", state == journalDoubted)
	}
	return s.check(ctx, p, parent, true)
}

// check is records reading the directory: with stat, every log's stat is
// checked against its record; without, only the names are (the journal is
// believable, and its records need no check).
func (s *Store) check(ctx context.Context, p *projectIndex, parent string, stat bool) (recs []*record, byStat bool, err error) {
	// Read the journal while the directory is read and stat'ed: on a cold
	// start both take a while, and they are independent.
	var refreshed sync.WaitGroup
	var jIno uint64
	var jOff, jSeq int64
	refreshed.Go(func() {
		p.mu.Lock()
		p.refresh() // a journal that cannot be read only costs re-derivations
		jIno, jOff, jSeq = p.jIno, p.jOff, p.lineSeq
		p.beginCheck(jSeq) // writeBack compares last with jSeq
		p.mu.Unlock()
	})
	defer func() {
		refreshed.Wait()
		p.endCheck(jSeq)
	}()
	dirTime, dirErr := fsys.DirMtime(p.dir) // before the directory is read
	dirOK := dirErr == nil && s.settled(dirTime)
	var logs []logFile
	if parent == "" {
		logs, err = readLogDir(ctx, p.dir, "", 0, stat)
	} else {
		logs, err = readLogDir(ctx, p.dir, parent, 8, true)
	}
	refreshed.Wait()
	if err != nil {
		return nil, false, err
	}
	out := make([]*record, 0, len(logs))
	var stale []logFile
	var prev []*record
	var confirmed []*record // loose records the stat just confirmed
	p.mu.Lock()
	if !stat && (!p.header || p.damaged) {
		p.mu.Unlock()
		return s.check(ctx, p, parent, true) // doubted since: no record goes unchecked
	}
	for _, lf := range logs {
		r := p.recs[lf.rel]
		if !stat && r != nil && !p.pending[lf.rel] {
			out = append(out, r) // a believable journal's record
			continue
		}
		if stat && r != nil && r.st == lf.st {
			out = append(out, r)
			continue
		}
		if l := p.loose[lf.rel]; stat && l != nil && l.st == lf.st {
			out = append(out, l)
			confirmed = append(confirmed, l)
			continue
		}
		stale = append(stale, lf)
		prev = append(prev, r)
	}
	var gone []string
	seen := make(map[string]bool, len(logs))
	if parent == "" {
		for _, lf := range logs {
			seen[lf.rel] = true
		}
		for rel := range p.recs {
			if !seen[rel] && strings.IndexByte(rel, '/') < 0 {
				gone = append(gone, rel)
			}
		}
		for rel := range p.pending {
			if !seen[rel] && p.recs[rel] == nil && strings.IndexByte(rel, '/') < 0 {
				gone = append(gone, rel)
			}
		}
	}
	p.mu.Unlock()

	fresh, err := s.deriveStale(ctx, p, stale, prev)
	if err != nil {
		return nil, false, err
	}
	if parent == "" {
		p.writeBack(checked{fresh: append(confirmed, fresh...), gone: gone, seen: seen,
			jIno: jIno, jOff: jOff, jSeq: jSeq, dirTime: dirTime, dirOK: dirOK})
	} else {
		for _, r := range fresh {
			p.remember(r)
		}
	}
	return append(out, fresh...), stat, nil
}

// A listing narrows what records returns to what one List page can show.
type listing struct {
	project string
	opts    recall.ListOptions
	from    *record // the cursor's position; nil from the start
	n       int     // records to walk to, 0 for every one
}

// newListing returns the listing of a List page; nil for subagent
// records, which records reads from the directory.
func newListing(project string, opts recall.ListOptions) (*listing, error) {
	if opts.Parent != "" {
		return nil, nil
	}
	sel := &listing{project: project, opts: opts}
	switch {
	case opts.Limit == 0:
		sel.n = recall.DefaultListLimit + 1 // the page, and whether one follows
	case opts.Limit > 0:
		sel.n = opts.Limit + 1
	}
	if opts.Cursor != "" {
		c, err := storekit.ParseCursor(opts.Cursor)
		if err != nil {
			return nil, err
		}
		sel.from = &record{updated: c.Updated, key: recall.Key{Project: c.Project, Session: c.Session, Subpath: c.Subpath}}
	}
	return sel, nil
}

// walk returns the records of order that sel can show, from sel.from on:
// sel.n of them, or every one when sel.n is 0. The caller holds p.mu.
func (p *projectIndex) walk(sel *listing) []*record {
	var recs []*record
	visit := func(r *record) bool {
		if !p.pending[r.rel] && !r.empty && (sel.from == nil || listOrder(r, sel.from) > 0) &&
			storekit.Matches(r.light(), sel.project, sel.opts) {
			recs = append(recs, r)
		}
		return sel.n == 0 || len(recs) < sel.n
	}
	if sel.from == nil {
		p.ordered().Ascend(visit)
	} else {
		p.ordered().AscendGreaterOrEqual(sel.from, visit)
	}
	return recs
}

// believe reads what was appended to the journal and says whether it
// can be believed as it stands (point 5 of the crash argument in
// index.go): journalBelieved, with p.mu held, which the caller releases;
// otherwise why not, without it.
func (p *projectIndex) believe() trust {
	if fsys.BootID() == "" {
		return journalDoubted
	}
	p.mu.Lock()
	err := p.refresh()
	tail := p.jTail
	p.mu.Unlock()
	if err != nil {
		return journalDoubted
	}
	if tail {
		// A line being written, or torn by a writer that died: once the
		// appends in flight are done, a line still torn is damage.
		f, err := p.lockJournal()
		if err != nil {
			return journalDoubted
		}
		p.mu.Lock()
		p.refresh()
		p.damaged = p.damaged || p.jTail
		p.mu.Unlock()
		f.Close()
	}
	dirTime, err := fsys.DirMtime(p.dir)
	if err != nil {
		return journalDoubted
	}
	if olderWriter(p.dir) {
		return journalDoubted // an older recall writes here too
	}
	p.mu.Lock()
	if !p.header || p.damaged || p.jTail {
		p.mu.Unlock()
		return journalDoubted
	}
	if !p.dirSeen || p.dirTime != dirTime {
		p.mu.Unlock()
		return journalDirMoved
	}
	return journalBelieved
}

// generation returns a number that changes whenever the records of the
// project's main sessions may change (see projectIndex.gen); ok is false
// when it cannot say: the journal cannot be believed as it stands, or a
// log is pending, whose record only a read of the log gives.
func (p *projectIndex) generation() (gen uint64, ok bool) {
	if p.believe() != journalBelieved {
		return 0, false
	}
	defer p.mu.Unlock()
	for rel := range p.pending {
		if isMain(rel) {
			return 0, false
		}
	}
	return p.gen, true
}

// trusted returns the records of the project's main sessions from the
// journal alone, when it can be believed (point 5 of the crash argument
// in index.go), deriving only the pending logs. Otherwise it says why not
// (journalDirMoved, journalDoubted) and returns no records. With a
// listing, the records it returns are those the listing can show (see
// records) and the pending logs.
func (s *Store) trusted(ctx context.Context, p *projectIndex, sel *listing) (recs []*record, state trust, err error) {
	if state := p.believe(); state != journalBelieved {
		return nil, state, nil
	}
	long := p.long(0)
	switch {
	case sel != nil && sel.opts.Pinned:
		recs = make([]*record, 0, len(p.pins))
		for rel, r := range p.pins {
			if !p.pending[rel] && isMain(rel) {
				recs = append(recs, r)
			}
		}
	case sel != nil:
		recs = p.walk(sel)
	default:
		recs = make([]*record, 0, len(p.recs))
		for rel, r := range p.recs {
			if !p.pending[rel] && isMain(rel) {
				recs = append(recs, r)
			}
		}
	}
	var pending []*record // the pending logs and their last records, if any
	for rel := range p.pending {
		if strings.IndexByte(rel, '/') < 0 {
			r := p.recs[rel]
			if r == nil {
				r = &record{rel: rel}
			}
			pending = append(pending, r)
		}
	}
	p.mu.Unlock()
	s.test.trusted(false)
	if long {
		p.compact(false)
	}
	for _, prev := range pending {
		r, err := s.deriveLog(ctx, p, prev)
		if err != nil {
			return nil, journalBelieved, err
		}
		if r != nil {
			recs = append(recs, r)
		}
	}
	return recs, journalBelieved, nil
}

// maxPageCheck is how many rows of a page List stats at most: a listing
// with no limit (Limit < 0) is not made O(sessions) in system calls by the
// check; its first rows, which a reader sees first, are checked.
const maxPageCheck = 200

// deriveLog derives the record of the log prev names, from prev's
// committed end when prev still describes its start; nil when the log does
// not exist.
func (s *Store) deriveLog(ctx context.Context, p *projectIndex, prev *record) (*record, error) {
	k, ok := keyOf(p.name, prev.rel)
	if !ok {
		return nil, nil
	}
	l := loc{key: k, dir: p.dir, rel: prev.rel, path: filepath.Join(p.dir, filepath.FromSlash(prev.rel)+logExt)}
	f, st, ok, err := openLog(l)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.path, err)
	}
	if !ok {
		return nil, nil
	}
	defer f.Close()
	if prev.key != k {
		prev = nil // a bare name, not a record
	}
	r, err := derive(ctx, f, k, l.rel, st, prev)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", l.path, err)
	}
	return r, nil
}

// checked is what a check of every log of a project found (check), and
// what it was made against.
type checked struct {
	fresh []*record       // the records re-derived, or confirmed by a stat
	gone  []string        // the logs the journal names that are gone
	seen  map[string]bool // every log the check saw
	// The journal as the check read it: up to jOff of the file jIno,
	// whose lineSeq was jSeq then.
	jIno       uint64
	jOff, jSeq int64
	// The directory's mtime, taken before it was read; dirOK: read, and
	// settled.
	dirTime int64
	dirOK   bool
}

// writeBack writes back to the journal what a check of every log found
// (c). A log the journal heard of since the check (whichever refresh of
// this process read the line) keeps the journal's word: its writer's line
// is newer than the check. Under the journal's exclusive lock it resolves
// the pending logs no writer holds, then appends the lines and
// "#dir dirTime", or rewrites the journal when it cannot be believed as it
// is (no header of this boot, damage, too long). A journal that cannot be
// written is left as it was: it is a cache. It is the only place a check
// writes.
func (p *projectIndex) writeBack(c checked) {
	f, err := p.lockJournal()
	if err != nil {
		return
	}
	defer f.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	err = p.refresh()
	touched := func(rel string) bool { return p.last[rel] > c.jSeq }
	// A log the journal heard of since the check keeps the journal's
	// word, which is newer. Only one word cannot be believed: a log the
	// check saw, that the journal now says is gone with no intent after
	// (a remover's tombstone that came after a new log's record, both
	// since the check). Then #dir is not written, and the next List looks
	// again.
	quiet := true
	for rel, n := range p.last {
		if n > c.jSeq && c.seen[rel] && p.recs[rel] == nil && !p.pending[rel] {
			quiet = false
		}
	}
	if err != nil || c.jIno != 0 && p.jIno != c.jIno || p.jOff < c.jOff {
		return // rewritten since: its records may be newer than the check
	}
	var buf []byte
	for _, r := range c.fresh {
		if !touched(r.rel) && !p.pending[r.rel] {
			p.setRec(r)
			delete(p.loose, r.rel)
			buf = appendRecord(buf, r)
		}
	}
	for _, rel := range c.gone {
		if !touched(rel) && !p.pending[rel] {
			p.delRec(rel)
			delete(p.loose, rel)
			buf = appendTombstone(buf, rel)
		}
	}
	buf = append(buf, p.resolvePending()...)
	trust := quiet && c.dirOK
	if !p.header || p.damaged || p.jTail || p.long(bytes.Count(buf, []byte{'\n'})) {
		p.rewriteLocked(true, trust, c.dirTime) // every record was checked
		return
	}
	if !trust {
		p.appendLocked(f, buf)
		return
	}
	buf = appendControl(buf, "#dir "+strconv.FormatInt(c.dirTime, 10))
	if p.appendLocked(f, buf) == nil {
		p.dirSeen, p.dirTime = true, c.dirTime // the next refresh reads the lines again, to the same effect
	}
}

// deriveStale derives the records of the logs stale, each from the
// record before it (prev, nil for none) where that still describes its
// start. A log removed since the directory was read, or named by hand
// outside the key rules, is left out.
func (s *Store) deriveStale(ctx context.Context, p *projectIndex, stale []logFile, prev []*record) ([]*record, error) {
	fresh := make([]*record, 0, len(stale))
	for i, lf := range stale {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k, ok := keyOf(p.name, lf.rel)
		if !ok {
			continue // a file named by hand outside the key rules
		}
		l := loc{key: k, dir: p.dir, rel: lf.rel, path: filepath.Join(p.dir, filepath.FromSlash(lf.rel)+logExt)}
		f, st, ok, err := openLog(l)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.path, err)
		}
		if !ok {
			continue // removed since the directory was read
		}
		r, err := derive(ctx, f, k, lf.rel, st, prev[i])
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.path, err)
		}
		fresh = append(fresh, r)
	}
	return fresh, nil
}
