package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// errExists reports that the session a transaction meant to create was
// created by someone else first.
var errExists = errors.New("sqlstore: session exists")

// sessionRow is a session's row as read inside a write transaction. sid is
// 0 for a session that does not exist yet.
type sessionRow struct {
	sid  int64
	meta recall.Meta
	// checked is the row's checked_seq, the watermark of the item rows
	// this package wrote and validated (see unusable).
	checked int64
}

// lockSession reads key's row inside update and locks it against other
// writers until the transaction ends; a missing session yields a row with
// sid 0 and empty metadata. Every write to an existing session goes
// through here or through the row lock of an upsert, which is what makes
// seq assignment from last_seq atomic.
func (s *Store) lockSession(ctx context.Context, q querier, key recall.Key) (sessionRow, error) {
	var checked int64
	r := q.queryRow(ctx, statSQL+s.db.lockSQL(), key.Project, key.Session, key.Subpath)
	sid, m, err := scanMeta(r, &checked)
	if errors.Is(err, sql.ErrNoRows) {
		return sessionRow{meta: recall.Meta{Key: key}}, nil
	}
	if err != nil {
		return sessionRow{}, err
	}
	return sessionRow{sid: sid, meta: m, checked: checked}, nil
}

// writeEntries writes entries, which carry their Seq and Time and continue
// row's log, inside update: it applies them to the metadata (recall's
// Meta.Apply, the same rules every store follows), creates or updates the
// session row, inserts the entries and updates the search rows (at once
// when bulk, see indexEntries). Creating a session that someone else
// created meanwhile is errExists.
func (s *Store) writeEntries(ctx context.Context, q querier, row *sessionRow, entries []recall.Entry, bulk bool) error {
	prev := row.meta.LastSeq
	for _, e := range entries {
		row.meta.Apply(e)
	}
	// ValidateEntries checked the batch: the watermark moves over it when
	// nothing unchecked lies below.
	row.checked = advanceChecked(row.checked, prev, row.meta.LastSeq)
	if row.sid == 0 {
		k := row.meta.Key
		args := append([]any{k.Project, k.Session, k.Subpath, row.checked}, s.metaArgs(row.meta)...)
		err := q.queryRow(ctx, insertRowSQL, args...).Scan(&row.sid)
		if errors.Is(err, sql.ErrNoRows) {
			return errExists
		}
		if err != nil {
			return err
		}
	} else if err := s.updateRow(ctx, q, row.sid, row.meta, row.checked); err != nil {
		return err
	}
	if err := s.db.insertEntries(ctx, q, row.sid, entries); err != nil {
		return err
	}
	return s.indexEntries(ctx, q, row.meta.Key, row.sid, entries, bulk)
}

// advanceChecked returns a session's checked_seq after this package wrote
// validated entries that took its log from seq prev to last: last when
// the watermark was at prev (every row below was checked), and checked
// otherwise (another program's rows lie between).
func advanceChecked(checked, prev, last int64) int64 {
	if checked == prev {
		return last
	}
	return checked
}

// The statements that write a session row from a recall.Meta: their text
// never changes, so SQLite prepares them once (see liteBackend.prepare).
var (
	// insertRowSQL creates the row of the session with key $1-$3, with
	// checked_seq $4 and metaSetCols from $5, unless it exists.
	insertRowSQL = `INSERT INTO sessions (project, id, subpath, checked_seq, ` + strings.Join(metaSetCols, ", ") + `)
		VALUES (` + placeholders(1, 4+len(metaSetCols)) + `)
		ON CONFLICT (project, id, subpath) DO NOTHING RETURNING sid`
	// updateRowSQL sets checked_seq $2 and metaSetCols from $3 in row $1.
	updateRowSQL = func() string {
		set := make([]string, len(metaSetCols))
		for i, c := range metaSetCols {
			set[i] = c + " = $" + strconv.Itoa(i+3)
		}
		return `UPDATE sessions SET checked_seq = $2, ` + strings.Join(set, ", ") + ` WHERE sid = $1`
	}()
)

// updateRow writes meta and the watermark checked into session sid's row.
func (s *Store) updateRow(ctx context.Context, q querier, sid int64, meta recall.Meta, checked int64) error {
	_, err := q.exec(ctx, updateRowSQL, append([]any{sid, checked}, s.metaArgs(meta)...)...)
	return err
}

// placeholders returns "$from, ..., $(from+n-1)".
func placeholders(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(from+i))
	}
	return b.String()
}

// Append implements recall.Store. The guard is checked inside the write
// transaction, against the session row that transaction has locked (or,
// on the fast path, holds the lock of, see appendItems), so nothing can
// change the session between the check and the write; a failed guard
// rolls the transaction back, leaving no entry and no new row.
func (s *Store) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	if err := s.check(ctx, key); err != nil {
		return 0, err
	}
	// Every entry is checked before any SQL runs, so a bad or oversized
	// item never leaves a partial batch (nor even a new empty session).
	if err := storekit.ValidateEntries(entries, s.opts.MaxItemSize); err != nil {
		return 0, fmt.Errorf("sqlstore: append %s: %w", key, err)
	}
	if len(entries) == 0 {
		last, err := s.checkGuard(ctx, key, guard)
		if err != nil {
			return 0, fmt.Errorf("sqlstore: append %s: %w", key, opError(ctx, err))
		}
		return last, nil
	}
	if b, ok := newItemBatch(entries, storekit.Now()); ok {
		if key.IsMain() && !s.noSearch {
			b.index = true
			if _, ok := s.db.(*pgBackend); ok {
				// PostgreSQL writes the rows with the entries, and
				// they are computed before its transaction; SQLite
				// computes them from the log when it writes them
				// (see trailSearch).
				b.search = itemRows(b.entries)
			}
		}
		last, err := s.db.appendItems(ctx, key, guard, b)
		if err != nil {
			return 0, fmt.Errorf("sqlstore: append %s: %w", key, opError(ctx, err))
		}
		return last, nil
	}
	var last int64
	err := s.db.update(ctx, func(ctx context.Context, q querier) error {
		row, err := s.lockSession(ctx, q, key)
		if err != nil {
			return err
		}
		if err := guard.Check(row.sid != 0, row.meta.LastSeq); err != nil {
			return err
		}
		err = s.writeEntries(ctx, q, &row, stamp(entries, row.meta.LastSeq, storekit.Now()), false)
		if errors.Is(err, errExists) {
			return errRetry // another writer created the session: lock its row
		}
		last = row.meta.LastSeq
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: append %s: %w", key, opError(ctx, err))
	}
	return last, nil
}

// checkGuard is Append of an empty batch: it checks guard against one
// reading of the session row and returns its last seq.
func (s *Store) checkGuard(ctx context.Context, key recall.Key, guard recall.Guard) (int64, error) {
	var sid, last int64
	err := s.read(func() error {
		return s.db.q().queryRow(ctx, lastSeqSQL, key.Project, key.Session, key.Subpath).Scan(&sid, &last)
	})
	exists := err == nil
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	if err != nil {
		return 0, err
	}
	if err := guard.Check(exists, last); err != nil {
		return 0, err
	}
	return last, nil
}

// itemBatch is a batch of item entries for the fast path of Append, whose
// effect on the session row is a few sums (see backend.appendItems).
// entries have their Time set; their Seq is assigned by the backend.
type itemBatch struct {
	entries []recall.Entry
	// index: the entries change the session's search rows (a main
	// session, search not turned off for a benchmark's baseline).
	index bool
	// search holds the search row of each entry when index (see
	// searchindex.go), nil where it has none, on PostgreSQL; the backend
	// fills in the seq.
	search  []*searchRow
	created time.Time // the first entry's time: Created of a new session
	updated time.Time // the latest entry time
	usage   recall.Usage
	// prompt is the batch's first recall.Entry.Prompt: FirstPrompt of a
	// session that has none yet.
	prompt string
}

// newItemBatch returns the batch for entries when they are all items.
func newItemBatch(entries []recall.Entry, now time.Time) (itemBatch, bool) {
	for _, e := range entries {
		if e.Kind != recall.KindItem {
			return itemBatch{}, false
		}
	}
	b := itemBatch{entries: stamp(entries, 0, now)}
	b.created = b.entries[0].Time
	for _, e := range b.entries {
		if b.prompt == "" {
			b.prompt = e.Prompt()
		}
		if e.Time.After(b.updated) {
			b.updated = e.Time
		}
		if e.Usage != nil {
			b.usage.Add(*e.Usage)
		}
	}
	return b, true
}

// Pop implements recall.Store. The newest item is found and its pop entry
// written in one transaction that holds the session's row lock, so two
// concurrent pops remove two different items. On PostgreSQL the common
// case is one round trip (see popNewestPG).
func (s *Store) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, err
	}
	if pg, ok := s.db.(*pgBackend); ok {
		it, done, err := pg.popNewest(ctx, key, key.IsMain() && !s.noSearch)
		if err != nil {
			return nil, fmt.Errorf("sqlstore: pop %s: %w", key, opError(ctx, err))
		}
		if done {
			return it, nil
		}
	}
	var popped recall.Item
	err := s.db.update(ctx, func(ctx context.Context, q querier) error {
		popped = nil
		row, err := s.lockSession(ctx, q, key)
		if err != nil || row.sid == 0 {
			return err
		}
		live, err := storekit.Tail(1, backwards(ctx, q, row.sid, row.meta.LastSeq, 16))
		if err != nil || len(live) == 0 {
			return err
		}
		pop := recall.NewEntry(recall.KindPop, live[0].Ref)
		if err := s.writeEntries(ctx, q, &row, stamp([]recall.Entry{pop}, row.meta.LastSeq, storekit.Now()), false); err != nil {
			return err
		}
		popped = live[0].Item
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: pop %s: %w", key, opError(ctx, err))
	}
	return popped, nil
}

// Import implements recall.Store. storekit.ImportPlan checks the entries
// against the LastSeq read under the session's row lock, in the
// transaction that writes them: the plan is the write's guard.
func (s *Store) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	if err := s.check(ctx, key); err != nil {
		return 0, err
	}
	if err := storekit.ValidateEntries(entries, s.opts.MaxItemSize); err != nil {
		return 0, fmt.Errorf("sqlstore: import %s: %w", key, err)
	}
	var last int64
	err := s.db.update(ctx, func(ctx context.Context, q querier) error {
		row, err := s.lockSession(ctx, q, key)
		if err != nil {
			return err
		}
		fresh, err := storekit.ImportPlan(row.meta.LastSeq, entries)
		if err != nil {
			return err
		}
		last = row.meta.LastSeq
		if len(fresh) == 0 {
			return nil
		}
		for i, e := range fresh {
			e = e.Clone()
			e.Time = e.Time.UTC().Truncate(time.Microsecond) // the precision stored
			fresh[i] = e
		}
		err = s.writeEntries(ctx, q, &row, fresh, true)
		if errors.Is(err, errExists) {
			return errRetry
		}
		last = row.meta.LastSeq
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: import %s: %w", key, opError(ctx, err))
	}
	return last, nil
}
