package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Fork implements storekit.Forker; recall.StoreSession.Fork calls it. It does what
// recall.StoreSession.Fork's fallback does (Load, Append with IfNew, Stat) in two round
// trips instead of three: one transaction reads the source (as Load does)
// and whether newKey exists, and one append script call, guarded by
// IfNew, writes the fork's log (storekit.ForkLog), so the script keeps
// the metadata, the index entries, the TTL and the Updated rule exactly
// as for any append. The returned metadata is that log applied to an
// empty session, what Stat would read.
//
// The items are validated, as Append validates them: nothing tells the
// elements this package wrote from those another program wrote, and an
// item over Options.MaxItemSize refuses the fork with recall.ErrTooLarge,
// as it refuses the fallback's Append. (An element whose item only looks
// like a JSON object, "{x}", is no readable entry: out of the view, as
// out of Load's log.) The validation runs beside the encoding of the
// script's arguments, and the script runs only once both are done.
//
// The errors come in the fallback's order: an invalid newKey is
// recall.ErrInvalidKey, then a missing key or an atSeq past the end
// recall.ErrNotFound, then an existing newKey (key itself included)
// recall.ErrConflict; a refused fork writes nothing.
func (s *Store) Fork(ctx context.Context, key recall.Key, atSeq int64, newKey recall.Key) (recall.Meta, error) {
	fail := func(err error) (recall.Meta, error) {
		return recall.Meta{}, fmt.Errorf("redisstore: fork %s onto %s: %w", key, newKey, err)
	}
	if err := newKey.Validate(); err != nil {
		return fail(err)
	}
	if err := s.check(ctx, key); err != nil {
		return fail(err)
	}
	var taken *redis.IntCmd
	_, entries, err := s.load(ctx, key, func(p redis.Pipeliner) {
		taken = p.Exists(ctx, s.k.meta(newKey))
	})
	if err != nil {
		return fail(err)
	}
	log, err := storekit.ForkLog(key, entries, atSeq, storekit.Now().UTC().Truncate(time.Microsecond))
	if err != nil {
		return fail(err)
	}
	// Reported after a bad atSeq, as by the fallback's Append, and before
	// the work of the write; the script's guard checks again, atomically
	// with it.
	if taken.Val() > 0 {
		return fail(fmt.Errorf("%w: %s exists", recall.ErrConflict, newKey))
	}
	// Both read log and neither changes it.
	valid := make(chan error, 1)
	go func() { valid <- storekit.ValidateEntries(log[1:], s.opts.MaxItemSize) }()
	keys, args, err := s.writeArgs(newKey, modeAppend, -1, recall.IfNew(), log)
	if verr := <-valid; verr != nil {
		return fail(verr)
	}
	if err != nil {
		return fail(err)
	}
	// The context is checked last thing before the call that writes, as
	// write does.
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if err := scriptError(appendScript.Run(ctx, s.rdb, keys, args...).Err()); err != nil {
		var ge *guardError
		if errors.As(err, &ge) {
			err = ge.check(recall.IfNew())
		}
		return fail(err)
	}
	meta := recall.Meta{Key: newKey}
	for _, e := range log {
		meta.Apply(e)
	}
	return meta, nil
}
