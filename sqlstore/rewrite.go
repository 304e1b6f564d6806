package sqlstore

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Rewrite implements storekit.Rewriter in one transaction, with the
// session's row locked: the rows of the entries replaced are deleted and
// inserted anew, the appended entries are inserted, the session's search
// rows are rebuilt from the new log and its row (title, first prompt)
// updated. Readers see the log before or after, never a mix.
//
// Where the old bytes may linger: SQLite runs with secure_delete, so the
// freed space is zeroed, and the WAL is checkpointed and truncated after
// the commit (best effort: a reader holding an old snapshot keeps it until
// the next checkpoint). PostgreSQL keeps the old row versions until
// VACUUM reclaims them, and its WAL and backups keep what they hold; the
// rows any query reads hold the new bytes only.
func (s *Store) Rewrite(ctx context.Context, key recall.Key, rw storekit.Rewrite) (recall.Meta, error) {
	if err := s.check(ctx, key); err != nil {
		return recall.Meta{}, err
	}
	var meta recall.Meta
	err := s.db.update(ctx, func(ctx context.Context, q querier) error {
		row, entries, err := s.lockLog(ctx, q, key)
		if err != nil {
			return err
		}
		out, err := storekit.RewriteLog(entries, row.meta.LastSeq, rw, s.opts.MaxItemSize)
		if err != nil {
			return err
		}
		write := make([]recall.Entry, 0, len(rw.Replace)+len(rw.Append))
		for _, e := range rw.Replace {
			if _, err := q.exec(ctx, `DELETE FROM entries WHERE session = $1 AND seq = $2`, row.sid, e.Seq); err != nil {
				return err
			}
			write = append(write, e)
		}
		write = append(write, out[len(entries):]...)
		if err := s.db.insertEntries(ctx, q, row.sid, write); err != nil {
			return err
		}
		meta, err = s.replacedLog(ctx, q, key, row, out)
		return err
	})
	if err != nil {
		return recall.Meta{}, fmt.Errorf("sqlstore: rewrite %s: %w", key, opError(ctx, err))
	}
	if lb, ok := s.db.(*liteBackend); ok {
		lb.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`) // best effort; see above
	}
	return meta, nil
}

// lockLog locks key's row inside update (see lockSession) and reads its
// whole log, for a write that replaces the log (Purge, Rewrite); a
// missing session is recall.ErrNotFound.
func (s *Store) lockLog(ctx context.Context, q querier, key recall.Key) (sessionRow, []recall.Entry, error) {
	row, err := s.lockSession(ctx, q, key)
	if err != nil {
		return sessionRow{}, nil, err
	}
	if row.sid == 0 {
		return sessionRow{}, nil, recall.ErrNotFound
	}
	entries, err := readEntries(ctx, q, row.sid, 0, 0)
	if err != nil {
		return sessionRow{}, nil, err
	}
	return row, entries, nil
}

// replacedLog ends a write that replaced row's log by out inside update
// (its entry rows are written): it rebuilds the session's search rows
// from out and updates its row to out's metadata, which it returns. The
// rows kept keep their seqs, and the ones written anew were validated
// here, so checked_seq moves as for an append.
func (s *Store) replacedLog(ctx context.Context, q querier, key recall.Key, row sessionRow, out []recall.Entry) (recall.Meta, error) {
	if err := s.reindex(ctx, q, key, row.sid, out); err != nil {
		return recall.Meta{}, err
	}
	meta, _ := recall.Replay(key, out)
	checked := advanceChecked(row.checked, row.meta.LastSeq, meta.LastSeq)
	if err := s.updateRow(ctx, q, row.sid, meta, checked); err != nil {
		return recall.Meta{}, err
	}
	return meta, nil
}
