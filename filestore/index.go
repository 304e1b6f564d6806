package filestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"
	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/flock"
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
// argument; writer.begin, writer.close, removeLocked, validated and
// settleLocked enforce it):
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
//     or tombstone (settleLocked).
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
//     (Store.validate).
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

// checkLen is how many bytes before a record's committed end its crc
// covers: enough to notice a log rewritten in place with more bytes.
const checkLen = 64

// record is the cached Meta of one log and the state of the log it was
// derived from.
type record struct {
	rel          string
	key          recall.Key // the key rel names
	st           fsys.Stat
	off          int64  // committed end of the log
	check        uint32 // crc32 of the checkLen bytes before off
	unterminated bool
	archived     bool
	pinned       bool // Meta.Pinned, known without decoding (see pinnedJSON)
	empty        bool
	updated      time.Time
	ctl          controlLines // the view's control lines below off

	// A record is shared and, but for its lazily decoded Meta, immutable.
	once    sync.Once
	raw     []byte       // Meta JSON from the journal, decoded on demand
	meta    *recall.Meta // nil until decoded
	metaErr error
}

func newRecord(key recall.Key, rel string, st fsys.Stat, off int64, check uint32, unterminated bool, m recall.Meta, ctl controlLines) *record {
	r := &record{rel: rel, key: key, st: st, off: off, check: check, unterminated: unterminated,
		archived: m.Archived, pinned: m.Pinned, empty: m.LastSeq == 0 && m.Corrupt == 0, updated: m.Updated, meta: &m, ctl: ctl}
	r.once.Do(func() {})
	return r
}

// Meta returns a copy of the record's metadata, decoding it on first use.
func (r *record) Meta() (recall.Meta, error) {
	if err := r.decode(); err != nil {
		return recall.Meta{}, err
	}
	return r.meta.Clone(), nil
}

// decode decodes the record's Meta once; r.meta is set after it.
func (r *record) decode() error {
	r.once.Do(func() {
		var m recall.Meta
		if err := json.Unmarshal(r.raw, &m); err != nil {
			r.metaErr = fmt.Errorf("index record %s: %w", r.rel, err)
		}
		r.meta = &m
		r.raw = nil
	})
	return r.metaErr
}

// lastSeq returns the record's Meta.LastSeq without copying the Meta; 0
// when the Meta does not decode.
func (r *record) lastSeq() int64 {
	if r.decode() != nil {
		return 0
	}
	return r.meta.LastSeq
}

// light returns the fields List sorts and filters by, without decoding.
func (r *record) light() recall.Meta {
	return recall.Meta{Key: r.key, Updated: r.updated, Archived: r.archived, Pinned: r.pinned}
}

// pinnedJSON is how a journal record's Meta JSON (appendRecord, which
// writes json.Marshal's) says the session is pinned. Only a pinned Meta
// holds it (the field is omitted when false, and a string value cannot
// hold its quotes unescaped), so parseChecked decodes the Meta of the
// records that hold it, the pinned ones and look-alikes, to know which
// are pinned, and leaves the rest undecoded.
var pinnedJSON = []byte(`"pinned":true`)

// appendRecord encodes r as one journal line.
func appendRecord(buf []byte, r *record) []byte {
	m, err := r.Meta()
	if err != nil {
		return buf // an undecodable record is simply not carried over
	}
	js, err := json.Marshal(m)
	if err != nil {
		return buf
	}
	start := len(buf)
	buf = append(buf, "00000000 "...) // the line's crc, filled in below
	flags := ""
	if r.archived {
		flags += "a"
	}
	if r.empty {
		flags += "e"
	}
	if r.unterminated {
		flags += "u"
	}
	if flags == "" {
		flags = "-"
	}
	buf = append(buf, r.rel...)
	for _, n := range []int64{int64(r.st.Ino), r.st.Size, r.st.Mtime, r.off, int64(r.check)} {
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, n, 10)
	}
	buf = append(buf, ' ')
	buf = append(buf, flags...)
	buf = append(buf, ' ')
	buf = strconv.AppendInt(buf, r.updated.Unix(), 10)
	buf = append(buf, ' ')
	buf = strconv.AppendInt(buf, int64(r.updated.Nanosecond()), 10)
	buf = append(buf, ' ')
	buf = appendControls(buf, r.ctl)
	buf = append(buf, ' ')
	buf = append(buf, js...)
	return sealLine(buf, start)
}

// sealLine writes the crc of the line that starts at buf[start] (after its
// crc field) into that field, and ends the line.
func sealLine(buf []byte, start int) []byte {
	sum := crc32.ChecksumIEEE(buf[start+9:])
	hex.Encode(buf[start:start+8], binary.BigEndian.AppendUint32(nil, sum))
	return append(buf, '\n')
}

// The kinds of a journal line about a log.
const (
	lineRecord    = 'r' // the log's record
	lineTombstone = '-' // the log was removed
	lineIntent    = '!' // a writer holding the log's lock is about to change it
)

// appendTombstone encodes the removal of rel as one journal line.
func appendTombstone(buf []byte, rel string) []byte {
	return appendMark(buf, rel, lineTombstone)
}

// appendMark encodes a tombstone or an intent for rel as one journal line.
func appendMark(buf []byte, rel string, kind byte) []byte {
	start := len(buf)
	buf = append(buf, "00000000 "...)
	buf = append(buf, rel...)
	buf = append(buf, ' ', kind)
	return sealLine(buf, start)
}

// appendControl encodes a control line (#boot, #dir, #sorted) as one
// journal line.
func appendControl(buf []byte, text string) []byte {
	start := len(buf)
	buf = append(buf, "00000000 "...)
	buf = append(buf, text...)
	return sealLine(buf, start)
}

// checkLine verifies a journal line's crc and returns the rest of it.
func checkLine(line []byte) ([]byte, bool) {
	if len(line) < 10 || line[8] != ' ' {
		return nil, false
	}
	var want [4]byte
	if _, err := hex.Decode(want[:], line[:8]); err != nil {
		return nil, false
	}
	rest := line[9:]
	return rest, crc32.ChecksumIEEE(rest) == binary.BigEndian.Uint32(want[:])
}

// parseRecord decodes a journal line about a log, and says which kind it
// is (lineRecord, lineTombstone, lineIntent); ok is false for a line that
// does not parse (a torn or damaged journal).
func parseRecord(line []byte) (r *record, kind byte, ok bool) {
	rest, ok := checkLine(line)
	if !ok {
		return nil, 0, false
	}
	return parseChecked(rest)
}

// parseChecked is parseRecord of a line whose crc checkLine verified: rest
// is the line after its crc.
func parseChecked(rest []byte) (r *record, kind byte, ok bool) {
	var f [10][]byte
	for i := range f {
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			if i == 1 && len(rest) == 1 && (rest[0] == lineTombstone || rest[0] == lineIntent) {
				return &record{rel: string(f[0])}, rest[0], true
			}
			return nil, 0, false
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	if len(f[0]) == 0 || len(rest) == 0 {
		return nil, 0, false
	}
	var n [8]int64
	for i, j := range []int{1, 2, 3, 4, 5, 7, 8} {
		if n[i], ok = atoi(f[j]); !ok {
			return nil, 0, false
		}
	}
	ctl, ok := parseControls(f[9])
	if !ok {
		return nil, 0, false
	}
	r = &record{
		ctl:     ctl,
		rel:     string(f[0]),
		st:      fsys.Stat{Ino: uint64(n[0]), Size: n[1], Mtime: n[2]},
		off:     n[3],
		check:   uint32(n[4]),
		updated: time.Unix(n[5], n[6]).UTC(),
		raw:     bytes.Clone(rest), // the journal's read buffer is reused
	}
	r.pinned = bytes.Contains(r.raw, pinnedJSON) && r.decode() == nil && r.meta.Pinned
	for _, c := range f[6] {
		switch c {
		case 'a':
			r.archived = true
		case 'e':
			r.empty = true
		case 'u':
			r.unterminated = true
		}
	}
	return r, lineRecord, true
}

// parseSorted parses the rest of a #sorted line.
func parseSorted(rest []byte) (size, count int64, ok bool) {
	v, ok := bytes.CutPrefix(rest, []byte("#sorted "))
	if !ok {
		return 0, 0, false
	}
	a, b, ok := bytes.Cut(v, []byte{' '})
	if !ok {
		return 0, 0, false
	}
	size, ok1 := atoi(a)
	count, ok2 := atoi(b)
	return size, count, ok1 && ok2 && size >= 0 && count >= 0
}

// atoi parses a decimal int64 (optionally negative) without allocating.
func atoi(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		n = -n
	}
	return n, true
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
	// (validate): a concurrent refresh may have applied the lines since.
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

// settleLocked finds out how the changes of the pending logs ended, for
// the logs no writer holds any more: a log whose lock it can take is
// derived under that lock (its writer died mid-way), and a log that is
// gone is gone. It returns the journal lines that say so. The caller
// holds the journal's exclusive lock (so no writer is between its intent
// and its first change with that intent unread) and p.mu.
func (p *projectIndex) settleLocked() []byte {
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
// moves the mtime. (A variable only for the tests of the paths a settled
// directory takes, which model a List made after its clock moved on.)
var racyWindow = 2 * time.Second

// settled reports whether a directory whose mtime is mtime, read just
// before its names were, may be vouched for by those names.
func settled(mtime int64) bool {
	return time.Since(time.Unix(0, mtime)) >= racyWindow
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

// compact rewrites the journal when it is long, keeping it as trusted as
// it was.
func (p *projectIndex) compact() {
	f, err := p.lockJournal()
	if err != nil {
		return
	}
	defer f.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written = 0
	if p.refresh() != nil || !p.long(0) {
		return
	}
	p.settleLocked() // what it finds goes into the rewrite
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
		p.compact()
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

// tailCheck returns the crc of the checkLen bytes of f before off.
func tailCheck(f *os.File, off int64) (uint32, error) {
	n := min(off, checkLen)
	if n == 0 {
		return 0, nil
	}
	var b [checkLen]byte
	if _, err := f.ReadAt(b[:n], off-n); err != nil {
		return 0, err
	}
	return crc32.ChecksumIEEE(b[:n]), nil
}

// derive returns the record of the log f, whose stat is st, bringing prev
// (the last record known, or nil) up to date. When the log is the same file
// as prev's and still holds the bytes prev saw, only the bytes after prev's
// committed end are read; otherwise the whole log is. It stops with ctx's
// error when ctx ends.
func derive(ctx context.Context, f *os.File, key recall.Key, rel string, st fsys.Stat, prev *record) (*record, error) {
	var m recall.Meta
	from := int64(0)
	unterminated := false
	var ctl controlLines
	if prev != nil && prev.st.Ino == st.Ino && st.Size >= prev.off {
		if pm, err := prev.Meta(); err == nil {
			if c, err := tailCheck(f, prev.off); err == nil && c == prev.check {
				m, from, unterminated, ctl = pm, prev.off, prev.unterminated, prev.ctl
			}
		}
	}
	if from == 0 {
		m = recall.Meta{Key: key}
		unterminated = false
		ctl = noControls()
	}
	var at, n int64 // the place of the line of the entry emitted next
	sc := scanner{
		at: func(pos, size int64) { at, n = pos, size },
		emit: func(e recall.Entry) {
			m.Apply(e) // counts unusable items in Corrupt
			ctl = ctl.see(e, at, n)
		},
	}
	if err := sc.scanFile(ctx, f, from, st.Size); err != nil {
		return nil, err
	}
	m.Corrupt += sc.corrupt
	if sc.end > from {
		unterminated = sc.unterminated
	}
	check, err := tailCheck(f, sc.end)
	if err != nil {
		return nil, err
	}
	return newRecord(key, rel, st, sc.end, check, unterminated, m, ctl), nil
}
