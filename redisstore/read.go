package redisstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
)

// Stat implements recall.Store.
func (s *Store) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if err := s.check(key); err != nil {
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

// Load implements recall.Store.
func (s *Store) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	if err := s.check(key); err != nil {
		return recall.Meta{}, nil, fmt.Errorf("redisstore: load %s: %w", key, err)
	}
	m, entries, err := s.load(ctx, key)
	if err != nil {
		return recall.Meta{}, nil, fmt.Errorf("redisstore: load %s: %w", key, err)
	}
	return m, entries, nil
}

// load reads the metadata and the whole log in one transaction, so they
// agree.
func (s *Store) load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	var hc *redis.MapStringStringCmd
	var lc *redis.StringSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		hc = p.HGetAll(ctx, s.k.meta(key))
		lc = p.LRange(ctx, s.k.log(key), 0, -1)
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
	entries, err := decodeRun(lc.Val(), 1)
	if err != nil {
		return recall.Meta{}, nil, err
	}
	if int64(len(entries)) != m.LastSeq {
		return recall.Meta{}, nil, fmt.Errorf("%w: log holds %d entries, metadata says %d", recall.ErrCorrupt, len(entries), m.LastSeq)
	}
	return m, entries, nil
}

// decodeRun decodes consecutive log elements, the first holding seq first.
func decodeRun(els []string, first int64) ([]recall.Entry, error) {
	out := make([]recall.Entry, len(els))
	for i, el := range els {
		e, err := decodeElement(el, first+int64(i))
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// Entries implements recall.Store. Element i of the log holds seq i+1, so
// a page is one LRANGE.
func (s *Store) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	if err := s.check(key); err != nil {
		return nil, fmt.Errorf("redisstore: entries %s: %w", key, err)
	}
	after = max(after, 0)
	stop := int64(-1)
	if limit > 0 {
		stop = after + int64(limit) - 1
	}
	var ec *redis.IntCmd
	var lc *redis.StringSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		ec = p.Exists(ctx, s.k.meta(key))
		lc = p.LRange(ctx, s.k.log(key), after, stop)
		return nil
	})
	if err == nil && ec.Val() == 0 {
		err = recall.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: entries %s: %w", key, err)
	}
	entries, err := decodeRun(lc.Val(), after+1)
	if err != nil {
		return nil, fmt.Errorf("redisstore: entries %s: %w", key, err)
	}
	return entries, nil
}

// Items implements recall.Store.
func (s *Store) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, error) {
	if err := s.check(key); err != nil {
		return nil, fmt.Errorf("redisstore: items %s: %w", key, err)
	}
	live, err := s.tail(ctx, key, limit)
	if err != nil {
		return nil, fmt.Errorf("redisstore: items %s: %w", key, err)
	}
	return live, nil
}

// tail returns the newest limit items (all when limit <= 0). It reads the log from its end in growing chunks
// and feeds recall.Tail, which stops at the first clear or compaction, so
// its cost follows limit, not the length of the log.
//
// Each chunk is read in a transaction with the session's generation, a
// random value fixed when the session is created: elements below the end
// never change while it holds, since the log only grows. A session removed
// and re-created between two chunks changes it, and the read starts over.
func (s *Store) tail(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, error) {
	for range maxAttempts {
		live, err := s.tailOnce(ctx, key, limit)
		if !errors.Is(err, errStale) {
			return live, err
		}
	}
	return nil, fmt.Errorf("%w: the session was re-created during every read", recall.ErrConflict)
}

func (s *Store) tailOnce(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, error) {
	chunk := int64(limit) + 4 // a few entries beyond the items: titles, pops
	if limit <= 0 {
		chunk = 256
	}
	var mc *redis.SliceCmd
	var lc *redis.StringSliceCmd
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		mc = p.HMGet(ctx, s.k.meta(key), "gen", "last")
		lc = p.LRange(ctx, s.k.log(key), -chunk, -1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	gen, _ := mc.Val()[0].(string)
	lastStr, _ := mc.Val()[1].(string)
	if gen == "" {
		return nil, nil // no such session
	}
	last, err := strconv.ParseInt(lastStr, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: last seq %q", recall.ErrCorrupt, lastStr)
	}
	els := lc.Val()
	lo := last - int64(len(els)) // index of the oldest element read
	var stale bool
	newestFirst := func(yield func(recall.Entry, error) bool) {
		for {
			for i := len(els) - 1; i >= 0; i-- {
				e, err := decodeElement(els[i], lo+int64(i)+1)
				if !yield(e, err) || err != nil {
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
	live, err := recall.Tail(limit, iter.Seq2[recall.Entry, error](newestFirst))
	if stale {
		return nil, errStale
	}
	return live, err
}
