package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"

	"github.com/recallkit/recall"
)

// Stat implements recall.Store.
func (s *Store) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if err := s.check(key); err != nil {
		return recall.Meta{}, err
	}
	_, m, err := scanMeta(s.db.q().queryRow(ctx, `SELECT `+metaCols+` FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3`,
		key.Project, key.Session, key.Subpath))
	if errors.Is(err, sql.ErrNoRows) {
		err = recall.ErrNotFound
	}
	if err != nil {
		return recall.Meta{}, fmt.Errorf("sqlstore: stat %s: %w", key, err)
	}
	return m, nil
}

// Load implements recall.Store.
func (s *Store) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	if err := s.check(key); err != nil {
		return recall.Meta{}, nil, err
	}
	var (
		meta    recall.Meta
		entries []recall.Entry
	)
	err := s.db.view(ctx, func(q querier) error {
		sid, m, err := scanMeta(q.queryRow(ctx, `SELECT `+metaCols+` FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3`,
			key.Project, key.Session, key.Subpath))
		if errors.Is(err, sql.ErrNoRows) {
			return recall.ErrNotFound
		}
		if err != nil {
			return err
		}
		meta = m
		entries, err = readEntries(ctx, q, sid, 0, 0)
		return err
	})
	if err != nil {
		return recall.Meta{}, nil, fmt.Errorf("sqlstore: load %s: %w", key, err)
	}
	return meta, entries, nil
}

// Entries implements recall.Store.
func (s *Store) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	if err := s.check(key); err != nil {
		return nil, err
	}
	var entries []recall.Entry
	err := s.db.view(ctx, func(q querier) error {
		sid, err := sessionID(ctx, q, key)
		if err != nil {
			return err
		}
		entries, err = readEntries(ctx, q, sid, after, limit)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: entries of %s: %w", key, err)
	}
	return entries, nil
}

// sessionID returns key's sid, or ErrNotFound.
func sessionID(ctx context.Context, q querier, key recall.Key) (int64, error) {
	var sid int64
	err := q.queryRow(ctx, `SELECT sid FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3`,
		key.Project, key.Session, key.Subpath).Scan(&sid)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, recall.ErrNotFound
	}
	return sid, err
}

// readEntries returns up to limit (all when limit <= 0) of session sid's
// entries with seq above after, in seq order.
func readEntries(ctx context.Context, q querier, sid, after int64, limit int) ([]recall.Entry, error) {
	stmt := `SELECT ` + entryCols + ` FROM entries WHERE session = $1 AND seq > $2 ORDER BY seq`
	args := []any{sid, after}
	if limit > 0 {
		stmt += ` LIMIT $3`
		args = append(args, limit)
	}
	rs, err := q.query(ctx, stmt, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []recall.Entry
	for rs.Next() {
		e, err := scanEntry(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rs.Err()
}

// Items implements recall.Store. It reads the log backwards through the
// (session, seq) index, ORDER BY seq DESC LIMIT n, and lets recall.Tail
// decide when it has read enough: its cost is O(limit + pops), not the
// length of the log.
//
// The common case is one statement, which PostgreSQL and SQLite both run
// in one snapshot: the newest limit+slack entries. When Tail needs more
// than that (many pops, limit <= 0), the read starts over in a read-only
// transaction that pages backwards, so the view never mixes two states of
// the session.
func (s *Store) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, error) {
	if err := s.check(key); err != nil {
		return nil, err
	}
	if limit > 0 {
		live, done, err := s.itemsOneShot(ctx, key, limit)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: items of %s: %w", key, err)
		}
		if done {
			return live, nil
		}
	}
	var live []recall.LiveItem
	err := s.db.view(ctx, func(q querier) error {
		sid, err := sessionID(ctx, q, key)
		if errors.Is(err, recall.ErrNotFound) {
			live = nil
			return nil
		}
		if err != nil {
			return err
		}
		chunk := 256
		if limit > 0 {
			chunk = 2*limit + 16
		}
		live, err = recall.Tail(limit, backwards(ctx, q, sid, chunk))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: items of %s: %w", key, err)
	}
	return live, nil
}

// The statements that read a log backwards. Each walks the (session, seq)
// primary key index from the end and stops at the LIMIT.
const (
	// newestSQL reads the newest $4 entries of the session with key $1-$3.
	// The sid is a scalar subquery, not a join: PostgreSQL then scans the
	// index of one known session backwards, where a join makes it sort the
	// whole log.
	newestSQL = `SELECT seq, kind, payload FROM entries
		WHERE session = (SELECT sid FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3)
		ORDER BY seq DESC LIMIT $4`
	// backwardsSQL reads the newest $2 entries of session $1.
	backwardsSQL = `SELECT seq, kind, payload FROM entries WHERE session = $1 ORDER BY seq DESC LIMIT $2`
	// backwardsBeforeSQL reads the $2 entries of session $1 below seq $3.
	backwardsBeforeSQL = `SELECT seq, kind, payload FROM entries WHERE session = $1 AND seq < $3 ORDER BY seq DESC LIMIT $2`
)

// itemsOneShot tries Items with one statement reading the newest
// limit+slack entries. done is false when Tail wanted more entries than
// that statement returned while the log may hold more.
func (s *Store) itemsOneShot(ctx context.Context, key recall.Key, limit int) (live []recall.LiveItem, done bool, err error) {
	n := limit + 8 // slack for a few pops or title/meta entries
	rs, err := s.db.q().query(ctx, newestSQL, key.Project, key.Session, key.Subpath, n)
	if err != nil {
		return nil, false, err
	}
	defer rs.Close()
	read, short := 0, false
	live, err = recall.Tail(limit, func(yield func(recall.Entry, error) bool) {
		for rs.Next() {
			read++
			e, err := scanTailEntry(rs)
			if !yield(e, err) || err != nil {
				return
			}
		}
		if err := rs.Err(); err != nil {
			yield(recall.Entry{}, err)
			return
		}
		// The statement ran out: the log is exhausted unless it was cut
		// by the LIMIT.
		short = read == n
	})
	if err != nil {
		return nil, false, err
	}
	return live, !short, nil
}

// backwards yields session sid's entries from the newest down, reading
// them chunk at a time (the chunk grows for long reads). It is meant for a
// transaction, whose snapshot keeps the pages consistent.
func backwards(ctx context.Context, q querier, sid int64, chunk int) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		before := int64(-1) // no upper bound yet
		for {
			stmt, args := backwardsSQL, []any{sid, chunk}
			if before >= 0 {
				stmt, args = backwardsBeforeSQL, append(args, before)
			}
			rs, err := q.query(ctx, stmt, args...)
			if err != nil {
				yield(recall.Entry{}, err)
				return
			}
			n := 0
			for rs.Next() {
				e, err := scanTailEntry(rs)
				if err != nil {
					rs.Close()
					yield(recall.Entry{}, err)
					return
				}
				n++
				before = e.Seq
				if !yield(e, nil) {
					rs.Close()
					return
				}
			}
			err = rs.Err()
			rs.Close()
			if err != nil {
				yield(recall.Entry{}, err)
				return
			}
			if n < chunk {
				return
			}
			chunk = min(chunk*4, 4096)
		}
	}
}

// scanTailEntry reads seq, kind and payload: what Tail looks at.
func scanTailEntry(r interface{ Scan(...any) error }) (recall.Entry, error) {
	var (
		e       recall.Entry
		kind    string
		payload []byte
	)
	if err := r.Scan(&e.Seq, &kind, &payload); err != nil {
		return recall.Entry{}, err
	}
	e.Kind = recall.Kind(kind)
	if len(payload) > 0 {
		e.Data = payload
	}
	return e, nil
}
