package filestore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/recallkit/recall"
)

// The index of a project is a cache of the Meta of each of its logs, so
// List never reads a log. It is a journal, <project>/#index-v3: one line
// per record, the newest line for a log wins. Every write updates the
// record in memory at once, and the record reaches the journal within
// flushDelay, or at Close (no fsync: it is a cache). Readers that had to
// re-derive records append them too, and rewrite the journal compactly
// (temp file, fsync, rename, fsync of the directory) once it is mostly
// obsolete.
//
// A record is trusted only while the log's inode, size and mtime equal the
// ones it was derived at. When they differ, the log is re-read, usually
// from the record's committed end only, since logs only grow. So a record
// that is missing, stale, lost in a crash, or wrong never leaks into a
// result: at worst it costs a read of the log.
//
// Line format, space separated (names and numbers hold no spaces, and the
// Meta JSON is last):
//
//	<line-crc> <rel> <ino> <size> <mtime-ns> <off> <crc> <flags> <updated-s> <updated-ns> <meta-json>
//	<line-crc> <rel> -       (a tombstone: the log was removed)
//
// line-crc is the crc32 of the rest of the line, in hex, so a damaged line
// is dropped rather than believed; crc is that of the log's bytes before
// off (see derive).
//
// flags is "-" or a set of: a (archived), e (no entry: not a session yet),
// u (the committed log ends without a newline).

// The name carries the version of what a record means. A version whose
// records a newer store cannot trust is left unread: the new journal
// starts empty, every log is derived afresh when it is first listed or
// stat'ed, and the old journal is removed (see oldIndexNames).
const indexName = "#index-v3"

// oldIndexNames are the journals of earlier versions:
//
//   - #index-v1 cached a Meta whose Updated moved with title and meta
//     entries too; v2's moves only for conversation activity
//     (recall.Kind.IsActivity) and holds the metadata map. A v1 record
//     would keep the old Updated for as long as its log did not change.
//   - #index-v2 cached a Meta without FirstPrompt; a v2 record would list
//     its session without one for as long as its log did not change.
var oldIndexNames = []string{"#index-v1", "#index-v2"}

// checkLen is how many bytes before a record's committed end its crc
// covers: enough to notice a log rewritten in place with more bytes.
const checkLen = 64

// record is the cached Meta of one log and the state of the log it was
// derived from.
type record struct {
	rel          string
	key          recall.Key // the key rel names
	st           fileStat
	off          int64  // committed end of the log
	check        uint32 // crc32 of the checkLen bytes before off
	unterminated bool
	archived     bool
	empty        bool
	updated      time.Time

	// A record is shared and, but for its lazily decoded Meta, immutable.
	once    sync.Once
	raw     []byte       // Meta JSON from the journal, decoded on demand
	meta    *recall.Meta // nil until decoded
	metaErr error
}

func newRecord(key recall.Key, rel string, st fileStat, off int64, check uint32, unterminated bool, m recall.Meta) *record {
	r := &record{rel: rel, key: key, st: st, off: off, check: check, unterminated: unterminated,
		archived: m.Archived, empty: m.LastSeq == 0 && m.Corrupt == 0, updated: m.Updated, meta: &m}
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
	return recall.Meta{Key: r.key, Updated: r.updated, Archived: r.archived}
}

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
	for _, n := range []int64{int64(r.st.ino), r.st.size, r.st.mtime, r.off, int64(r.check)} {
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

// appendTombstone encodes the removal of rel as one journal line.
func appendTombstone(buf []byte, rel string) []byte {
	start := len(buf)
	buf = append(buf, "00000000 "...)
	buf = append(buf, rel...)
	buf = append(buf, " -"...)
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

// parseRecord decodes a journal line. tomb reports a tombstone; ok is false
// for a line that does not parse (a torn or damaged journal), which is
// skipped.
func parseRecord(line []byte) (r *record, tomb, ok bool) {
	rest, ok := checkLine(line)
	if !ok {
		return nil, false, false
	}
	var f [9][]byte
	for i := range f {
		j := bytes.IndexByte(rest, ' ')
		if j < 0 {
			if i == 1 && string(rest) == "-" {
				return &record{rel: string(f[0])}, true, true
			}
			return nil, false, false
		}
		f[i], rest = rest[:j], rest[j+1:]
	}
	if len(f[0]) == 0 || len(rest) == 0 {
		return nil, false, false
	}
	var n [8]int64
	for i, j := range []int{1, 2, 3, 4, 5, 7, 8} {
		if n[i], ok = atoi(f[j]); !ok {
			return nil, false, false
		}
	}
	r = &record{
		rel:     string(f[0]),
		st:      fileStat{ino: uint64(n[0]), size: n[1], mtime: n[2]},
		off:     n[3],
		check:   uint32(n[4]),
		updated: time.Unix(n[5], n[6]).UTC(),
		raw:     rest, // the journal's read buffer is never reused
	}
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
	return r, false, true
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

	mu      sync.Mutex
	recs    map[string]*record
	jIno    uint64 // the journal file read so far, 0 for none
	jOff    int64  // bytes of it consumed
	jLines  int    // lines in it
	written int    // lines this process appended since it last read it
	oldGone bool   // the journals of earlier versions were removed

	dirty  map[string]*record // cached but not yet in the journal
	timer  *time.Timer        // the pending flush of dirty, if any
	closed bool               // the store is closed: write through

	// flushing is held through a whole flush, journal write included, so
	// that Close returns only after a flush its timer started is done.
	flushing sync.Mutex
}

// flushDelay is how long a record put by a write waits before it goes to
// the journal. Appends to a busy session within it become one journal line,
// and an append touches no second file: the journal's writes land in the
// page cache in the background, never between a log write and its fsync.
// Until then other processes find the log newer than its record and read
// just the bytes it gained.
const flushDelay = 100 * time.Millisecond

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
		p = &projectIndex{name: name, dir: dir, path: filepath.Join(dir, indexName), recs: map[string]*record{}, dirty: map[string]*record{}}
		s.projects[name] = p
	}
	return p
}

// get returns the cached record of rel; nil when there is none.
func (p *projectIndex) get(rel string) *record {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.recs[rel]
}

// journalSize returns the size of the journal file, 0 when it is missing.
func (p *projectIndex) journalSize() int64 {
	st, err := statPath(p.path)
	if err != nil {
		return 0
	}
	return st.size
}

// refresh reads what was appended to the journal since the last read, or
// all of it when the file was replaced. The caller holds p.mu.
//
// The first refresh of a project in a process removes the journals of
// earlier index versions (see oldIndexNames): they are never read, and the
// logs they describe are derived afresh.
func (p *projectIndex) refresh() error {
	if !p.oldGone {
		p.oldGone = true
		for _, name := range oldIndexNames {
			os.Remove(filepath.Join(p.dir, name))
		}
	}
	f, err := os.Open(p.path)
	if err != nil {
		if isNotExist(err) {
			p.jIno, p.jOff, p.jLines = 0, 0, 0
			return nil
		}
		return err
	}
	defer f.Close()
	st, err := fstat(f)
	if err != nil {
		return err
	}
	if st.ino != p.jIno || st.size < p.jOff {
		p.jIno, p.jOff, p.jLines = st.ino, 0, 0
	}
	p.written = 0
	if st.size == p.jOff {
		return nil
	}
	buf := make([]byte, st.size-p.jOff)
	n, _ := f.ReadAt(buf, p.jOff) // a short read leaves the rest for next time
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n') + 1 // a torn last line waits
	if len(p.recs) == 0 {
		p.recs = make(map[string]*record, bytes.Count(buf[:end], []byte{'\n'}))
	}
	for _, line := range bytes.Split(buf[:end], []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		p.jLines++
		r, tomb, ok := parseRecord(line)
		if ok {
			r.key, ok = keyOf(p.name, r.rel)
		}
		switch {
		case !ok:
		case tomb:
			delete(p.recs, r.rel)
		default:
			p.recs[r.rel] = r
		}
	}
	p.jOff += int64(end)
	return nil
}

// put caches records; flush appends them to the journal shortly after. A
// failed journal write is not an error of the operation that produced the
// records: the log already holds the truth, and the next reader re-derives
// it.
func (p *projectIndex) put(recs ...*record) {
	p.mu.Lock()
	for _, r := range recs {
		p.recs[r.rel] = r
		p.dirty[r.rel] = r
	}
	closed := p.closed
	if !closed && p.timer == nil {
		p.timer = time.AfterFunc(flushDelay, p.flush)
	}
	p.mu.Unlock()
	if closed {
		p.flush()
	}
}

// flush appends the dirty records to the journal, and now and then
// compacts it.
func (p *projectIndex) flush() {
	p.flushing.Lock()
	defer p.flushing.Unlock()
	var buf []byte
	p.mu.Lock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	for rel, r := range p.dirty {
		buf = appendRecord(buf, r)
		delete(p.dirty, rel)
	}
	p.written += bytes.Count(buf, []byte{'\n'})
	check := p.written >= compactEvery
	p.mu.Unlock()
	p.appendJournal(buf)
	if check {
		p.mu.Lock()
		// read what every process appended, so the rewrite keeps their
		// records too
		if p.refresh() == nil {
			p.compactLocked(false)
		}
		p.mu.Unlock()
	}
}

// drop forgets rel and every record under it and appends tombstones.
func (p *projectIndex) drop(rel string, subtree bool) {
	var buf []byte
	p.mu.Lock()
	for r := range p.recs {
		if r == rel || subtree && len(r) > len(rel) && r[:len(rel)] == rel && r[len(rel)] == '/' {
			delete(p.recs, r)
			delete(p.dirty, r)
			buf = appendTombstone(buf, r)
		}
	}
	p.mu.Unlock()
	p.appendJournal(buf)
}

func (p *projectIndex) appendJournal(buf []byte) {
	if len(buf) == 0 {
		return
	}
	f, err := os.OpenFile(p.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	// One write, so concurrent appenders never interleave lines. It starts
	// with a newline: if a crash left the journal's last line torn, the
	// records must not glue onto it (the blank line this leaves otherwise
	// is skipped).
	f.Write(append([]byte{'\n'}, buf...))
	f.Close()
}

// close flushes the dirty records and makes later puts write through.
func (p *projectIndex) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.flush()
}

// compactLocked rewrites the journal with one line per cached record when
// it has grown to more than twice that. The caller holds p.mu.
func (p *projectIndex) compactLocked(force bool) error {
	if !force && p.jLines <= 2*len(p.recs)+256 {
		return nil
	}
	var buf []byte
	for _, r := range p.recs {
		buf = appendRecord(buf, r)
	}
	if err := replaceAtomic(p.path, buf); err != nil {
		return err
	}
	st, err := statPath(p.path)
	if err != nil {
		p.jIno, p.jOff, p.jLines = 0, 0, 0 // read it all again next time
		return nil
	}
	p.jIno, p.jOff, p.jLines = st.ino, int64(len(buf)), len(p.recs)
	if st.size != int64(len(buf)) {
		p.jIno, p.jOff, p.jLines = 0, 0, 0 // someone appended already
	}
	return nil
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
func derive(ctx context.Context, f *os.File, key recall.Key, rel string, st fileStat, prev *record) (*record, error) {
	var m recall.Meta
	from := int64(0)
	unterminated := false
	if prev != nil && prev.st.ino == st.ino && st.size >= prev.off {
		if pm, err := prev.Meta(); err == nil {
			if c, err := tailCheck(f, prev.off); err == nil && c == prev.check {
				m, from, unterminated = pm, prev.off, prev.unterminated
			}
		}
	}
	if from == 0 {
		m = recall.Meta{Key: key}
		unterminated = false
	}
	sc := scanner{emit: m.Apply} // Apply counts unusable items in Corrupt
	if err := sc.scanFile(ctx, f, from, st.size); err != nil {
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
	return newRecord(key, rel, st, sc.end, check, unterminated, m), nil
}
