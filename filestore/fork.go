package filestore

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
)

// Fork implements recall.Store. The fork's log is built whole (see
// recall.ForkLog) and created in one step: temp file, fsync, link into
// place, fsync of the directory. Linking fails when newKey exists, even if
// another process creates it at the same moment, so a fork never replaces
// a session. The source is read without a lock, as any reader: it sees the
// source's committed batches.
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
	f, st, ok, err := openLog(src)
	if err != nil {
		return fail(err)
	}
	if !ok {
		return fail(recall.ErrNotFound)
	}
	entries, rec, err := readAll(f, src, st)
	f.Close()
	if err != nil {
		return fail(err)
	}
	if rec.empty {
		return fail(recall.ErrNotFound)
	}
	var meta recall.Meta
	err = s.withWriter(ctx, dst, func(w *writer) error {
		if w.f != nil {
			return fmt.Errorf("%w: %s exists", recall.ErrConflict, newKey)
		}
		now := recall.Now()
		log, err := recall.ForkLog(key, entries, atSeq, now)
		if err != nil {
			return err
		}
		// Every entry of the fork carries now: encode it once.
		t, err := marshalTime(now)
		if err != nil {
			return err
		}
		// The fork's log is at most about the source's size (its live
		// items, re-encoded the same way, plus a fork line), so one
		// allocation usually holds it.
		buf := make([]byte, 0, st.size+4<<10)
		// The log is created whole or not at all, so no line needs the
		// batch mark.
		for _, e := range log {
			buf = appendLineTime(buf, e, false, t)
		}
		meta, _ = recall.Replay(newKey, log)
		return w.create(buf, meta)
	})
	if err != nil {
		return fail(err)
	}
	return meta.Clone(), nil
}
