package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"

	"github.com/recallkit/recall"
)

// The statements that read one session.
const (
	// statSQL reads the metadata of the session with key $1-$3.
	statSQL = `SELECT ` + metaCols + ` FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3`
	// sessionIDSQL reads the sid of the session with key $1-$3.
	sessionIDSQL = `SELECT sid FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3`
	// lastSeqSQL reads the sid and last_seq of the session with key $1-$3.
	lastSeqSQL = `SELECT sid, last_seq FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3`
	// entriesSQL reads session $1's entries above seq $2.
	entriesSQL = `SELECT ` + entryCols + ` FROM entries WHERE session = $1 AND seq > $2 ORDER BY seq`
	// entriesLimitSQL reads the first $3 of them.
	entriesLimitSQL = entriesSQL + ` LIMIT $3`
)

// Stat implements recall.Store.
func (s *Store) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if err := s.check(key); err != nil {
		return recall.Meta{}, err
	}
	var m recall.Meta
	err := s.read(func() (err error) {
		_, m, err = scanMeta(s.db.q().queryRow(ctx, statSQL, key.Project, key.Session, key.Subpath))
		return err
	})
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
	err := s.db.view(ctx, func(ctx context.Context, q querier) error {
		sid, m, err := scanMeta(q.queryRow(ctx, statSQL, key.Project, key.Session, key.Subpath))
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
	err := s.db.view(ctx, func(ctx context.Context, q querier) error {
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
	err := q.queryRow(ctx, sessionIDSQL, key.Project, key.Session, key.Subpath).Scan(&sid)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, recall.ErrNotFound
	}
	return sid, err
}

// readEntries returns up to limit (all when limit <= 0) of session sid's
// entries with seq above after, in seq order.
func readEntries(ctx context.Context, q querier, sid, after int64, limit int) ([]recall.Entry, error) {
	stmt, args := entriesSQL, []any{sid, after}
	if limit > 0 {
		stmt, args = entriesLimitSQL, append(args, limit)
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

// Items implements recall.Store. It reads the log backwards, newest
// first, and lets recall.Tail decide when it has read enough, so its cost
// is O(limit + pops), not the length of the log.
//
// Every read names a window of seqs below last_seq rather than relying on
// ORDER BY ... LIMIT alone: seqs are dense, so the window holds exactly the
// entries wanted, and the read costs O(window) whatever plan the database
// picks (PostgreSQL's planner, estimating an average session, may prefer to
// fetch a session's whole log and sort it).
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
		var (
			live []recall.LiveItem
			done bool
		)
		err := s.read(func() (err error) {
			live, done, err = s.itemsOneShot(ctx, key, limit)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("sqlstore: items of %s: %w", key, err)
		}
		if done {
			return live, nil
		}
	}
	var live []recall.LiveItem
	err := s.db.view(ctx, func(ctx context.Context, q querier) error {
		var sid, last int64
		err := q.queryRow(ctx, lastSeqSQL, key.Project, key.Session, key.Subpath).Scan(&sid, &last)
		if errors.Is(err, sql.ErrNoRows) {
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
		live, err = recall.Tail(limit, backwards(ctx, q, sid, last, chunk))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: items of %s: %w", key, err)
	}
	return live, nil
}

// The statements that read a log backwards, a window of seqs at a time,
// through the (session, seq) primary key.
const (
	// newestSQL reads the entries of the session with key $1-$3 whose
	// seq is above last_seq - $4: the newest $4. The session row is looked
	// up in scalar subqueries rather than joined: both planners then seek
	// one known session's index range (SQLite ran the join form four times
	// slower, PostgreSQL sorted its whole log).
	newestSQL = `SELECT seq, kind, payload FROM entries
		WHERE session = (SELECT sid FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3)
		AND seq > (SELECT last_seq FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3) - $4
		ORDER BY seq DESC`
	// windowSQL reads the entries of session $1 with $2 <= seq < $3.
	windowSQL = `SELECT seq, kind, payload FROM entries WHERE session = $1 AND seq >= $2 AND seq < $3 ORDER BY seq DESC`
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
	lowest, exhausted := int64(0), false
	live, err = recall.Tail(limit, func(yield func(recall.Entry, error) bool) {
		for rs.Next() {
			e, err := scanTailEntry(rs)
			lowest = e.Seq
			if !yield(e, err) || err != nil {
				return
			}
		}
		if err := rs.Err(); err != nil {
			yield(recall.Entry{}, err)
			return
		}
		exhausted = true
	})
	if err != nil {
		return nil, false, err
	}
	// Tail stopped on its own, or read the log down to seq 1 (or there
	// is no log): the answer is complete.
	return live, !exhausted || lowest <= 1, nil
}

// backwards yields session sid's entries from seq last down to 1, reading
// a window of chunk seqs at a time (the windows grow for long reads). It
// is meant for a transaction, whose snapshot keeps the windows consistent.
func backwards(ctx context.Context, q querier, sid, last int64, chunk int) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		for top := last + 1; top > 1; {
			bottom := max(1, top-int64(chunk))
			rs, err := q.query(ctx, windowSQL, sid, bottom, top)
			if err != nil {
				yield(recall.Entry{}, err)
				return
			}
			for rs.Next() {
				e, err := scanTailEntry(rs)
				if err != nil {
					rs.Close()
					yield(recall.Entry{}, err)
					return
				}
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
			top = bottom
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
