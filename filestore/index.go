package filestore

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/google/btree"
	"github.com/recallkit/recall/internal/fsys"
)

// The index of a project is a cache of the Meta of each of its logs, so
// that List reads neither the logs nor their stats. It is a journal,
// <project>/#index-v5: one line per event, and the newest line about a log
// wins. Line format, space separated (names and numbers hold no spaces,
// and the Meta JSON is last):
//
//	<line-crc> <rel> <ino> <size> <mtime-ns> <off> <crc> <flags> <updated-s> <updated-ns> <controls> <meta-json>
//	<line-crc> <rel> -        a tombstone: the log was removed
//	<line-crc> <rel> !        an intent: a writer is about to change the log
//	<line-crc> #boot <id>     the header: first line of a trusted journal
//	<line-crc> #dir <ns>      the project directory's mtime when last checked
//	<line-crc> #sorted <bytes> <count>
//	                          the next bytes hold count records in List's order
//
// line-crc is the crc32 of the rest of the line, in hex, so a damaged line
// is noticed rather than believed; crc is that of the log's bytes before
// off (see derive). flags is "-" or a set of: a (archived), e (no entry:
// not a session yet), u (the committed log ends without a newline).
// controls says where the view's control lines are (see controls.go).
//
// Why the journal can be believed without a stat of every log (the crash
// argument; writer.begin, writer.close, removeLocked, writeBack and
// resolvePending enforce it):
//
//  1. Every change of a log is made holding the log's locks (in-process
//     and flock). Before its first change the writer appends an intent
//     line, and the write has returned before the log is touched; after its
//     last change, still holding the locks, it appends the log's new record
//     or a tombstone. So the last line about a log is the log's exact state,
//     or an intent: a change in progress, or a writer that died mid-way.
//     SIGKILL at any instant leaves one of these: before the intent is
//     written nothing has changed, after it the log is pending until a
//     record follows.
//  2. A reader believes the record of a log that is not pending. A pending
//     log it derives from the log itself, from the record's committed end.
//     Whoever holds the journal's exclusive lock and can take the log's
//     lock settles a pending log (a dead writer's): it appends its record
//     or tombstone (resolvePending).
//  3. Lines are appended with one write each under the journal's shared
//     lock; a rewrite (compaction, validation) holds the exclusive lock, so
//     it has read every line appended before it, and no line is appended to
//     the file it replaces.
//  4. A record that a reader derived without the log's lock never enters
//     the journal or the trusted view (remember keeps it apart): a writer's
//     newer line could precede it.
//  5. The journal is believed only as a whole: its first line is the #boot
//     header naming the running boot (its lines are never fsynced, and a
//     power failure may drop the last ones: a new boot starts from the
//     logs); every line's crc holds; no torn line remains once the appends
//     in flight are done; its last #dir equals the directory's mtime (a log
//     created, removed or renamed moves it; a #dir is written only for an
//     mtime older than racyWindow when the names were read, since a change
//     in the same tick of the file system's clock leaves the mtime as it
//     was); and no older recall wrote its own journal (#index-v3,
//     #index-v4) since. Otherwise List reads the directory, stats every
//     log, derives what changed and writes the journal back believable
//     (projectIndex.writeBack).
//  6. List still stats the logs of the page it returns (its first 200
//     rows), so a log edited by hand shows its true counts there.
//  7. A new process lists a first page from the journal's head, its tail
//     and only the start of its sorted section (listHead, head.go, says
//     why that is as safe as reading all of it).
//
// What it cannot notice: lines cut from its end at a line boundary by
// hand, or the journal replaced by an older copy of itself; removing the
// journal makes the next List rebuild it.

// The name carries the version of what a record means. A version whose
// records a newer store cannot trust is left unread: the new journal
// starts empty, every log is derived afresh when it is first listed or
// stat'ed, and the old journal is removed (see oldIndexNames).
const indexName = "#index-v5"

// oldIndexNames are the journals of earlier versions:
//
//   - #index-v1 cached a Meta whose Updated moved with title and meta
//     entries too; v2's moves only for conversation activity
//     (recall.Kind.IsActivity) and holds the metadata map. A v1 record
//     would keep the old Updated for as long as its log did not change.
//   - #index-v2 cached a Meta without FirstPrompt; a v2 record would list
//     its session without one for as long as its log did not change.
//   - #index-v3 was written up to 100 ms after the change it described,
//     and held no intents: it could not be believed without a stat of
//     every log. An older recall still writing one makes List check
//     every log (see trusted).
//   - #index-v4 held no controls (see controls.go): a page of a view
//     would read the log back to its last clear or compaction for as long
//     as the log did not change. An older recall still writing one makes
//     List check every log too, since it writes no intents here.
var oldIndexNames = []string{"#index-v1", "#index-v2", "#index-v3", "#index-v4"}

// writingIndexNames are the journals of earlier versions whose writers
// (an older recall still running) change logs without saying so in this
// journal: while one is there, this journal is not believed without a
// stat of every log.
var writingIndexNames = []string{"#index-v3", "#index-v4"}

// olderWriter reports whether the project directory dir holds a journal
// of writingIndexNames.
func olderWriter(dir string) bool {
	for _, name := range writingIndexNames {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// projectIndex is the in-memory copy of one project's index, kept in step
// with the journal file by reading only what was appended since.
type projectIndex struct {
	name string
	dir  string
	path string

	mu sync.Mutex
	// recs holds what the journal says, applied in its order, and the
	// records this process's writers put under their log's lock: the
	// trusted view List may use without a stat.
	recs map[string]*record
	// pins holds the records of recs that are pinned, so that a listing
	// of pinned sessions reads those only. setRec and delRec change recs
	// and keep it in step.
	pins map[string]*record
	// order holds the records of recs that are main sessions, in List's
	// order, so that a page of a List walks the page and no more. It is
	// built by the first List that needs it (ordered) and kept in step by
	// setRec and delRec after; nil until then.
	order *btree.BTreeG[*record]
	// gen counts the changes to recs (setRec, delRec, reset), so that a
	// reader that saw gen can tell later that nothing changed since.
	gen uint64
	// pending names the logs whose last journal line is an intent: a
	// writer began to change them and has not said how it ended.
	pending map[string]bool
	// loose holds records that readers derived without the log's lock:
	// each is used only after its stat is checked against the log's.
	loose   map[string]*record
	jIno    uint64 // the journal file read so far, 0 for none
	jOff    int64  // bytes of it consumed
	jLines  int    // lines in it
	jTail   bool   // it ends with bytes that are not yet a whole line
	header  bool   // it began with a #boot line naming this boot
	damaged bool   // a line of it failed its crc
	dirSeen bool   // it holds a #dir line
	dirTime int64  // the last #dir line's directory mtime
	sorted  int    // records in its sorted section (see rewriteLocked)
	// lineSeq numbers the lines applied, in this process, across every
	// journal file read; last holds, per log, the number of the last line
	// about it. A check compares them with lineSeq as it read the journal
	// (writeBack): a concurrent refresh may have applied the lines since.
	lineSeq int64
	last    map[string]int64
	// checks counts the checks in flight by the lineSeq each read the
	// journal at: an entry of last at or below the lowest of them can no
	// longer change what any check decides, so pruneLast drops it.
	checks  map[int64]int
	written int  // lines this process appended since it last compacted
	oldGone bool // the journals of earlier versions were removed (by rewriteLocked)

	jfMu sync.Mutex
	jf   *os.File // the journal, open for appends (see keepJournalOpen)
	jr   *os.File // the journal read so far, under mu (see refresh)

	headMu sync.Mutex
	head   *headJournal // what listHead keeps between lists

	settleMu    sync.Mutex
	settling    bool // a settleDir runs
	settleAgain bool // and the directory changed since it began
}

// compactEvery is how many journal lines a process appends between two
// looks at the journal's length, so that a process that only ever appends
// (an agent) still keeps the journal compact.
const compactEvery = 1024

func (s *Store) project(name string) *projectIndex {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[name]
	if p == nil {
		dir := filepath.Join(s.root, name)
		p = &projectIndex{name: name, dir: dir, path: filepath.Join(dir, indexName),
			recs: map[string]*record{}, pins: map[string]*record{}, pending: map[string]bool{}, loose: map[string]*record{}, last: map[string]int64{}}
		s.projects[name] = p
	}
	return p
}

// get returns the record of rel this process knows, trusted or loose; nil
// when there is none. Callers check its stat against the log's.
func (p *projectIndex) get(rel string) *record {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.recs[rel]; r != nil {
		return r
	}
	return p.loose[rel]
}

// journalSize returns the size of the journal file, 0 when it is missing.
func (p *projectIndex) journalSize() int64 {
	st, err := fsys.StatPath(p.path)
	if err != nil {
		return 0
	}
	return st.Size
}

// reset forgets what was read of the journal: the file ino is read next
// from its start.
func (p *projectIndex) reset(ino uint64) {
	p.jIno, p.jOff, p.jLines = ino, 0, 0
	p.jTail, p.header, p.damaged, p.dirSeen, p.dirTime, p.sorted = false, false, false, false, 0, 0
	p.recs = map[string]*record{}
	p.pins = map[string]*record{}
	p.order = nil
	p.gen++
	p.pending = map[string]bool{}
}

// ordered returns order, building it from recs when it is not yet kept.
// The caller holds p.mu.
func (p *projectIndex) ordered() *btree.BTreeG[*record] {
	if p.order == nil {
		main := make([]*record, 0, len(p.recs))
		for rel, r := range p.recs {
			if isMain(rel) {
				main = append(main, r)
			}
		}
		slices.SortFunc(main, listOrder)
		p.order = btree.NewG(32, func(a, b *record) bool { return listOrder(a, b) < 0 })
		for _, r := range main {
			p.order.ReplaceOrInsert(r)
		}
	}
	return p.order
}

// isMain reports whether the log rel names is a main session's, not a
// subagent record's.
func isMain(rel string) bool { return strings.IndexByte(rel, '/') < 0 }

// minPrune is how many more entries than twice the records last holds
// before pruneLast runs: a prune walks the map, so it runs when the map
// has grown by a share of its size.
const minPrune = 1024

// beginCheck records a check that read the journal up to line jSeq; its
// endCheck must follow. The caller holds p.mu.
func (p *projectIndex) beginCheck(jSeq int64) {
	if p.checks == nil {
		p.checks = map[int64]int{}
	}
	p.checks[jSeq]++
}

// endCheck ends a check beginCheck recorded, and prunes last when it has
// grown. It takes p.mu.
func (p *projectIndex) endCheck(jSeq int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.checks[jSeq]--; p.checks[jSeq] <= 0 {
		delete(p.checks, jSeq)
	}
	if len(p.last) > 2*len(p.recs)+minPrune {
		p.pruneLast()
	}
}

// pruneLast drops the entries of last that no check in flight can tell
// from no entry: those at or below the lowest lineSeq a check read the
// journal at (every entry, with no check in flight; a check that starts
// later reads the journal at lineSeq or above). So last holds the logs
// whose lines came after the oldest check in flight, however many logs
// came and went before it. The caller holds p.mu.
func (p *projectIndex) pruneLast() {
	floor := p.lineSeq
	for jSeq := range p.checks {
		floor = min(floor, jSeq)
	}
	for rel, n := range p.last {
		if n <= floor {
			delete(p.last, rel)
		}
	}
}

// setRec puts r in recs, and in pins when it is pinned. The caller holds
// p.mu.
func (p *projectIndex) setRec(r *record) {
	p.gen++
	if p.order != nil && isMain(r.rel) {
		if old := p.recs[r.rel]; old != nil {
			p.order.Delete(old)
		}
		p.order.ReplaceOrInsert(r)
	}
	p.recs[r.rel] = r
	if r.pinned {
		if p.pins == nil {
			p.pins = map[string]*record{} // an index of listHead's own (newHead)
		}
		p.pins[r.rel] = r
	} else {
		delete(p.pins, r.rel)
	}
}

// delRec removes rel from recs, pins and order. The caller holds p.mu.
func (p *projectIndex) delRec(rel string) {
	p.gen++
	if old := p.recs[rel]; old != nil && p.order != nil {
		p.order.Delete(old)
	}
	delete(p.recs, rel)
	delete(p.pins, rel)
}

// refresh reads what was appended to the journal since the last read, or
// all of it when the file was replaced. The caller holds p.mu.
func (p *projectIndex) refresh() error {
	// The journal read so far is kept open (where it can be): a file
	// renamed over it unlinks it, and while it is open its inode number
	// cannot be reused by the next file, so "the same file, read up to
	// jOff" is never mistaken.
	if p.jr != nil {
		if gone, err := fsys.Unlinked(p.jr); err != nil || gone {
			p.jr.Close()
			p.jr = nil
		}
	}
	f := p.jr
	if f == nil {
		var err error
		f, err = os.Open(p.path)
		if err != nil {
			if isNotExist(err) {
				p.reset(0)
				return nil
			}
			return err
		}
		if keepJournalOpen {
			p.jr = f
			p.jIno = 0 // a file opened anew is read from its start
		} else {
			defer f.Close()
		}
	}
	st, err := fsys.Fstat(f)
	if err != nil {
		return err
	}
	if st.Ino != p.jIno || st.Size < p.jOff {
		p.reset(st.Ino)
		// a journal line is a few hundred bytes: size the map once
		p.recs = make(map[string]*record, st.Size/256)
	}
	if st.Size == p.jOff {
		p.jTail = false
		return nil
	}
	first := p.jOff == 0
	carry := scanLines(f, p.jOff, st.Size, func(line []byte, next int64) bool {
		p.jOff = next
		if first {
			first = false
			p.header = isHeader(line)
		}
		if len(line) > 0 {
			p.jLines++
			p.apply(line)
		}
		return true
	})
	p.jTail = len(carry) > 0 // a torn last line waits
	return nil
}

// readBlock is the size of the blocks scanLines reads the journal in.
const readBlock = 256 << 10

// scanLines reads the lines of f from off to end in blocks through one
// buffer (a long journal costs no large allocation to clear; callers copy
// what they keep) and calls line with each, without its newline, and the
// offset after it, until line returns false. It returns what follows the
// last whole line it read: a line torn or still being written. A short
// read leaves the rest for the next call.
func scanLines(f io.ReaderAt, off, end int64, line func(b []byte, next int64) bool) (carry []byte) {
	buf := make([]byte, min(end-off, readBlock))
	for off < end {
		n, _ := f.ReadAt(buf[:min(int64(len(buf)), end-off)], off)
		if n == 0 {
			break
		}
		data := buf[:n]
		if len(carry) > 0 {
			data = append(carry, data...)
		}
		next := off - int64(len(carry))
		off += int64(n)
		last := bytes.LastIndexByte(data, '\n') + 1
		for rest := data[:last]; len(rest) > 0; {
			i := bytes.IndexByte(rest, '\n')
			next += int64(i + 1)
			if !line(rest[:i], next) {
				return nil
			}
			rest = rest[i+1:]
		}
		carry = append(carry[:0:0], data[last:]...)
	}
	return carry
}

// apply applies one journal line. The caller holds p.mu.
func (p *projectIndex) apply(line []byte) {
	rest, ok := checkLine(line)
	if !ok {
		p.damaged = true
		return
	}
	if len(rest) > 0 && rest[0] == '#' {
		if v, ok := bytes.CutPrefix(rest, []byte("#dir ")); ok {
			if n, ok := atoi(v); ok {
				p.dirSeen, p.dirTime = true, n
			}
		}
		if _, count, ok := parseSorted(rest); ok {
			p.sorted = int(count)
		}
		return // #boot, and control lines of later versions
	}
	r, kind, ok := parseChecked(rest)
	if ok {
		r.key, ok = keyOf(p.name, r.rel)
	}
	if !ok {
		p.damaged = true
		return
	}
	p.lineSeq++
	p.last[r.rel] = p.lineSeq
	if len(p.last) > 2*len(p.recs)+minPrune {
		p.pruneLast()
	}
	switch kind {
	case lineIntent:
		p.pending[r.rel] = true
	case lineTombstone:
		p.delRec(r.rel)
		delete(p.pending, r.rel)
		delete(p.loose, r.rel)
	default:
		p.setRec(r)
		delete(p.pending, r.rel)
	}
}

// isHeader reports whether line is a #boot line naming this boot.
func isHeader(line []byte) bool {
	rest, ok := checkLine(line)
	if !ok {
		return false
	}
	id, ok := bytes.CutPrefix(rest, []byte("#boot "))
	return ok && len(id) > 0 && string(id) == fsys.BootID()
}

// put caches records that a writer holding their log's lock derived or
// wrote: they are the log's state, as trusted as a journal line.
func (p *projectIndex) put(recs ...*record) {
	p.mu.Lock()
	for _, r := range recs {
		p.setRec(r)
		delete(p.loose, r.rel)
	}
	p.mu.Unlock()
}

// remember caches a record a reader derived without the log's lock: used
// only once its stat is checked against the log's.
func (p *projectIndex) remember(r *record) {
	p.mu.Lock()
	p.loose[r.rel] = r
	p.mu.Unlock()
}
