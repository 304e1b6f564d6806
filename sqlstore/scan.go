package sqlstore

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/recallkit/recall"
)

// metaCols are the sessions columns that make up a recall.Meta, in the
// order scanMeta reads them; sid comes first.
const metaCols = `sid, project, id, subpath, title, title_source, created_at, updated_at,
	item_count, last_seq, archived, pinned, labels, metadata, forked_from, fork_seq,
	input_tokens, output_tokens, total_tokens, first_prompt, trashed_at`

// scanMeta reads a row of metaCols, and any further columns into extra.
func scanMeta(r interface{ Scan(...any) error }, extra ...any) (int64, recall.Meta, error) {
	var (
		sid            int64
		m              recall.Meta
		source         string
		labels, forked []byte
		metadata       []byte
		forkSeq        sql.NullInt64
	)
	err := r.Scan(append([]any{&sid, &m.Key.Project, &m.Key.Session, &m.Key.Subpath, &m.Title, &source,
		dbTime{&m.Created}, dbTime{&m.Updated}, &m.ItemCount, &m.LastSeq, &m.Archived, &m.Pinned,
		&labels, &metadata, &forked, &forkSeq, &m.Usage.InputTokens, &m.Usage.OutputTokens, &m.Usage.TotalTokens, &m.FirstPrompt, dbTime{&m.Trashed}}, extra...)...)
	if err != nil {
		return 0, recall.Meta{}, err
	}
	m.TitleSource = recall.TitleSource(source)
	if len(labels) > 0 {
		if err := json.Unmarshal(labels, &m.Labels); err != nil {
			return 0, recall.Meta{}, fmt.Errorf("%w: labels of %s: %v", recall.ErrCorrupt, m.Key, err)
		}
		if len(m.Labels) == 0 {
			m.Labels = nil
		}
	}
	if len(metadata) > 0 {
		if err := json.Unmarshal(metadata, &m.Metadata); err != nil {
			return 0, recall.Meta{}, fmt.Errorf("%w: metadata of %s: %v", recall.ErrCorrupt, m.Key, err)
		}
		if len(m.Metadata) == 0 {
			m.Metadata = nil
		}
	}
	if len(forked) > 0 {
		var k recall.Key
		if err := json.Unmarshal(forked, &k); err != nil {
			return 0, recall.Meta{}, fmt.Errorf("%w: forked_from of %s: %v", recall.ErrCorrupt, m.Key, err)
		}
		m.ForkedFrom = &recall.ForkOrigin{Key: k, Seq: forkSeq.Int64}
	}
	return sid, m, nil
}

// metaArgs returns the values of the writable meta columns, in the order
// of metaSetCols.
func (s *Store) metaArgs(m recall.Meta) []any {
	var labels, metadata, forked, forkSeq, trashed any
	if !m.Trashed.IsZero() {
		trashed = s.db.timeArg(m.Trashed)
	}
	if len(m.Labels) > 0 {
		b, _ := json.Marshal(m.Labels) // a []string always marshals
		labels = string(b)
	}
	if len(m.Metadata) > 0 {
		b, _ := json.Marshal(m.Metadata) // a map[string]string always marshals
		metadata = string(b)
	}
	if m.ForkedFrom != nil {
		b, _ := json.Marshal(m.ForkedFrom.Key)
		forked, forkSeq = string(b), m.ForkedFrom.Seq
	}
	return []any{m.Title, string(m.TitleSource), s.db.timeArg(m.Created), s.db.timeArg(m.Updated),
		m.ItemCount, m.LastSeq, m.Archived, m.Pinned, labels, metadata, forked, forkSeq,
		m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.TotalTokens, searchText(m.Title), m.FirstPrompt, trashed}
}

// metaSetCols are the columns metaArgs fills.
var metaSetCols = []string{"title", "title_source", "created_at", "updated_at",
	"item_count", "last_seq", "archived", "pinned", "labels", "metadata", "forked_from", "fork_seq",
	"input_tokens", "output_tokens", "total_tokens", "search_title", "first_prompt", "trashed_at"}

// entryCols are the entries columns scanEntry reads.
const entryCols = `seq, kind, payload, time, input_tokens, output_tokens, total_tokens`

// scanEntry reads a row of entryCols.
func scanEntry(r interface{ Scan(...any) error }) (recall.Entry, error) {
	var (
		e           recall.Entry
		kind        string
		payload     []byte
		in, out, tt sql.NullInt64
	)
	if err := r.Scan(&e.Seq, &kind, &payload, dbTime{&e.Time}, &in, &out, &tt); err != nil {
		return recall.Entry{}, err
	}
	e.Kind = recall.Kind(kind)
	if len(payload) > 0 {
		e.Data = payload
	}
	if in.Valid {
		e.Usage = &recall.Usage{InputTokens: in.Int64, OutputTokens: out.Int64, TotalTokens: tt.Int64}
	}
	return e, nil
}

// usageArgs returns the three usage columns of an entry: NULL without usage.
func usageArgs(u *recall.Usage) (in, out, total any) {
	if u == nil {
		return nil, nil, nil
	}
	return u.InputTokens, u.OutputTokens, u.TotalTokens
}

// payloadArg returns the payload column of an entry: NULL when empty.
func payloadArg(data json.RawMessage) any {
	if len(data) == 0 {
		return nil
	}
	return []byte(data)
}

// dbTime scans a time column: a timestamptz (PostgreSQL) or an integer of
// microseconds since the epoch (SQLite). Either way the result is UTC.
type dbTime struct{ t *time.Time }

// Scan implements sql.Scanner; pgx uses it too.
func (d dbTime) Scan(src any) error {
	switch v := src.(type) {
	case time.Time:
		*d.t = v.UTC()
	case int64:
		*d.t = time.UnixMicro(v).UTC()
	case nil:
		*d.t = time.Time{}
	default:
		return fmt.Errorf("sqlstore: cannot scan %T into a time", src)
	}
	return nil
}

// stamp prepares a batch for writing after seq last: it assigns seqs,
// fills a zero Time with now, and cuts every time to the microsecond the
// columns keep, so the metadata computed from the batch equals what a
// reader of the stored log computes. The entries are copies.
func stamp(entries []recall.Entry, last int64, now time.Time) []recall.Entry {
	out := make([]recall.Entry, len(entries))
	for i, e := range entries {
		e = e.Clone()
		e.Seq = last + int64(i) + 1
		if e.Time.IsZero() {
			e.Time = now
		}
		e.Time = e.Time.UTC().Truncate(time.Microsecond)
		out[i] = e
	}
	return out
}
