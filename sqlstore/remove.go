package sqlstore

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// cleanupBatch is how many sessions Cleanup deletes per transaction, so a
// large cleanup neither holds locks for long nor builds one huge
// transaction.
const cleanupBatch = 100

// Remove implements recall.Store. Entries go with their session row (ON
// DELETE CASCADE), in the same statement.
func (s *Store) Remove(ctx context.Context, key recall.Key) error {
	if err := s.check(ctx, key); err != nil {
		return err
	}
	stmt := `DELETE FROM sessions WHERE project = $1 AND id = $2`
	a := []any{key.Project, key.Session}
	if !key.IsMain() {
		stmt += ` AND subpath = $3`
		a = append(a, key.Subpath)
	}
	var n int64
	err := s.db.update(ctx, func(ctx context.Context, q querier) error {
		var err error
		n, err = q.exec(ctx, stmt, a...)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlstore: remove %s: %w", key, opError(ctx, err))
	}
	if n == 0 {
		return fmt.Errorf("sqlstore: remove %s: %w", key, recall.ErrNotFound)
	}
	return nil
}

// Cleanup implements storekit.Cleaner. It deletes in batches of cleanupBatch
// sessions, one transaction each; every batch re-reads its candidates with
// their rows locked, so a session appended to meanwhile (and so no longer
// old) is kept.
func (s *Store) Cleanup(ctx context.Context, opts recall.CleanupOptions) (recall.CleanupReport, error) {
	if err := s.checkOpen(ctx); err != nil {
		return recall.CleanupReport{}, err
	}
	// The project filter is a key like any other: a bad one is refused,
	// not matched against nothing.
	if err := storekit.CheckListOptions(opts.Project, recall.ListOptions{}); err != nil {
		return recall.CleanupReport{}, fmt.Errorf("sqlstore: cleanup: %w", err)
	}
	var rep recall.CleanupReport
	if opts.OlderThan.IsZero() {
		return rep, nil
	}
	var a args
	where := "subpath = '' AND updated_at < " + a.add(s.db.timeArg(opts.OlderThan))
	if opts.Project != "" {
		where += " AND project = " + a.add(opts.Project)
	}
	if err := s.db.q().queryRow(ctx, `SELECT count(*) FROM sessions WHERE `+where+` AND pinned`, a...).Scan(&rep.Kept); err != nil {
		return recall.CleanupReport{}, fmt.Errorf("sqlstore: cleanup: %w", opError(ctx, err))
	}
	candidates := `SELECT ` + metaCols + ` FROM sessions WHERE ` + where + ` AND NOT pinned ORDER BY updated_at, project, id`
	if opts.DryRun {
		rs, err := s.db.q().query(ctx, candidates, a...)
		if err != nil {
			return recall.CleanupReport{}, fmt.Errorf("sqlstore: cleanup: %w", opError(ctx, err))
		}
		defer rs.Close()
		for rs.Next() {
			_, m, err := scanMeta(rs)
			if err != nil {
				return recall.CleanupReport{}, fmt.Errorf("sqlstore: cleanup: %w", opError(ctx, err))
			}
			rep.Removed = append(rep.Removed, m)
		}
		if err := rs.Err(); err != nil {
			return recall.CleanupReport{}, fmt.Errorf("sqlstore: cleanup: %w", opError(ctx, err))
		}
		storekit.SortList(rep.Removed)
		return rep, nil
	}
	batchSQL := candidates + fmt.Sprintf(" LIMIT %d", cleanupBatch) + s.db.lockSQL()
	for {
		var batch []recall.Meta
		err := s.db.update(ctx, func(ctx context.Context, q querier) error {
			batch = batch[:0]
			rs, err := q.query(ctx, batchSQL, a...)
			if err != nil {
				return err
			}
			for rs.Next() {
				_, m, err := scanMeta(rs)
				if err != nil {
					rs.Close()
					return err
				}
				batch = append(batch, m)
			}
			rs.Close()
			if err := rs.Err(); err != nil {
				return err
			}
			for _, m := range batch {
				// the main session and its subagent records
				if _, err := q.exec(ctx, `DELETE FROM sessions WHERE project = $1 AND id = $2`, m.Key.Project, m.Key.Session); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			storekit.SortList(rep.Removed)
			return rep, fmt.Errorf("sqlstore: cleanup (after removing %d sessions): %w", len(rep.Removed), opError(ctx, err))
		}
		rep.Removed = append(rep.Removed, batch...)
		if len(batch) < cleanupBatch {
			break
		}
	}
	storekit.SortList(rep.Removed)
	return rep, nil
}
