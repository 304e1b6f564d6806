package sqlstore

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Purge implements storekit.Purger. The log storekit.PurgeLog returns replaces
// the old one in one transaction, with the session's row locked: the
// entries up to the latest compaction go, the compaction entry comes back
// rewritten (carrying the first entry's time and the dropped usage), the
// entries after it stay as they are, and the entries that restore
// metadata only the dropped ones held are appended. Readers see the log
// before or after, never a mix.
func (s *Store) Purge(ctx context.Context, key recall.Key) (storekit.PurgeResult, error) {
	if err := s.check(ctx, key); err != nil {
		return storekit.PurgeResult{}, err
	}
	var res storekit.PurgeResult
	err := s.db.update(ctx, func(ctx context.Context, q querier) error {
		res = storekit.PurgeResult{}
		row, entries, err := s.lockLog(ctx, q, key)
		if err != nil {
			return err
		}
		out, dropped, err := storekit.PurgeLog(key, entries)
		if err != nil || dropped == 0 {
			return err
		}
		kept := len(entries) - dropped // the compaction entry and those after it
		if _, err := q.exec(ctx, `DELETE FROM entries WHERE session = $1 AND seq <= $2`, row.sid, out[0].Seq); err != nil {
			return err
		}
		if err := s.db.insertEntries(ctx, q, row.sid, append(out[:1:1], out[kept:]...)); err != nil {
			return err
		}
		if _, err := s.replacedLog(ctx, q, key, row, out); err != nil {
			return err
		}
		res = storekit.PurgeResult{Dropped: dropped, From: out[0].Seq, Restored: len(out) - kept}
		return nil
	})
	if err != nil {
		return storekit.PurgeResult{}, fmt.Errorf("sqlstore: purge %s: %w", key, opError(ctx, err))
	}
	return res, nil
}
