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
	"strconv"
	"sync"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fsys"
)

// A record, and the journal's lines: how a record is written to the
// journal and read back, each line sealed by its crc.

// checkLen is how many bytes before a record's committed end its crc
// covers: enough to notice a log rewritten in place with more bytes.
const checkLen = 64

// logEnd is the state of a log a record was derived from: the file's
// stat, where its committed entries end, and what lies before that end.
type logEnd struct {
	st           fsys.Stat
	off          int64  // committed end of the log
	check        uint32 // crc32 of the checkLen bytes before off
	unterminated bool   // the last committed line lacks its newline
}

// record is the cached Meta of one log and the state of the log it was
// derived from.
type record struct {
	rel string
	key recall.Key // the key rel names
	logEnd
	archived bool
	pinned   bool // Meta.Pinned, known without decoding (see pinnedJSON)
	// Meta.Trashed, known without decoding (see trashedJSON)
	trashed time.Time
	empty   bool
	updated time.Time
	ctl     controlLines // the view's control lines below off

	// A record is shared and, but for its lazily decoded Meta, immutable.
	once    sync.Once
	raw     []byte       // Meta JSON from the journal, decoded on demand
	meta    *recall.Meta // nil until decoded
	metaErr error
}

// newRecord returns the record of the log rel (key's) in the state end,
// whose metadata is m and whose view's control lines are ctl.
func newRecord(key recall.Key, rel string, end logEnd, m recall.Meta, ctl controlLines) *record {
	r := &record{rel: rel, key: key, logEnd: end,
		archived: m.Archived, pinned: m.Pinned, trashed: m.Trashed, empty: m.LastSeq == 0 && m.Corrupt == 0, updated: m.Updated, meta: &m, ctl: ctl}
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
	return recall.Meta{Key: r.key, Updated: r.updated, Archived: r.archived, Pinned: r.pinned, Trashed: r.trashed}
}

// pinnedJSON is how a journal record's Meta JSON (appendRecord, which
// writes json.Marshal's) says the session is pinned. Only a pinned Meta
// holds it (the field is omitted when false, and a string value cannot
// hold its quotes unescaped), so parseChecked decodes the Meta of the
// records that hold it, the pinned ones and look-alikes, to know which
// are pinned, and leaves the rest undecoded.
var pinnedJSON = []byte(`"pinned":true`)

// trashedJSON is how a journal record's Meta JSON says the session is in
// the trash, as pinnedJSON says it is pinned: only such a Meta holds the
// field, so parseChecked decodes those records (and look-alikes, such as
// a metadata key "trashed") to read Meta.Trashed.
var trashedJSON = []byte(`"trashed":"`)

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
		logEnd:  logEnd{st: fsys.Stat{Ino: uint64(n[0]), Size: n[1], Mtime: n[2]}, off: n[3], check: uint32(n[4])},
		updated: time.Unix(n[5], n[6]).UTC(),
		raw:     bytes.Clone(rest), // the journal's read buffer is reused
	}
	if (bytes.Contains(r.raw, pinnedJSON) || bytes.Contains(r.raw, trashedJSON)) && r.decode() == nil {
		r.pinned, r.trashed = r.meta.Pinned, r.meta.Trashed // decode dropped raw
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

// headCheck returns the crc of the first checkLen bytes of f, whose size
// is size (all of them when it is shorter).
func headCheck(f *os.File, size int64) (uint32, error) {
	n := min(size, checkLen)
	var b [checkLen]byte
	if _, err := f.ReadAt(b[:n], 0); err != nil {
		return 0, err
	}
	return crc32.ChecksumIEEE(b[:n]), nil
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
	return newRecord(key, rel, logEnd{st, sc.end, check, unterminated}, m, ctl), nil
}
