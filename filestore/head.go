package filestore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fsys"
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
// crc, no torn tail, #dir equal to the directory's mtime, no journal of
// an older writer: see writingIndexNames); the lines of the sorted
// section it does not read sort after the page, and a log they describe
// that changed since has a tail line, so they cannot change the page. The page's logs are stat'ed as List does; one
// that changed behind the journal's back sends List the whole way.

// listHead returns the first page of one project's main sessions from the
// journal's head, sorted section and tail, when the project's journal was
// not read whole in this process; ok is false when it cannot, and List
// reads the journal whole. What it read it keeps for the next list: the
// journal file (open), its header and tail applied, and the records of
// the sorted section it went through. The next list reads only what was
// appended since, unless the journal was rewritten.
func (s *Store) listHead(ctx context.Context, project string, opts recall.ListOptions) (page recall.Page, ok bool, err error) {
	limit := opts.Limit
	if limit == 0 {
		limit = recall.DefaultListLimit
	}
	if project == "" || opts.Parent != "" || opts.Cursor != "" || limit < 0 || fsys.BootID() == "" || !s.test.head() {
		return recall.Page{}, false, nil
	}
	p := s.project(project)
	p.mu.Lock()
	read := p.jIno != 0 || p.jr != nil || len(p.recs) > 0
	p.mu.Unlock()
	if read {
		return recall.Page{}, false, nil // read whole: a warm list takes it from memory
	}
	p.headMu.Lock()
	defer p.headMu.Unlock()
	j := p.readHead()
	if j == nil {
		return recall.Page{}, false, nil
	}
	if j.jLines > 2*tailAt(int(j.count)) {
		// overdue for a rewrite (see tailAt), which a whole read does
		p.dropHead()
		return recall.Page{}, false, nil
	}
	if dirTime, err := fsys.DirMtime(p.dir); err != nil || !j.dirSeen || dirTime != j.dirTime {
		return recall.Page{}, false, nil
	}
	if olderWriter(p.dir) {
		return recall.Page{}, false, nil
	}

	var match []*record
	keep := func(r *record) bool {
		if r != nil && !r.empty && storekit.Matches(r.light(), project, opts) {
			match = append(match, r)
			return true
		}
		return false
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
	for i := 0; found <= limit; i++ {
		if i == len(j.stream) && !j.more() {
			if j.streamOff < j.end {
				p.dropHead() // damaged, or not in order: not written by rewriteLocked
				return recall.Page{}, false, nil
			}
			break
		}
		r := j.stream[i]
		if j.last[r.rel] == 0 && strings.IndexByte(r.rel, '/') < 0 && keep(r) {
			found++
		}
	}
	sel, next, err := selectPage(match, opts)
	if err != nil {
		return recall.Page{}, false, nil
	}
	for i, r := range sel {
		if i >= maxPageCheck || derived[r] || !s.test.pageCheck() {
			continue
		}
		st, err := fsys.StatPath(filepath.Join(p.dir, filepath.FromSlash(r.rel)+logExt))
		if err != nil || st != r.st {
			p.dropHead()
			return recall.Page{}, false, nil // changed behind the journal's back
		}
	}
	page, err = pageOf(sel, next)
	if err != nil {
		return recall.Page{}, false, nil
	}
	s.test.trusted(true)
	return page, true, nil
}

// headJournal is what listHead read of a journal: its header and tail,
// applied to an index of their own (whose jOff is how much of the file
// they took), and the records of the sorted section read so far.
type headJournal struct {
	*projectIndex
	f          *os.File // the journal, kept open: its inode number is not reused
	start, end int64    // the sorted section
	count      int64    // records in it
	stream     []*record
	streamOff  int64 // where the next record of the section starts
}

// readHead returns the journal's header and tail as of now: what the last
// list kept, with the lines appended since, or read anew when the journal
// was rewritten. It returns nil when the journal has no sorted section or
// cannot be believed as read. The caller holds p.headMu.
func (p *projectIndex) readHead() *headJournal {
	j := p.head
	if j != nil {
		if gone, err := fsys.Unlinked(j.f); err != nil || gone {
			p.dropHead()
			j = nil
		}
	}
	if j == nil {
		f, err := os.Open(p.path)
		if err != nil {
			return nil
		}
		if j = newHead(f, p.name); j == nil {
			f.Close()
			return nil
		}
		p.head = j
	}
	st, err := fsys.Fstat(j.f)
	if err != nil || st.Size < j.jOff {
		p.dropHead()
		return nil
	}
	// The tail: its lines are few (see projectIndex.long).
	torn := scanLines(j.f, j.jOff, st.Size, func(line []byte, next int64) bool {
		if len(line) > 0 {
			j.jLines++
			j.apply(line)
		}
		j.jOff = next
		return !j.damaged
	})
	if len(torn) > 0 || j.damaged {
		p.dropHead()
		return nil // a line torn, being written or damaged: a whole read settles it
	}
	return j
}

// newHead reads the header of the journal f up to its #sorted line; nil
// when it is not a journal of this boot with a sorted section.
func newHead(f *os.File, project string) *headJournal {
	j := &headJournal{f: f, projectIndex: &projectIndex{name: project, recs: map[string]*record{},
		pending: map[string]bool{}, loose: map[string]*record{}, last: map[string]int64{}}}
	st, err := fsys.Fstat(f)
	if err != nil {
		return nil
	}
	head := make([]byte, min(st.Size, 4096))
	if n, _ := f.ReadAt(head, 0); n < len(head) {
		return nil
	}
	for off, first := 0, true; ; first = false {
		i := bytes.IndexByte(head[off:], '\n')
		if i < 0 {
			return nil // no #sorted line near the start
		}
		line := head[off : off+i]
		off += i + 1
		if first && !isHeader(line) {
			return nil
		}
		rest, ok := checkLine(line)
		if !ok || len(rest) == 0 || rest[0] != '#' {
			return nil
		}
		if size, count, ok := parseSorted(rest); ok {
			j.start, j.end, j.count = int64(off), int64(off)+size, count
			j.streamOff, j.jOff = j.start, j.end
			break
		}
		j.apply(line) // #dir
	}
	if j.end > st.Size {
		return nil
	}
	return j
}

// more reads the next block of the sorted section into j.stream; false
// when the section ended, or a line of it failed its crc, is not a
// record, is out of List's order or the count is not the one announced.
func (j *headJournal) more() bool {
	if j.streamOff >= j.end {
		return false
	}
	n, off := len(j.stream), j.streamOff
	bad := false
	for block := int64(sortedBlock); len(j.stream) == n && !bad && j.streamOff < j.end; block *= 2 {
		// a block that holds no whole line is read again twice as long
		scanLines(j.f, j.streamOff, min(j.end, j.streamOff+block), func(line []byte, next int64) bool {
			r, kind, ok := parseRecord(line)
			if ok && kind == lineRecord {
				r.key, ok = keyOf(j.name, r.rel)
			}
			if !ok || kind != lineRecord || len(j.stream) > 0 && listOrder(j.stream[len(j.stream)-1], r) >= 0 {
				bad = true
				return false
			}
			j.stream = append(j.stream, r)
			j.streamOff = next
			return true
		})
		if j.streamOff+block > j.end && len(j.stream) == n {
			bad = true // the section ends inside a line
		}
	}
	if bad || j.streamOff == j.end && int64(len(j.stream)) != j.count {
		j.stream, j.streamOff = j.stream[:n], off
		return false
	}
	return true
}

// sortedBlock is how much of the sorted section listHead reads at a time:
// a first page, and then some.
const sortedBlock = 64 << 10

// dropHead forgets what listHead kept. The caller holds p.headMu.
func (p *projectIndex) dropHead() {
	if p.head != nil {
		p.head.f.Close()
		p.head = nil
	}
}
