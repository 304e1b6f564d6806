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
)

// errExists reports that the session a transaction meant to create was
// created by someone else first.
var errExists = errors.New("sqlstore: session exists")

// sessionRow is a session's row as read inside a write transaction. sid is
// 0 for a session that does not exist yet.
type sessionRow struct {
	sid  int64
	meta recall.Meta
}

// lockSession reads key's row inside update and locks it against other
// writers until the transaction ends; a missing session yields a row with
// sid 0 and empty metadata. Every write to an existing session goes
// through here or through the row lock of an upsert, which is what makes
// seq assignment from last_seq atomic.
func (s *Store) lockSession(ctx context.Context, q querier, key recall.Key) (sessionRow, error) {
	r := q.queryRow(ctx, statSQL+s.db.lockSQL(), key.Project, key.Session, key.Subpath)
	sid, m, err := scanMeta(r)
	if errors.Is(err, sql.ErrNoRows) {
		return sessionRow{meta: recall.Meta{Key: key}}, nil
	}
	if err != nil {
		return sessionRow{}, err
	}
	return sessionRow{sid: sid, meta: m}, nil
}

// writeEntries writes entries, which carry their Seq and Time and continue
// row's log, inside update: it applies them to the metadata (recall's
// Meta.Apply, the same rules every store follows), creates or updates the
// session row, and inserts the entries. Creating a session that someone
// else created meanwhile is errExists.
func (s *Store) writeEntries(ctx context.Context, q querier, row *sessionRow, entries []recall.Entry) error {
	for _, e := range entries {
		row.meta.Apply(e)
	}
	if row.sid == 0 {
		k := row.meta.Key
		args := append([]any{k.Project, k.Session, k.Subpath}, s.metaArgs(row.meta)...)
		err := q.queryRow(ctx, `INSERT INTO sessions (project, id, subpath, `+strings.Join(metaSetCols, ", ")+`)
			VALUES (`+placeholders(1, len(args))+`)
			ON CONFLICT (project, id, subpath) DO NOTHING RETURNING sid`, args...).Scan(&row.sid)
		if errors.Is(err, sql.ErrNoRows) {
			return errExists
		}
		if err != nil {
			return err
		}
	} else if err := s.updateRow(ctx, q, row.sid, row.meta); err != nil {
		return err
	}
	return s.db.insertEntries(ctx, q, row.sid, entries)
}

// updateRow writes meta into session sid's row.
func (s *Store) updateRow(ctx context.Context, q querier, sid int64, meta recall.Meta) error {
	set := make([]string, len(metaSetCols))
	for i, c := range metaSetCols {
		set[i] = c + " = $" + strconv.Itoa(i+2)
	}
	_, err := q.exec(ctx, `UPDATE sessions SET `+strings.Join(set, ", ")+` WHERE sid = $1`,
		append([]any{sid}, s.metaArgs(meta)...)...)
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

// Append implements recall.Store.
func (s *Store) Append(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	if err := s.check(key); err != nil {
		return 0, err
	}
	// Every entry is checked before any SQL runs, so a bad or oversized
	// item never leaves a partial batch (nor even a new empty session).
	if err := recall.ValidateEntries(entries, s.opts.MaxItemSize); err != nil {
		return 0, fmt.Errorf("sqlstore: append %s: %w", key, err)
	}
	if len(entries) == 0 {
		m, err := s.Stat(ctx, key)
		if errors.Is(err, recall.ErrNotFound) {
			return 0, nil
		}
		return m.LastSeq, err
	}
	if b, ok := newItemBatch(entries, recall.Now()); ok {
		last, err := s.db.appendItems(ctx, key, b)
		if err != nil {
			return 0, fmt.Errorf("sqlstore: append %s: %w", key, err)
		}
		return last, nil
	}
	var last int64
	err := s.db.update(ctx, func(ctx context.Context, q querier) error {
		row, err := s.lockSession(ctx, q, key)
		if err != nil {
			return err
		}
		if err := recall.CheckGuard(entries, row.meta.LastSeq); err != nil {
			return err
		}
		err = s.writeEntries(ctx, q, &row, stamp(entries, row.meta.LastSeq, recall.Now()))
		if errors.Is(err, errExists) {
			return errRetry // another writer created the session: lock its row
		}
		last = row.meta.LastSeq
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: append %s: %w", key, err)
	}
	return last, nil
}

// itemBatch is a batch of item entries for the fast path of Append, whose
// effect on the session row is a few sums (see backend.appendItems).
// entries have their Time set; their Seq is assigned by the backend.
type itemBatch struct {
	entries []recall.Entry
	created time.Time // the first entry's time: Created of a new session
	updated time.Time // the latest entry time
	usage   recall.Usage
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
// concurrent pops remove two different items.
func (s *Store) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	if err := s.check(key); err != nil {
		return nil, err
	}
	var popped recall.Item
	err := s.db.update(ctx, func(ctx context.Context, q querier) error {
		popped = nil
		row, err := s.lockSession(ctx, q, key)
		if err != nil || row.sid == 0 {
			return err
		}
		live, err := recall.Tail(1, backwards(ctx, q, row.sid, row.meta.LastSeq, 16))
		if err != nil || len(live) == 0 {
			return err
		}
		pop := recall.NewEntry(recall.KindPop, live[0].Ref)
		if err := s.writeEntries(ctx, q, &row, stamp([]recall.Entry{pop}, row.meta.LastSeq, recall.Now())); err != nil {
			return err
		}
		popped = live[0].Item
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlstore: pop %s: %w", key, err)
	}
	return popped, nil
}

// Import implements recall.Store.
func (s *Store) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	if err := s.check(key); err != nil {
		return 0, err
	}
	if err := recall.ValidateEntries(entries, s.opts.MaxItemSize); err != nil {
		return 0, fmt.Errorf("sqlstore: import %s: %w", key, err)
	}
	var last int64
	err := s.db.update(ctx, func(ctx context.Context, q querier) error {
		row, err := s.lockSession(ctx, q, key)
		if err != nil {
			return err
		}
		fresh, err := recall.ImportPlan(row.meta.LastSeq, entries)
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
		err = s.writeEntries(ctx, q, &row, fresh)
		if errors.Is(err, errExists) {
			return errRetry
		}
		last = row.meta.LastSeq
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlstore: import %s: %w", key, err)
	}
	return last, nil
}

// Fork implements recall.Store. The source's log is read and the fork
// written in one transaction; the fork's row is created with an insert that
// does nothing when newKey exists, which is ErrConflict.
func (s *Store) Fork(ctx context.Context, key recall.Key, atSeq int64, newKey recall.Key) (recall.Meta, error) {
	if err := s.check(key); err != nil {
		return recall.Meta{}, err
	}
	if err := newKey.Validate(); err != nil {
		return recall.Meta{}, fmt.Errorf("sqlstore: fork onto: %w", err)
	}
	var meta recall.Meta
	err := s.db.update(ctx, func(ctx context.Context, q querier) error {
		// The source's row is locked, so it can be neither appended to nor
		// removed while its log is read.
		var sid int64
		err := q.queryRow(ctx, sessionIDSQL+s.db.lockSQL(), key.Project, key.Session, key.Subpath).Scan(&sid)
		if errors.Is(err, sql.ErrNoRows) {
			return recall.ErrNotFound
		}
		if err != nil {
			return err
		}
		// An existing newKey is the first thing to report, before any
		// problem with atSeq (as memstore does).
		if _, err := sessionID(ctx, q, newKey); err == nil {
			return fmt.Errorf("%w: %s exists", recall.ErrConflict, newKey)
		} else if !errors.Is(err, recall.ErrNotFound) {
			return err
		}
		entries, err := readEntries(ctx, q, sid, 0, 0)
		if err != nil {
			return err
		}
		log, err := recall.ForkLog(key, entries, atSeq, recall.Now())
		if err != nil {
			return err
		}
		row := sessionRow{meta: recall.Meta{Key: newKey}}
		err = s.writeEntries(ctx, q, &row, log)
		if errors.Is(err, errExists) {
			return fmt.Errorf("%w: %s exists", recall.ErrConflict, newKey)
		}
		meta = row.meta
		return err
	})
	if err != nil {
		return recall.Meta{}, fmt.Errorf("sqlstore: fork %s onto %s: %w", key, newKey, err)
	}
	return meta, nil
}
