package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// The statements that read a page of a view, besides windowSQL (see
// backwards). Both name a bound on seq, as windowSQL does, so each reads
// what it returns whatever plan the database picks.
const (
	// controlsSQL reads the newest $3 control entries of session $1 below
	// seq $2: the entries that change the view other than by adding an
	// item. Its kind test is the predicate of the partial index
	// entries_controls (migration 9), word for word, which is what lets
	// both planners use that index: it holds only those entries, so the
	// read skips a session's items, however many.
	controlsSQL = `SELECT seq, kind, payload FROM entries
		WHERE session = $1 AND kind IN ('pop', 'remove', 'clear', 'compaction') AND seq < $2
		ORDER BY seq DESC LIMIT $3`
	// forwardSQL reads the entries of session $1 with $2 <= seq < $3, in
	// seq order: windowSQL the other way.
	forwardSQL = `SELECT seq, kind, payload FROM entries WHERE session = $1 AND seq >= $2 AND seq < $3 ORDER BY seq`
)

// ReadItems implements storekit.ItemPager. The newest page is read as
// Items reads the newest items, by one statement when it can (see
// itemsOneShot). Any other page is read in one read transaction (one
// snapshot, the same as Load's): the session's last_seq, then the view's
// control entries through their own index, newest first and down to the
// view's start only, then the window of the log the page lies in, a chunk
// of seqs at a time, from the cursor on; storekit.ReadPage builds the page
// from those. So a page costs O(page + the view's pops and removes), not
// the session's length: a 20,000-item session's pages read as many rows
// as a 200-item session's (TestReadItemsBound). Every read is bounded by
// the last_seq read first. Damaged item rows are left out, as Items leaves
// them out.
func (s *Store) ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	if err := s.check(ctx, key); err != nil {
		return recall.ItemPage{}, err
	}
	if !opts.Oldest && opts.After == (recall.ItemRef{}) && opts.Limit > 0 && opts.Limit < 1<<16 {
		// The newest page, the one read most, is the newest Limit+1
		// items of the view: Items' one statement reads them, when it
		// can, in 55-75% of the time the transaction below takes (a
		// 50-item page of 20,000 items; on PostgreSQL, SQLite).
		var (
			live []recall.LiveItem
			last int64
			done bool
		)
		err := s.read(func() (err error) {
			live, last, done, err = s.itemsOneShot(ctx, key, opts.Limit+1)
			return err
		})
		if err != nil {
			return recall.ItemPage{}, fmt.Errorf("sqlstore: read items of %s: %w", key, opError(ctx, err))
		}
		if done {
			return newestPage(live, last, opts.Limit), nil
		}
	}
	var page recall.ItemPage
	err := s.db.view(ctx, func(ctx context.Context, q querier) (err error) {
		page, err = readPage(ctx, q, key, opts)
		return err
	})
	if err != nil {
		return recall.ItemPage{}, fmt.Errorf("sqlstore: read items of %s: %w", key, opError(ctx, err))
	}
	return page, nil
}

// newestPage returns the newest page of limit items of a view whose
// newest items, oldest first, are live, read at last.
func newestPage(live []recall.LiveItem, last int64, limit int) recall.ItemPage {
	slices.Reverse(live)
	page := recall.ItemPage{Items: live, LastSeq: last}
	if len(live) > limit {
		page.Items, page.More = live[:limit], true
	}
	return page
}

// readPage is ReadItems inside its read transaction q.
func readPage(ctx context.Context, q querier, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	var sid, last int64
	err := q.queryRow(ctx, lastSeqSQL, key.Project, key.Session, key.Subpath).Scan(&sid, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return recall.ItemPage{}, nil
	}
	if err != nil {
		return recall.ItemPage{}, err
	}
	// The first window holds the page and some pops or other entries
	// between its items; later windows grow (see backwards), so a page
	// among many removed items still takes few statements.
	chunk := 256
	if opts.Limit > 0 && opts.Limit < 2048 {
		chunk = 2*opts.Limit + 16
	}
	items, more, err := storekit.ReadPage(storekit.PageReader{
		Controls: controls(ctx, q, sid, last),
		Backward: func(atMost int64) iter.Seq2[recall.Entry, error] {
			return backwards(ctx, q, sid, min(atMost, last), chunk)
		},
		Forward: func(atLeast int64) iter.Seq2[recall.Entry, error] {
			return forwards(ctx, q, sid, atLeast, last, chunk)
		},
	}, opts)
	if err != nil {
		return recall.ItemPage{}, err
	}
	return recall.ItemPage{Items: items, More: more, LastSeq: last}, nil
}

// controls yields session sid's pop, remove, clear and compaction
// entries at or below seq last, newest first, through the index of those
// entries, a chunk at a time: ReadPage stops at the view's start, the
// first clear or compaction, so most views cost one short statement.
func controls(ctx context.Context, q querier, sid, last int64) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		below := last + 1
		seen := func(e recall.Entry, err error) bool {
			if err == nil {
				below = e.Seq
			}
			return yield(e, err)
		}
		for chunk := 16; ; chunk = min(chunk*4, 4096) {
			n, ok := yieldRows(ctx, q, seen, controlsSQL, sid, below, chunk)
			if !ok || n < chunk {
				return
			}
		}
	}
}

// forwards yields session sid's entries from seq from up to last, in seq
// order, a window of chunk seqs at a time (the windows grow as in
// backwards), leaving out damaged item rows (see unusable). Like
// backwards, it is meant for a transaction.
func forwards(ctx context.Context, q querier, sid, from, last int64, chunk int) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		for bottom := max(from, 1); bottom <= last; {
			top := min(last+1, bottom+int64(chunk))
			if _, ok := yieldRows(ctx, q, yield, forwardSQL, sid, bottom, top); !ok {
				return
			}
			bottom = top
			chunk = min(chunk*4, 4096)
		}
	}
}
