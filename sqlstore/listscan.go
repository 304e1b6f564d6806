package sqlstore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// SQLite's List reads each row as one text value: modernc.org/sqlite
// hands a row to database/sql column by column, each column two or three
// calls into the translated C library that each take the connection's
// mutex, and database/sql converts every value again. For List's 20
// columns that per-column cost was most of the page: the same 20 columns
// scanned into plain variables cost 1.7x to 3.5x a 5-column query over
// the same rows (docs/BENCHMARKS.md, "Performance at the floor: SQL
// stores"). One column per row leaves SQLite to build the value (cheap,
// in its own loop) and Go to cut it, with no allocation per field.
//
// The value is the integers, then the byte lengths of the text columns
// but the last, each followed by a space, then the text columns back to
// back, the last one (first_prompt) running to the end:
//
//	created updated items last archived pinned forkseq in out total trashed
//	len(project) len(id) len(subpath) len(title) len(source)
//	len(labels) len(metadata) len(forked) <texts>
//
// (By the profile a number costs printf about a third of what a column
// costs the driver, so the value holds only what a Meta needs: not the
// sid.)
//
// The lengths are octet_length, bytes, so a text holding any byte (a
// space, a NUL, invalid UTF-8) is cut where it ends; a NULL column is a
// length of 0 (printf's %d reads NULL as 0, and concat leaves it out), as
// an empty one, which scanMeta treats alike; concat builds the value in
// one allocation, where a chain of || copies it once per text. PostgreSQL
// keeps the columns: pgx decodes a row in one pass over its binary
// format, and its List is within 2x of the plain query as it is.
// (trashed_at is 0 when NULL, a session not in the trash.)
const metaPackedLite = `concat(printf('%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d ',
		created_at, updated_at, item_count, last_seq, archived, pinned, fork_seq,
		input_tokens, output_tokens, total_tokens, trashed_at,
		octet_length(project), octet_length(id), octet_length(subpath), octet_length(title), octet_length(title_source),
		octet_length(labels), octet_length(metadata), octet_length(forked_from)),
	project, id, subpath, title, title_source, labels, metadata, forked_from, first_prompt)`

// packedInts and packedTexts count the numbers of a metaPackedLite value
// before its texts: the integer columns, and a length per text column.
const (
	packedInts  = 11
	packedTexts = 9
)

// metaPacker decodes metaPackedLite values. It scans every row into the
// same string, so a row costs one allocation (the driver's copy of the
// value), which the Meta's strings then share.
type metaPacker struct {
	v    string
	dest []any
}

// scan reads the current row of r, one metaPackedLite column.
func (p *metaPacker) scan(r interface{ Scan(...any) error }) (recall.Meta, error) {
	if p.dest == nil {
		p.dest = []any{&p.v}
	}
	if err := r.Scan(p.dest...); err != nil {
		return recall.Meta{}, err
	}
	return decodePackedMeta(p.v)
}

// decodePackedMeta decodes a metaPackedLite value into the Meta scanMeta
// reads from the columns.
func decodePackedMeta(v string) (recall.Meta, error) {
	var n [packedInts + packedTexts - 1]int64
	rest := v
	for i := range n {
		x, r, ok := cutInt(rest)
		if !ok {
			return recall.Meta{}, fmt.Errorf("%w: session row: number %d of %d unreadable", recall.ErrCorrupt, i+1, len(n))
		}
		n[i], rest = x, r
	}
	var texts [packedTexts]string
	for i, l := range n[packedInts:] {
		if l < 0 || l > int64(len(rest)) {
			return recall.Meta{}, fmt.Errorf("%w: session row: text %d of %d bytes, %d left", recall.ErrCorrupt, i, l, len(rest))
		}
		texts[i], rest = rest[:l], rest[l:]
	}
	texts[packedTexts-1] = rest
	m := recall.Meta{
		Key:         recall.Key{Project: texts[0], Session: texts[1], Subpath: texts[2]},
		Title:       texts[3],
		TitleSource: recall.TitleSource(texts[4]),
		Created:     time.UnixMicro(n[0]).UTC(),
		Updated:     time.UnixMicro(n[1]).UTC(),
		ItemCount:   int(n[2]),
		LastSeq:     n[3],
		Archived:    n[4] != 0,
		Pinned:      n[5] != 0,
		Usage:       recall.Usage{InputTokens: n[7], OutputTokens: n[8], TotalTokens: n[9]},
		FirstPrompt: texts[8],
	}
	if n[10] != 0 {
		m.Trashed = time.UnixMicro(n[10]).UTC()
	}
	if labels := texts[5]; labels != "" {
		if err := json.Unmarshal([]byte(labels), &m.Labels); err != nil {
			return recall.Meta{}, fmt.Errorf("%w: labels of %s: %v", recall.ErrCorrupt, m.Key, err)
		}
		if len(m.Labels) == 0 {
			m.Labels = nil
		}
	}
	if metadata := texts[6]; metadata != "" {
		if err := json.Unmarshal([]byte(metadata), &m.Metadata); err != nil {
			return recall.Meta{}, fmt.Errorf("%w: metadata of %s: %v", recall.ErrCorrupt, m.Key, err)
		}
		if len(m.Metadata) == 0 {
			m.Metadata = nil
		}
	}
	if forked := texts[7]; forked != "" {
		var k recall.Key
		if err := json.Unmarshal([]byte(forked), &k); err != nil {
			return recall.Meta{}, fmt.Errorf("%w: forked_from of %s: %v", recall.ErrCorrupt, m.Key, err)
		}
		m.ForkedFrom = &recall.ForkOrigin{Key: k, Seq: n[6]}
	}
	return m, nil
}

// cutInt reads the decimal integer at the start of s, which printf's %d
// wrote, and the space after it, and returns the rest of s.
func cutInt(s string) (n int64, rest string, ok bool) {
	i := 0
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		i++
	}
	start := i
	for ; i < len(s) && s[i] != ' '; i++ {
		c := s[i]
		if c < '0' || c > '9' || i-start >= 19 {
			// not a digit, or past int64's digits: let strconv judge
			sp := strings.IndexByte(s, ' ')
			if sp < 0 {
				return 0, "", false
			}
			x, err := strconv.ParseInt(s[:sp], 10, 64)
			return x, s[sp+1:], err == nil
		}
		n = n*10 + int64(c-'0')
	}
	if i == start || i == len(s) {
		return 0, "", false
	}
	if neg {
		n = -n
	}
	return n, s[i+1:], true
}

// metaScanner reads rows of metaCols on PostgreSQL, for List: every row
// into the same variables, with the times scanned as timestamptz into
// time.Time (pgx's own plan, where scanMeta's dbTime, a sql.Scanner,
// costs an interface conversion and an allocation a column), and no
// slice of destinations built per row.
type metaScanner struct {
	sid                      int64
	m                        recall.Meta
	source                   string
	labels, metadata, forked []byte
	forkSeq                  *int64
	trashed                  *time.Time
	dest                     []any
}

// scan reads the current row of r.
func (p *metaScanner) scan(r interface{ Scan(...any) error }) (recall.Meta, error) {
	if p.dest == nil {
		m := &p.m
		p.dest = []any{&p.sid, &m.Key.Project, &m.Key.Session, &m.Key.Subpath, &m.Title, &p.source,
			&m.Created, &m.Updated, &m.ItemCount, &m.LastSeq, &m.Archived, &m.Pinned,
			&p.labels, &p.metadata, &p.forked, &p.forkSeq, &m.Usage.InputTokens, &m.Usage.OutputTokens, &m.Usage.TotalTokens, &m.FirstPrompt, &p.trashed}
	}
	p.labels, p.metadata, p.forked, p.forkSeq, p.trashed = nil, nil, nil, nil, nil
	if err := r.Scan(p.dest...); err != nil {
		return recall.Meta{}, err
	}
	m := p.m
	m.Created, m.Updated = m.Created.UTC(), m.Updated.UTC()
	m.TitleSource = recall.TitleSource(p.source)
	m.Labels, m.Metadata, m.ForkedFrom, m.Trashed = nil, nil, nil, time.Time{}
	if p.trashed != nil {
		m.Trashed = p.trashed.UTC()
	}
	if len(p.labels) > 0 {
		if err := json.Unmarshal(p.labels, &m.Labels); err != nil {
			return recall.Meta{}, fmt.Errorf("%w: labels of %s: %v", recall.ErrCorrupt, m.Key, err)
		}
		if len(m.Labels) == 0 {
			m.Labels = nil
		}
	}
	if len(p.metadata) > 0 {
		if err := json.Unmarshal(p.metadata, &m.Metadata); err != nil {
			return recall.Meta{}, fmt.Errorf("%w: metadata of %s: %v", recall.ErrCorrupt, m.Key, err)
		}
		if len(m.Metadata) == 0 {
			m.Metadata = nil
		}
	}
	if len(p.forked) > 0 {
		var k recall.Key
		if err := json.Unmarshal(p.forked, &k); err != nil {
			return recall.Meta{}, fmt.Errorf("%w: forked_from of %s: %v", recall.ErrCorrupt, m.Key, err)
		}
		m.ForkedFrom = &recall.ForkOrigin{Key: k}
		if p.forkSeq != nil {
			m.ForkedFrom.Seq = *p.forkSeq
		}
	}
	return m, nil
}
