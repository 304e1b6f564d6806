package filestore

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Fork implements storekit.Forker; recall.StoreSession.Fork calls it. It does what
// recall.StoreSession.Fork's fallback does (Load, then Append with IfNew) without
// validating and encoding the items a second time: they come from this
// store's own log, decoded (and so checked) as it was read. The fork's log
// is created whole in one step (temp file, fsync, link into place, fsync
// of the directory), so it exists whole or not at all, and linking fails
// when newKey exists, even if another process creates it at the same
// moment. The source is read as any reader reads it: its committed
// batches.
func (s *Store) Fork(ctx context.Context, key recall.Key, atSeq int64, newKey recall.Key) (recall.Meta, error) {
	fail := func(err error) (recall.Meta, error) {
		return recall.Meta{}, fmt.Errorf("filestore: fork %s onto %s: %w", key, newKey, err)
	}
	src, err := s.locate(key)
	if err != nil {
		return fail(err)
	}
	dst, err := s.locate(newKey)
	if err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	f, st, ok, err := openLog(src)
	if err != nil {
		return fail(err)
	}
	if !ok {
		return fail(recall.ErrNotFound)
	}
	entries, rec, err := readAll(ctx, f, src, st)
	f.Close()
	if err != nil {
		return fail(err)
	}
	if rec.empty {
		return fail(recall.ErrNotFound)
	}
	// An atSeq past the end is refused before an existing newKey, as the
	// fallback does.
	log, err := storekit.ForkLog(key, entries, atSeq, storekit.Now())
	if err != nil {
		return fail(err)
	}
	var meta recall.Meta
	err = s.withWriter(ctx, dst, func(w *writer) error {
		if w.exists() {
			return fmt.Errorf("%w: %s exists", recall.ErrConflict, newKey)
		}
		meta, err = w.write(ctx, log)
		return err
	})
	if err != nil {
		return fail(err)
	}
	return meta.Clone(), nil
}
