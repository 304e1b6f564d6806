package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Rewrite implements storekit.Rewriter with an optimistic transaction:
// the session's metadata hash and log are watched while they are read,
// and the new elements (LSET of each entry replaced, RPUSH of those
// appended) and the metadata they change (last seq, title, first prompt,
// counts) are written by one MULTI/EXEC, which Redis applies whole or not
// at all. A write to the session in between fails the EXEC; the rewrite
// then reads again, so the guard decides (an append is ErrConflict).
// Redis keeps no search index, so the log and the hash are every copy.
func (s *Store) Rewrite(ctx context.Context, key recall.Key, rw storekit.Rewrite) (recall.Meta, error) {
	if err := s.check(ctx, key); err != nil {
		return recall.Meta{}, fmt.Errorf("redisstore: rewrite %s: %w", key, err)
	}
	mk, lk := s.k.meta(key), s.k.log(key)
	var meta recall.Meta
	var err error
	for range 8 {
		err = s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			var e error
			meta, e = s.rewriteTx(ctx, tx, key, rw)
			return e
		}, mk, lk)
		if !errors.Is(err, redis.TxFailedErr) {
			break
		}
	}
	if err != nil {
		return recall.Meta{}, fmt.Errorf("redisstore: rewrite %s: %w", key, err)
	}
	return meta, nil
}

// rewriteTx reads key's session on the watching connection tx and
// writes the rewrite in one MULTI/EXEC.
func (s *Store) rewriteTx(ctx context.Context, tx *redis.Tx, key recall.Key, rw storekit.Rewrite) (recall.Meta, error) {
	mk, lk := s.k.meta(key), s.k.log(key)
	h, err := tx.HGetAll(ctx, mk).Result()
	if err != nil {
		return recall.Meta{}, err
	}
	if len(h) == 0 {
		return recall.Meta{}, recall.ErrNotFound
	}
	old, err := decodeMeta(key, h)
	if err != nil {
		return recall.Meta{}, err
	}
	first, err := firstSeq(h["first"])
	if err != nil {
		return recall.Meta{}, err
	}
	els, err := tx.LRange(ctx, lk, 0, -1).Result()
	if err != nil {
		return recall.Meta{}, err
	}
	entries, _ := decodeRun(els, first)
	out, err := storekit.RewriteLog(entries, old.LastSeq, rw, s.opts.MaxItemSize)
	if err != nil {
		return recall.Meta{}, err
	}
	replaced := make([]string, len(rw.Replace))
	for i, e := range rw.Replace {
		if replaced[i], err = element(e); err != nil {
			return recall.Meta{}, err
		}
	}
	// The ctl list covers the log while its "ctl" field equals "last"
	// (see page.go); entries that are no control entries of the view
	// keep it covering, any other leaves it for readers to rebuild.
	ctlCovers := h["ctl"] == h["last"]
	var added []any
	for _, e := range out[len(entries):] {
		switch e.Kind {
		case recall.KindPop, recall.KindRemove, recall.KindClear, recall.KindCompaction, recall.KindRewind, recall.KindRedo:
			ctlCovers = false
		}
		el, err := element(e)
		if err != nil {
			return recall.Meta{}, err
		}
		added = append(added, el)
	}
	meta, _ := recall.Replay(key, out)
	if err := ctx.Err(); err != nil {
		return recall.Meta{}, err // the EXEC below is the commit
	}
	_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, e := range rw.Replace {
			p.LSet(ctx, lk, e.Seq-first, replaced[i])
		}
		if len(added) > 0 {
			p.RPush(ctx, lk, added...)
		}
		p.HSet(ctx, mk, "last", meta.LastSeq, "title", meta.Title, "tsrc", string(meta.TitleSource), "fp", meta.FirstPrompt,
			"items", meta.ItemCount, "uin", meta.Usage.InputTokens, "uout", meta.Usage.OutputTokens, "utot", meta.Usage.TotalTokens)
		if ctlCovers {
			p.HSet(ctx, mk, "ctl", meta.LastSeq)
		}
		return nil
	})
	if err != nil {
		return recall.Meta{}, err
	}
	meta.Archived, meta.Pinned, meta.Trashed = old.Archived, old.Pinned, old.Trashed
	return meta, nil
}

// element encodes e as a log element holding its seq.
func element(e recall.Entry) (string, error) {
	us, err := micros(e.Time)
	if err != nil {
		return "", err
	}
	_, _, n := effect(e)
	return strconv.FormatInt(e.Seq, 10) + "\n" + encodeBody(e, us, n), nil
}
