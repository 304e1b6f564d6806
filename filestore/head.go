package filestore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// A new process (`recall ls`) lists a first page without reading the
// whole journal. A rewrite (rewriteLocked) leaves the journal as
//
//	#boot, #dir          the header
//	#sorted <bytes> <n>  then n records in List's order
//	...                  the tail: intents, and every line appended since
//
// listHead reads the header, the whole tail, and the sorted section only
// until the page is full. The tail says which logs changed since the
// rewrite: their sorted records are stale and skipped, their tail records
// (or, for a pending log, the log itself) take their place. The journal is
// believed on the same terms as a whole read of it (point 5 of the crash
// argument in index.go: #boot of this boot, every line read passes its
// crc, no torn tail, #dir equal to the directory's mtime, no #index-v3);
// the lines of the sorted section it does not read sort after the page,
// and a log they describe that changed since has a tail line, so they
// cannot change the page. The page's logs are stat'ed as List does; one
// that changed behind the journal's back sends List the whole way.

// headLists counts the pages served by listHead, for the tests.
var headLists atomic.Int64

// headList turns listHead off, for the tests that compare it with a whole
// read of the journal.
var headList = true

// listHead returns the first page of one project's main sessions from the
// journal's head, sorted section and tail, when the project's journal was
// not read in this process yet; ok is false when it cannot, and List
// reads the journal whole.
func (s *Store) listHead(ctx context.Context, project string, opts recall.ListOptions) (page recall.Page, ok bool, err error) {
	limit := opts.Limit
	if limit == 0 {
		limit = recall.DefaultListLimit
	}
	if project == "" || opts.Parent != "" || opts.Cursor != "" || limit < 0 || bootID() == "" || !headList {
		return recall.Page{}, false, nil
	}
	p := s.project(project)
	p.mu.Lock()
	read := p.jIno != 0 || p.jr != nil || len(p.recs) > 0
	p.mu.Unlock()
	if read {
		return recall.Page{}, false, nil // a warm list is cheaper still
	}
	f, err := os.Open(p.path)
	if err != nil {
		return recall.Page{}, false, nil
	}
	defer f.Close()
	j, ok := readHead(f, p)
	if !ok {
		return recall.Page{}, false, nil
	}
	if dirTime, err := dirMtime(p.dir); err != nil || !j.dirSeen || dirTime != j.dirTime {
		return recall.Page{}, false, nil
	}
	if _, err := os.Lstat(filepath.Join(p.dir, "#index-v3")); err == nil {
		return recall.Page{}, false, nil
	}

	var match []*record
	keep := func(r *record) {
		if r != nil && !r.empty && storekit.Matches(r.light(), project, opts) {
			match = append(match, r)
		}
	}
	derived := map[*record]bool{}
	for rel, r := range j.recs {
		if !j.pending[rel] && strings.IndexByte(rel, '/') < 0 {
			keep(r)
		}
	}
	for rel := range j.pending {
		if strings.IndexByte(rel, '/') >= 0 {
			continue
		}
		prev := j.recs[rel]
		if prev == nil {
			prev = &record{rel: rel}
		}
		r, err := s.deriveLog(ctx, p, prev)
		if err != nil {
			return recall.Page{}, false, err
		}
		derived[r] = true
		keep(r)
	}
	// The sorted section, until limit+1 of its records match: the page
	// and the knowledge that a page follows.
	found := 0
	var last *record
	err = j.sorted(f, func(r *record) bool {
		if last != nil && listOrder(last, r) >= 0 {
			ok = false // not in order: not written by rewriteLocked
			return false
		}
		last = r
		if j.touched[r.rel] || strings.IndexByte(r.rel, '/') >= 0 {
			return true
		}
		n := len(match)
		if keep(r); len(match) > n {
			found++
		}
		return found <= limit
	})
	if err != nil || !ok {
		return recall.Page{}, false, nil
	}
	sel, next, err := selectPage(match, opts)
	if err != nil {
		return recall.Page{}, false, nil
	}
	for i, r := range sel {
		if i >= maxPageCheck || derived[r] || !checkPage {
			continue
		}
		st, err := statPath(filepath.Join(p.dir, filepath.FromSlash(r.rel)+logExt))
		if err != nil || st != r.st {
			return recall.Page{}, false, nil // changed behind the journal's back
		}
	}
	page, err = pageOf(sel, next)
	if err != nil {
		return recall.Page{}, false, nil
	}
	trustedLists.Add(1)
	headLists.Add(1)
	return page, true, nil
}

// headJournal is what listHead read of a journal: its header and tail,
// applied to an index of their own, and where the sorted section is.
type headJournal struct {
	*projectIndex
	start, end int64 // the sorted section
	count      int64 // records in it
}

// readHead reads the journal's header and its tail; ok is false when the
// journal has no sorted section or cannot be believed as read.
func readHead(f *os.File, p *projectIndex) (j *headJournal, ok bool) {
	st, err := fstat(f)
	if err != nil {
		return nil, false
	}
	j = &headJournal{projectIndex: &projectIndex{name: p.name, recs: map[string]*record{},
		pending: map[string]bool{}, loose: map[string]*record{}, touched: map[string]bool{}}}
	head := make([]byte, min(st.size, 4096))
	if n, _ := f.ReadAt(head, 0); n < len(head) {
		return nil, false
	}
	for off, first := 0, true; ; first = false {
		i := bytes.IndexByte(head[off:], '\n')
		if i < 0 {
			return nil, false // no #sorted line near the start
		}
		line := head[off : off+i]
		off += i + 1
		if first && !isHeader(line) {
			return nil, false
		}
		rest, ok := checkLine(line)
		if !ok || len(rest) == 0 || rest[0] != '#' {
			return nil, false
		}
		if size, count, ok := parseSorted(rest); ok {
			j.start, j.end, j.count = int64(off), int64(off)+size, count
			break
		}
		j.apply(line) // #dir
	}
	if j.end > st.size {
		return nil, false
	}
	// The tail: its lines are few (see projectIndex.long).
	torn := scanLines(f, j.end, st.size, func(line []byte, _ int64) bool {
		if len(line) > 0 {
			j.apply(line)
		}
		return !j.damaged
	})
	if len(torn) > 0 || j.damaged {
		return nil, false // a line torn, being written or damaged: a whole read settles it
	}
	return j, true
}

// sorted calls yield with the records of the sorted section in order,
// until yield returns false or the section ends. A line that fails its crc
// or is not a record is an error.
func (j *headJournal) sorted(f *os.File, yield func(*record) bool) error {
	seen, bad, stopped := int64(0), false, false
	carry := scanLines(f, j.start, j.end, func(line []byte, _ int64) bool {
		r, kind, ok := parseRecord(line)
		if ok && kind == lineRecord {
			r.key, ok = keyOf(j.name, r.rel)
		}
		if !ok || kind != lineRecord {
			bad = true
			return false
		}
		seen++
		stopped = !yield(r)
		return !stopped
	})
	if bad || !stopped && (len(carry) > 0 || seen != j.count) {
		return errSortedSection
	}
	return nil
}

// errSortedSection reports a sorted section that is not what its #sorted
// line announced.
var errSortedSection = errors.New("filestore: the index's sorted section is damaged")
