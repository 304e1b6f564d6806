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
// does: Items, Pop and the view leave it out, and Load counts it in
// Meta.Corrupt, as does Stat, for the rows it looks at (below). Load and
// Entries return it verbatim in the log when it is JSON but no object
// (recall.Entry.Item refuses it), and leave it out when it only looks like
// an object by its first and last bytes ("{x}", see unreadable), as the
// file store and Redis leave out a record that does not decode: no
// reader of the log then takes it for an item.
//
// A column holds any bytes, so checking the first and last bytes, as
// recall.Entry.Item does, is not enough: every item row a reader hands out
// or counts is checked in full (unusable, unreadable). That holds for
// rows this package wrote too: they were valid when written, but a row
// can be damaged afterwards (a disk, another program updating it in
// place), and looking only at the first and last bytes of those let
// "{x}" through. The check costs Items about a fifth more time on SQLite
// (BenchmarkGetItems50: the raw read's share went from 0.66 to 0.53).
//
// The sessions row keeps a watermark, checked_seq: every item row at or
// below it was written by this package, which validated it. Writers here
// move it to the new last_seq when it was at the old one (the log held
// nothing unchecked), and leave it where it is otherwise; another program
// adding rows, which moves last_seq only, leaves its rows above it for
// good. Readers use it where a full count is not needed: Stat counts
// Meta.Corrupt over the rows above the watermark alone, so a healthy
// session (checked_seq = last_seq) costs it one row, and damage to a row
// below the watermark shows in Load's count, not Stat's; Fork validates
// its items against MaxItemSize only when rows lie above it. List reads
// only the sessions rows and reports Corrupt as 0.

// unusable reports whether e, as read from its row, is an item entry
// whose item is not a JSON object: recall.Entry.Item's look at its first and
// last bytes, then a full check.
func unusable(e recall.Entry) bool {
	if e.Kind != recall.KindItem {
		return false
	}
	_, ok := e.Item()
	return !ok || !jsonvalid.Valid(e.Data)
}

// unreadable reports whether e, as read from its row, is an item entry
// that recall.Entry.Item takes for an object but that is not JSON: a row Load
// and Entries leave out of the log (see above).
func unreadable(e recall.Entry) bool {
	if e.Kind != recall.KindItem {
		return false
	}
	_, looks := e.Item()
	return looks && !jsonvalid.Valid(e.Data)
}

// readable returns entries without the unreadable ones, in place.
func readable(entries []recall.Entry) []recall.Entry {
	out := entries[:0]
	for _, e := range entries {
		if !unreadable(e) {
			out = append(out, e)
		}
	}
	return out
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
		if unusable(e) {
			n++
		}
	}
	return n, rs.Err()
}

// Stat implements recall.Store. It reads the sessions row, and counts
// Meta.Corrupt only when the log has rows above the watermark, reading
// those rows in the same snapshot (see "Damaged rows" above).
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
// item rows of the log (see unusable), and the unreadable ones are left
// out of it (see "Damaged rows").
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
			if unusable(e) {
				meta.Corrupt++
			}
		}
		entries = readable(entries)
		return err
	})
	if err != nil {
		return recall.Meta{}, nil, fmt.Errorf("sqlstore: load %s: %w", key, opError(ctx, err))
	}
	return meta, entries, nil
}

// Entries implements recall.Store. Unreadable item rows are left out, as
// Load leaves them out; the page is filled from the rows after them, so
// it holds fewer than limit entries only at the log's end.
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
		for n := limit; ; n = limit - len(entries) {
			page, err := readEntries(ctx, q, sid, after, n)
			if err != nil || len(page) == 0 {
				return err
			}
			after = page[len(page)-1].Seq
			entries = append(entries, readable(page)...)
			if limit <= 0 || len(page) < n || len(entries) == limit {
				return nil
			}
		}
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
// in one snapshot: the newest limit+slack entries of a session whose
// newest entry is at last_seq (see newestSQL). When Tail needs more than
// that (many pops, limit <= 0), or the statement found no entries (a
// missing session, or one whose rows another program numbered otherwise),
// the read starts over in a read-only transaction that reads last_seq,
// then pages backwards, so the view never mixes two states of the
// session. Either way damaged item rows are left out (see unusable).
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
		var sid int64
		live, last = nil, 0
		err := q.queryRow(ctx, lastSeqSQL, key.Project, key.Session, key.Subpath).Scan(&sid, &last)
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
		live, err = storekit.Tail(limit, backwards(ctx, q, sid, last, chunk))
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
	// seq is above last_seq - $4, the newest $4, provided its newest entry
	// is at last_seq. Otherwise it returns no row, and Items pages in a
	// read transaction instead. So the first row's seq is last_seq: the
	// view and its LastSeq come from one statement, one snapshot.
	// (Measured on SQLite: last_seq as a column of every row cost the
	// statement a fifth more, one mostly NULL column 7%; the max(seq)
	// probe costs one index seek.) The session row is
	// looked up in scalar subqueries rather than joined: both planners then
	// seek one known session's index range (SQLite ran the join form four
	// times slower, PostgreSQL sorted its whole log), and evaluate each
	// subquery once.
	newestSQL = `SELECT seq, kind, payload FROM entries
		WHERE session = (SELECT sid FROM sessions AS s WHERE project = $1 AND id = $2 AND subpath = $3
			AND last_seq = (SELECT max(seq) FROM entries WHERE session = s.sid))
		AND seq > (SELECT last_seq FROM sessions WHERE project = $1 AND id = $2 AND subpath = $3) - $4
		ORDER BY seq DESC`
	// windowSQL reads the entries of session $1 with $2 <= seq < $3.
	windowSQL = `SELECT seq, kind, payload FROM entries WHERE session = $1 AND seq >= $2 AND seq < $3 ORDER BY seq DESC`
)

// itemsOneShot tries Items with one statement reading the newest
// limit+slack entries of a session (see newestSQL), and returns the view
// and the last seq it was read at. done is false when Tail wanted more
// entries than that statement returned while the log may hold more, or
// when it returned none (no session, an empty log, or one whose newest
// entry is not at last_seq). Damaged item rows are left out, as
// backwards leaves them out.
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
			if unusable(e) {
				continue
			}
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
// leaving out damaged item rows (see unusable). It is meant for a
// transaction, whose snapshot keeps the windows consistent.
func backwards(ctx context.Context, q querier, sid, last int64, chunk int) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		for top := last + 1; top > 1; {
			bottom := max(1, top-int64(chunk))
			if _, ok := yieldRows(ctx, q, yield, windowSQL, sid, bottom, top); !ok {
				return
			}
			top = bottom
			chunk = min(chunk*4, 4096)
		}
	}
}

// yieldRows runs stmt, a read of entries (seq, kind, payload), and yields
// its rows, leaving out damaged item rows (see unusable). It returns how
// many rows it read, and false when yield stopped it or was given an
// error: the caller's iterator then ends. The rows are closed before it
// returns, so the caller may run its next statement on q, which on
// PostgreSQL is one connection.
func yieldRows(ctx context.Context, q querier, yield func(recall.Entry, error) bool, stmt string, args ...any) (int, bool) {
	rs, err := q.query(ctx, stmt, args...)
	if err != nil {
		yield(recall.Entry{}, err)
		return 0, false
	}
	defer rs.Close()
	var sc tailScanner
	n := 0
	for rs.Next() {
		n++
		e, err := sc.scan(rs)
		if err != nil {
			yield(recall.Entry{}, err)
			return n, false
		}
		if unusable(e) {
			continue
		}
		if !yield(e, nil) {
			return n, false
		}
	}
	if err := rs.Err(); err != nil {
		yield(recall.Entry{}, err)
		return n, false
	}
	return n, true
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
