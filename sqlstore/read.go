package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/jsonvalid"
	"github.com/recallkit/recall/storekit"
)

// The statements that read one session.
const (
	// statSQL reads the metadata and checked_seq of the session with key
	// $1-$3.
	statSQL = `SELECT ` + metaCols + `, checked_seq FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3`
	// sessionIDSQL reads the sid of the session with key $1-$3.
	sessionIDSQL = `SELECT sid FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3`
	// lastSeqSQL reads the sid and last_seq of the session with key $1-$3.
	lastSeqSQL = `SELECT sid, last_seq FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3`
	// tailSQL reads the sid, last_seq and checked_seq of the session with
	// key $1-$3.
	tailSQL = `SELECT sid, last_seq, checked_seq FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3`
	// uncheckedSQL reads session $1's item entries above seq $2, the
	// checked_seq: those that may be damaged.
	uncheckedSQL = `SELECT seq, kind, payload FROM entries WHERE session = $1 AND seq > $2 AND kind = 'item'`
	// entriesSQL reads session $1's entries above seq $2.
	entriesSQL = `SELECT ` + entryCols + ` FROM entries WHERE session = $1 AND seq > $2 ORDER BY seq`
	// entriesLimitSQL reads the first $3 of them.
	entriesLimitSQL = entriesSQL + ` LIMIT $3`
)

// Damaged rows. An entries row of kind item whose payload is not a JSON
// object was not written by this package (Append validates every item),
// but by another program, or damaged. Readers treat it as every store
// does (see recall.ItemOf): Items, Pop and the view leave it out, Load
// returns it verbatim in the log and counts it in Meta.Corrupt, and so
// does Stat.
//
// A column holds any bytes, so checking the first and last bytes, as
// recall.ItemOf does, is not enough ("{x}" is no item either, and Items
// must never hand out an item that is not JSON), but checking every
// payload in full on every read would cost Items a tenth of its time
// (measured on SQLite, reading 50 items). So the sessions row keeps a
// watermark, checked_seq: every item row at or below it was written by
// this package, which validated it. Writers here move it to the new
// last_seq when it was at the old one (the log held nothing unchecked),
// and leave it where it is otherwise; another program adding rows, which
// moves last_seq only, leaves its rows above it for good. Readers check
// rows above the watermark in full, and rows at or below it by their first
// and last bytes only. A healthy session (checked_seq = last_seq) costs
// nothing more to read, and Stat counts damage only when there are rows
// above the watermark, reading just those. List reads only the sessions
// rows and reports Corrupt as 0.

// unusable reports whether e, as read from its row, is an item entry
// whose item is not a JSON object; rows at or below checked (see above)
// are taken to be JSON.
func unusable(e recall.Entry, checked int64) bool {
	if e.Kind != recall.KindItem {
		return false
	}
	_, ok := recall.ItemOf(e)
	return !ok || e.Seq > checked && !jsonvalid.Valid(e.Data)
}

// corruptAbove counts the damaged item rows of session sid above seq
// checked, its watermark.
func corruptAbove(ctx context.Context, q querier, sid, checked int64) (int, error) {
	rs, err := q.query(ctx, uncheckedSQL, sid, checked)
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	var sc tailScanner
	n := 0
	for rs.Next() {
		e, err := sc.scan(rs)
		if err != nil {
			return 0, err
		}
		if unusable(e, checked) {
			n++
		}
	}
	return n, rs.Err()
}

// Stat implements recall.Store. It reads the sessions row, and counts
// Meta.Corrupt only when the log has rows above the watermark (see
// unusable), reading those rows in the same snapshot.
func (s *Store) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if err := s.check(ctx, key); err != nil {
		return recall.Meta{}, err
	}
	var (
		m       recall.Meta
		checked int64
	)
	err := s.read(func() (err error) {
		_, m, err = scanMeta(s.db.q().queryRow(ctx, statSQL, key.Project, key.Session, key.Subpath), &checked)
		return err
	})
	if err == nil && checked < m.LastSeq {
		// Count in one snapshot: the row again, then the rows above its
		// watermark.
		err = s.db.view(ctx, func(ctx context.Context, q querier) error {
			sid, m2, err := scanMeta(q.queryRow(ctx, statSQL, key.Project, key.Session, key.Subpath), &checked)
			if err != nil {
				return err
			}
			m = m2
			m.Corrupt, err = corruptAbove(ctx, q, sid, checked)
			return err
		})
	}
	if errors.Is(err, sql.ErrNoRows) {
		err = recall.ErrNotFound
	}
	if err != nil {
		return recall.Meta{}, fmt.Errorf("sqlstore: stat %s: %w", key, opError(ctx, err))
	}
	return m, nil
}

// Load implements recall.Store. The session row and its log are read in
// one read transaction, one snapshot of the database (see backend.view),
// so the metadata and the entries agree. Meta.Corrupt counts the damaged
// item rows of the log (see unusable).
func (s *Store) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	if err := s.check(ctx, key); err != nil {
		return recall.Meta{}, nil, err
	}
	var (
		meta    recall.Meta
		entries []recall.Entry
	)
	err := s.db.view(ctx, func(ctx context.Context, q querier) error {
		var checked int64
		sid, m, err := scanMeta(q.queryRow(ctx, statSQL, key.Project, key.Session, key.Subpath), &checked)
		if errors.Is(err, sql.ErrNoRows) {
			return recall.ErrNotFound
		}
		if err != nil {
			return err
		}
		meta = m
		entries, err = readEntries(ctx, q, sid, 0, 0)
		for _, e := range entries {
			if unusable(e, checked) {
				meta.Corrupt++
			}
		}
		return err
	})
	if err != nil {
		return recall.Meta{}, nil, fmt.Errorf("sqlstore: load %s: %w", key, opError(ctx, err))
	}
	return meta, entries, nil
}

// Entries implements recall.Store.
func (s *Store) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	if err := s.check(ctx, key); err != nil {
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
		return nil, fmt.Errorf("sqlstore: entries of %s: %w", key, opError(ctx, err))
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
// first, and lets storekit.Tail decide when it has read enough, so its cost
// is O(limit + pops), not the length of the log. The LastSeq it returns is
// read with the entries, in the same snapshot.
//
// Every read names a window of seqs below last_seq rather than relying on
// ORDER BY ... LIMIT alone: seqs are dense, so the window holds exactly the
// entries wanted, and the read costs O(window) whatever plan the database
// picks (PostgreSQL's planner, estimating an average session, may prefer to
// fetch a session's whole log and sort it).
//
// The common case is one statement, which PostgreSQL and SQLite both run
// in one snapshot: the newest limit+slack entries of a healthy session,
// the first of them at last_seq (see newestSQL). When Tail needs more than
// that (many pops, limit <= 0), or the statement found no entries (a
// missing session, or one holding rows this package did not write), the
// read starts over in a read-only transaction that reads last_seq and
// checked_seq, then pages backwards, so the view never mixes two states of
// the session.
func (s *Store) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, 0, err
	}
	if limit > 0 {
		var (
			live []recall.LiveItem
			last int64
			done bool
		)
		err := s.read(func() (err error) {
			live, last, done, err = s.itemsOneShot(ctx, key, limit)
			return err
		})
		if err != nil {
			return nil, 0, fmt.Errorf("sqlstore: items of %s: %w", key, opError(ctx, err))
		}
		if done {
			return live, last, nil
		}
	}
	var (
		live []recall.LiveItem
		last int64
	)
	err := s.db.view(ctx, func(ctx context.Context, q querier) error {
		var sid, checked int64
		live, last = nil, 0
		err := q.queryRow(ctx, tailSQL, key.Project, key.Session, key.Subpath).Scan(&sid, &last, &checked)
		if errors.Is(err, sql.ErrNoRows) {
			last = 0
			return nil
		}
		if err != nil {
			return err
		}
		chunk := 256
		if limit > 0 {
			chunk = 2*limit + 16
		}
		live, err = storekit.Tail(limit, backwards(ctx, q, sid, last, checked, chunk))
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("sqlstore: items of %s: %w", key, opError(ctx, err))
	}
	return live, last, nil
}

// The statements that read a log backwards, a window of seqs at a time,
// through the (session, seq) primary key.
const (
	// newestSQL reads the entries of the session with key $1-$3 whose
	// seq is above last_seq - $4, the newest $4, provided the session is
	// healthy: its newest entry is at last_seq, and every row was checked
	// when written (checked_seq = last_seq, see unusable). Otherwise it
	// returns no row, and Items pages in a read transaction instead. So the
	// first row's seq is last_seq: the view and its LastSeq come from one
	// statement, one snapshot, and no row needs a full check. (Measured on
	// SQLite: last_seq and checked_seq as columns of every row cost the
	// statement a fifth more, one mostly NULL column 7%; the max(seq)
	// probe costs one index seek.) The session row is
	// looked up in scalar subqueries rather than joined: both planners then
	// seek one known session's index range (SQLite ran the join form four
	// times slower, PostgreSQL sorted its whole log), and evaluate each
	// subquery once.
	newestSQL = `SELECT seq, kind, payload FROM entries
		WHERE session = (SELECT sid FROM sessions AS s WHERE project = $1 AND id = $2 AND subpath = $3
			AND checked_seq = last_seq AND last_seq = (SELECT max(seq) FROM entries WHERE session = s.sid))
		AND seq > (SELECT last_seq FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3) - $4
		ORDER BY seq DESC`
	// windowSQL reads the entries of session $1 with $2 <= seq < $3.
	windowSQL = `SELECT seq, kind, payload FROM entries WHERE session = $1 AND seq >= $2 AND seq < $3 ORDER BY seq DESC`
)

// itemsOneShot tries Items with one statement reading the newest
// limit+slack entries of a healthy session (see newestSQL), and returns
// the view and the last seq it was read at. done is false when Tail wanted
// more entries than that statement returned while the log may hold more,
// or when it returned none (no session, an empty log, or one that is not
// healthy).
func (s *Store) itemsOneShot(ctx context.Context, key recall.Key, limit int) (live []recall.LiveItem, last int64, done bool, err error) {
	n := limit + 8 // slack for a few pops or title/meta entries
	rs, err := s.db.q().query(ctx, newestSQL, key.Project, key.Session, key.Subpath, n)
	if err != nil {
		return nil, 0, false, err
	}
	defer rs.Close()
	var (
		sc        tailScanner
		lowest    int64
		exhausted bool
	)
	live, err = storekit.Tail(limit, func(yield func(recall.Entry, error) bool) {
		for rs.Next() {
			e, err := sc.scan(rs)
			if err != nil {
				yield(recall.Entry{}, err)
				return
			}
			if last == 0 {
				last = e.Seq // the first row is at last_seq
			}
			lowest = e.Seq
			// Every row is checked (checked_seq = last_seq): Tail's own
			// look at an item is enough.
			if !yield(e, nil) {
				return
			}
		}
		if err := rs.Err(); err != nil {
			yield(recall.Entry{}, err)
			return
		}
		exhausted = true
	})
	if err != nil || last == 0 {
		return nil, 0, false, err
	}
	// Tail stopped on its own, or read the log down to seq 1: the answer
	// is complete.
	return live, last, !exhausted || lowest <= 1, nil
}

// backwards yields session sid's entries from seq last down to 1, reading
// a window of chunk seqs at a time (the windows grow for long reads), and
// leaving out damaged item rows (see unusable; checked is the session's
// watermark). It is meant for a transaction, whose
// snapshot keeps the windows consistent.
func backwards(ctx context.Context, q querier, sid, last, checked int64, chunk int) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		for top := last + 1; top > 1; {
			bottom := max(1, top-int64(chunk))
			rs, err := q.query(ctx, windowSQL, sid, bottom, top)
			if err != nil {
				yield(recall.Entry{}, err)
				return
			}
			var sc tailScanner
			for rs.Next() {
				e, err := sc.scan(rs)
				if err != nil {
					rs.Close()
					yield(recall.Entry{}, err)
					return
				}
				if unusable(e, checked) {
					continue
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

// tailScanner reads rows of seq, kind and payload, what Tail looks at,
// and any further columns, into entries. It scans every row into the same
// variables, which cost an allocation each per row when they were the
// row's own; the payload is a new slice every time (database/sql and pgx
// both copy it out of the row), so entries share nothing.
type tailScanner struct {
	seq     int64
	kind    string
	payload []byte
	dest    []any
}

// scan reads the current row of r, whose further columns go to more
// (the same ones on every call).
func (t *tailScanner) scan(r interface{ Scan(...any) error }, more ...any) (recall.Entry, error) {
	if t.dest == nil {
		t.dest = append([]any{&t.seq, &t.kind, &t.payload}, more...)
	}
	t.payload = nil
	if err := r.Scan(t.dest...); err != nil {
		return recall.Entry{}, err
	}
	e := recall.Entry{Seq: t.seq, Kind: recall.Kind(t.kind)}
	if len(t.payload) > 0 {
		e.Data = t.payload
	}
	return e, nil
}
