package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Fork implements storekit.Forker; recall.StoreSession.Fork calls it. It does what
// recall.StoreSession.Fork's fallback does (Load, then Append with IfNew) in one
// transaction instead of two, without validating the items a second time:
// the source's row is locked (so it can be neither appended to nor removed
// while its log is read), an existing newKey is ErrConflict, and the fork's
// log (storekit.ForkLog) is written as Append writes a batch (writeEntries:
// the row's metadata by Meta.Apply, the checked_seq mark over every row).
//
// Unreadable item rows ("{x}") are left out of the log the fork is made
// from, as Load leaves them out (see unreadable), and the view leaves out
// the other damaged rows: the fork holds the valid items only, as the
// fallback's does. Those come from rows this package validated when it
// wrote them, unless the source's log holds rows above its checked_seq
// (written by another program): then the fork's items are validated too,
// and one the fallback's Append would refuse (over MaxItemSize) refuses
// the fork with the same error.
//
// The errors come in the fallback's order: an invalid newKey is
// recall.ErrInvalidKey, then a missing key or an atSeq past the end
// recall.ErrNotFound, then an existing newKey (key itself included)
// recall.ErrConflict; a refused fork writes nothing.
func (s *Store) Fork(ctx context.Context, key recall.Key, atSeq int64, newKey recall.Key) (recall.Meta, error) {
	if err := newKey.Validate(); err != nil {
		return recall.Meta{}, fmt.Errorf("sqlstore: fork onto: %w", err)
	}
	if err := s.check(ctx, key); err != nil {
		return recall.Meta{}, err
	}
	var meta recall.Meta
	err := s.db.update(ctx, func(ctx context.Context, q querier) error {
		src, err := s.lockSession(ctx, q, key)
		if err != nil {
			return err
		}
		if src.sid == 0 {
			return recall.ErrNotFound
		}
		entries, err := forkEntries(ctx, q, src.sid)
		if err != nil {
			return err
		}
		log, err := storekit.ForkLog(key, entries, atSeq, storekit.Now().UTC().Truncate(time.Microsecond))
		if err != nil {
			return err
		}
		// Checked here, after atSeq, as the fallback's Append checks it;
		// the insert of the row checks again (errExists).
		if _, err := sessionID(ctx, q, newKey); err == nil {
			return fmt.Errorf("%w: %s exists", recall.ErrConflict, newKey)
		} else if !errors.Is(err, recall.ErrNotFound) {
			return err
		}
		if n := len(entries); n > 0 && entries[n-1].Seq > src.checked {
			// Rows this package did not check (above checked_seq, and
			// even above last_seq).
			if err := storekit.ValidateEntries(log[1:], s.opts.MaxItemSize); err != nil {
				return err
			}
		}
		row := sessionRow{meta: recall.Meta{Key: newKey}}
		err = s.writeEntries(ctx, q, &row, log, true)
		if errors.Is(err, errExists) {
			return fmt.Errorf("%w: %s exists", recall.ErrConflict, newKey)
		}
		meta = row.meta
		return err
	})
	if err != nil {
		return recall.Meta{}, fmt.Errorf("sqlstore: fork %s onto %s: %w", key, newKey, opError(ctx, err))
	}
	return meta, nil
}

// forkEntriesSQL reads session $1's log as a fork needs it: the seq, kind
// and payload of every entry. The times and usage of the source's entries
// are not the fork's, and decoding 10,000 times costs a fork of that many
// items a few per cent.
const forkEntriesSQL = `SELECT seq, kind, payload FROM entries WHERE session = $1 ORDER BY seq`

// forkEntries returns session sid's whole log, in seq order, without the
// entries' times and usage (see forkEntriesSQL), and without its
// unreadable item rows, as Load reads it.
func forkEntries(ctx context.Context, q querier, sid int64) ([]recall.Entry, error) {
	rs, err := q.query(ctx, forkEntriesSQL, sid)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var (
		sc  tailScanner
		out []recall.Entry
	)
	for rs.Next() {
		e, err := sc.scan(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return readable(out), rs.Err()
}
