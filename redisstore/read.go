package redisstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Stat implements recall.Store. It reads the metadata hash only, so its
// Corrupt is 0 (Load counts damaged elements).
func (s *Store) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if err := s.check(ctx, key); err != nil {
		return recall.Meta{}, fmt.Errorf("redisstore: stat %s: %w", key, err)
	}
	h, err := s.rdb.HGetAll(ctx, s.k.meta(key)).Result()
	if err == nil && len(h) == 0 {
		err = recall.ErrNotFound
	}
	if err != nil {
		return recall.Meta{}, fmt.Errorf("redisstore: stat %s: %w", key, err)
	}
	m, err := decodeMeta(key, h)
	if err != nil {
		return recall.Meta{}, fmt.Errorf("redisstore: stat: %w", err)
	}
	return m, nil
}

// lastSeq returns the session's last seq, 0 when it does not exist.
func (s *Store) lastSeq(ctx context.Context, key recall.Key) (int64, error) {
	v, err := s.rdb.HGet(ctx, s.k.meta(key), "last").Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return v, err
}

// Load implements recall.Store. The metadata and the log are one
// snapshot (one MULTI); a damaged element is left out of the entries and
// counted in Meta.Corrupt, as is an item entry whose item is not a JSON
// object.
func (s *Store) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	if err := s.check(ctx, key); err != nil {
		return recall.Meta{}, nil, fmt.Errorf("redisstore: load %s: %w", key, err)
	}
	m, entries, err := s.load(ctx, key, nil)
	if err != nil {
		return recall.Meta{}, nil, fmt.Errorf("redisstore: load %s: %w", key, err)
	}
	return m, entries, nil
}

// load reads the metadata and the whole log in one transaction, so they
// agree. also, when not nil, queues more commands in that transaction
// (Fork's look at its target), whose results the caller reads.
func (s *Store) load(ctx context.Context, key recall.Key, also func(p redis.Pipeliner)) (recall.Meta, []recall.Entry, error) {
	var hc *redis.MapStringStringCmd
	var lc *redis.StringSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		hc = p.HGetAll(ctx, s.k.meta(key))
		lc = p.LRange(ctx, s.k.log(key), 0, -1)
		if also != nil {
			also(p)
		}
		return nil
	})
	if err == nil && len(hc.Val()) == 0 {
		err = recall.ErrNotFound
	}
	if err != nil {
		return recall.Meta{}, nil, err
	}
	m, err := decodeMeta(key, hc.Val())
	if err != nil {
		return recall.Meta{}, nil, err
	}
	first, err := firstSeq(hc.Val()["first"])
	if err != nil {
		return recall.Meta{}, nil, err
	}
	els := lc.Val()
	if int64(len(els)) != m.LastSeq-first+1 {
		return recall.Meta{}, nil, fmt.Errorf("%w: log holds %d elements from seq %d, metadata says it ends at %d", recall.ErrCorrupt, len(els), first, m.LastSeq)
	}
	entries, skipped := decodeRun(els, first)
	m.Corrupt = skipped
	for _, e := range entries {
		if _, ok := e.Item(); e.Kind == recall.KindItem && !ok {
			m.Corrupt++
		}
	}
	return m, entries, nil
}

// firstSeq parses the "first" field of a session's metadata: the seq of
// its log's first element. It is absent (1) unless the session was
// imported from a purged log, which starts at a compaction entry.
func firstSeq(v string) (int64, error) {
	if v == "" {
		return 1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: first seq %q", recall.ErrCorrupt, v)
	}
	return n, nil
}

// decodeRun decodes consecutive log elements, the first holding seq
// first. Elements that are not readable entries are left out and counted.
func decodeRun(els []string, first int64) ([]recall.Entry, int) {
	out := make([]recall.Entry, 0, len(els))
	skipped := 0
	for i, el := range els {
		e, err := decodeElement(el, first+int64(i))
		if err != nil {
			skipped++
			continue
		}
		out = append(out, e)
	}
	return out, skipped
}

// Entries implements recall.Store. Element i of the log holds seq
// first+i (first is 1 unless the log was imported from a purged one), so
// a page is one LRANGE: the read assumes first is 1 and reads again when
// the metadata read with it says otherwise. Elements that are not
// readable entries are left out, as Load leaves them out.
func (s *Store) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, fmt.Errorf("redisstore: entries %s: %w", key, err)
	}
	after = max(after, 0)
	first := int64(1)
	for range maxAttempts {
		start := max(after-first+1, 0)
		stop := int64(-1)
		if limit > 0 {
			stop = start + int64(limit) - 1
		}
		var mc *redis.SliceCmd
		var lc *redis.StringSliceCmd
		_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			mc = p.HMGet(ctx, s.k.meta(key), "last", "first")
			lc = p.LRange(ctx, s.k.log(key), start, stop)
			return nil
		})
		if err == nil && mc.Val()[0] == nil {
			err = recall.ErrNotFound
		}
		if err != nil {
			return nil, fmt.Errorf("redisstore: entries %s: %w", key, err)
		}
		v, _ := mc.Val()[1].(string)
		got, err := firstSeq(v)
		if err != nil {
			return nil, fmt.Errorf("redisstore: entries %s: %w", key, err)
		}
		if got != first {
			first = got
			continue
		}
		entries, _ := decodeRun(lc.Val(), first+start)
		return entries, nil
	}
	return nil, fmt.Errorf("redisstore: entries %s: %w: the session was re-created during every read", key, recall.ErrConflict)
}

// Items implements recall.Store. The view and the last seq it returns are
// one snapshot: see tail.
func (s *Store) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, 0, fmt.Errorf("redisstore: items %s: %w", key, err)
	}
	live, last, err := s.tail(ctx, key, limit)
	if err != nil {
		return nil, 0, fmt.Errorf("redisstore: items %s: %w", key, err)
	}
	return live, last, nil
}

// tail returns the newest limit items (all when limit <= 0) and the last
// seq of the log they were read from (0 and no items for a missing
// session). It reads the log from its end in growing chunks and feeds
// storekit.Tail, which stops at the first clear or compaction, so its cost
// follows limit, not the length of the log. Elements that are not
// readable entries are skipped, and Tail skips damaged items.
//
// The first chunk is read in one transaction with the last seq, so the
// two agree; most reads end there. Each later chunk is read in a
// transaction with the session's generation, a random value fixed when the
// session is created: elements below the end never change while it holds,
// since the log only grows, so they are what the first transaction would
// have read. A session removed and re-created between two chunks changes
// it, and the read starts over.
func (s *Store) tail(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	for range maxAttempts {
		live, last, err := s.tailOnce(ctx, key, limit)
		if !errors.Is(err, errStale) {
			return live, last, err
		}
	}
	return nil, 0, fmt.Errorf("%w: the session was re-created during every read", recall.ErrConflict)
}

func (s *Store) tailOnce(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	chunk := int64(limit) + 4 // a few entries beyond the items: titles, pops
	if limit <= 0 {
		chunk = 256
	}
	var mc *redis.SliceCmd
	var lc *redis.StringSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		mc = p.HMGet(ctx, s.k.meta(key), "gen", "last", "first")
		lc = p.LRange(ctx, s.k.log(key), -chunk, -1)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	gen, _ := mc.Val()[0].(string)
	lastStr, _ := mc.Val()[1].(string)
	if gen == "" {
		return nil, 0, nil // no such session
	}
	last, err := strconv.ParseInt(lastStr, 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: last seq %q", recall.ErrCorrupt, lastStr)
	}
	firstStr, _ := mc.Val()[2].(string)
	first, err := firstSeq(firstStr)
	if err != nil {
		return nil, 0, err
	}
	els := lc.Val()
	lo := last - first + 1 - int64(len(els)) // index of the oldest element read
	var stale bool
	newestFirst := func(yield func(recall.Entry, error) bool) {
		for {
			for i := len(els) - 1; i >= 0; i-- {
				e, err := decodeElement(els[i], first+lo+int64(i))
				if err != nil {
					continue // not a readable entry: skipped, as Load skips it
				}
				if !yield(e, nil) {
					return
				}
			}
			if lo <= 0 {
				return
			}
			chunk = min(chunk*2, 4096)
			start := max(lo-chunk, 0)
			var gc *redis.StringCmd
			_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				gc = p.HGet(ctx, s.k.meta(key), "gen")
				lc = p.LRange(ctx, s.k.log(key), start, lo-1)
				return nil
			})
			if err == nil && gc.Val() != gen || errors.Is(err, redis.Nil) {
				stale = true // removed, or removed and created again
				return
			}
			if err != nil {
				yield(recall.Entry{}, err)
				return
			}
			els, lo = lc.Val(), start
		}
	}
	live, err := storekit.Tail(limit, iter.Seq2[recall.Entry, error](newestFirst))
	if stale {
		return nil, 0, errStale
	}
	if err != nil {
		return nil, 0, err
	}
	return live, last, nil
}
