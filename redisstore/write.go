package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/recallkit/recall"
)

// Script modes of lua/append.lua.
const (
	modeAppend = "a" // the script assigns seqs
	modeImport = "i" // entries carry their seqs
	modeCreate = "c" // import into a session that must not exist yet
	modePop    = "p" // one pop entry, whose ref the script finds
)

// write runs the append script for entries, which already passed
// validation, and returns the session's last seq. expect, when >= 0, is the
// last seq the caller read: the script refuses with errStale if it moved.
// guard is the compaction guard, or "".
func (s *Store) write(ctx context.Context, key recall.Key, mode string, expect int64, guard string, entries []recall.Entry) (int64, error) {
	keys, args, err := s.writeArgs(key, mode, expect, guard, entries)
	if err != nil {
		return 0, err
	}
	// The batch token in args makes a client-side retry of this call (after
	// a lost reply) return the first outcome instead of appending twice.
	last, err := appendScript.Run(ctx, s.rdb, keys, args...).Int64()
	return last, scriptError(err)
}

// writeArgs builds the KEYS and ARGV of the append script.
func (s *Store) writeArgs(key recall.Key, mode string, expect int64, guard string, entries []recall.Entry) ([]string, []any, error) {
	keys := append([]string{s.k.meta(key), s.k.log(key)}, s.k.indexes(key)...)
	exp := ""
	if expect >= 0 {
		exp = strconv.FormatInt(expect, 10)
	}
	args := make([]any, 0, 10+9*len(entries))
	args = append(args, s.k.prefix, mode, exp, guard, s.ttlMS, randomHex(), randomHex(),
		member(key), key.Project, len(entries))
	for _, e := range entries {
		us, err := micros(e.Time)
		if err != nil {
			return nil, nil, err
		}
		seq := "" // the script assigns it
		if mode == modeImport || mode == modeCreate {
			seq = strconv.FormatInt(e.Seq, 10)
		}
		op, a1, a2, n := effect(e)
		if mode == modePop {
			op = "pop" // its payload, the ref, is written by the script
		}
		var uin, uout, utot string
		if u := e.Usage; u != nil {
			uin, uout, utot = strconv.FormatInt(u.InputTokens, 10), strconv.FormatInt(u.OutputTokens, 10), strconv.FormatInt(u.TotalTokens, 10)
		}
		args = append(args, seq, encodeBody(e, us, n), us, op, a1, a2, uin, uout, utot)
	}
	return keys, args, nil
}

// stamp returns copies of entries with a zero Time set to now (imported
// entries never have one: recall.ImportPlan checks) and every time cut to
// the microsecond, the precision the store keeps.
func stamp(entries []recall.Entry) []recall.Entry {
	now := recall.Now()
	out := make([]recall.Entry, len(entries))
	for i, e := range entries {
		if e.Time.IsZero() {
			e.Time = now
		}
		e.Time = e.Time.UTC().Truncate(time.Microsecond)
		out[i] = e
	}
	return out
}

// guardOf returns the Through that every compaction entry of a batch
// read, for the script to compare with the session's last seq, or "" when
// the batch holds none. Compactions that read different seqs cannot all
// match, so the batch is a conflict (recall.CheckGuard).
func guardOf(entries []recall.Entry) (string, error) {
	guard := ""
	for _, e := range entries {
		if e.Kind != recall.KindCompaction {
			continue
		}
		var c recall.Compaction
		if err := json.Unmarshal(e.Data, &c); err != nil {
			return "", fmt.Errorf("%w: compaction payload: %v", recall.ErrInvalidItem, err)
		}
		g := strconv.FormatInt(c.Through, 10)
		if guard != "" && g != guard {
			return "", fmt.Errorf("%w: compactions of one batch read the log at seqs %s and %s", recall.ErrConflict, guard, g)
		}
		guard = g
	}
	return guard, nil
}

// Append implements recall.Store. The batch is validated and encoded
// before the one script call that writes it, so a bad entry writes nothing.
func (s *Store) Append(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	if err := s.check(key); err != nil {
		return 0, fmt.Errorf("redisstore: append %s: %w", key, err)
	}
	if err := recall.ValidateEntries(entries, s.opts.MaxItemSize); err != nil {
		return 0, fmt.Errorf("redisstore: append %s: %w", key, err)
	}
	guard, err := guardOf(entries)
	if err != nil {
		return 0, fmt.Errorf("redisstore: append %s: %w", key, err)
	}
	last, err := s.write(ctx, key, modeAppend, -1, guard, stamp(entries))
	if err != nil {
		if guard != "" && errors.Is(err, recall.ErrConflict) {
			return 0, fmt.Errorf("redisstore: append %s: compaction read the log at seq %s: %w", key, guard, err)
		}
		return 0, fmt.Errorf("redisstore: append %s: %w", key, err)
	}
	return last, nil
}

// Pop implements recall.Store. One script finds the newest item (as
// recall.Tail does) and appends the pop entry naming it, so two concurrent
// pops never return the same item.
func (s *Store) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	if err := s.check(key); err != nil {
		return nil, fmt.Errorf("redisstore: pop %s: %w", key, err)
	}
	// The script fills in the entry's data, the ref of the item it finds.
	pop := stamp([]recall.Entry{{Kind: recall.KindPop}})
	keys, args, err := s.writeArgs(key, modePop, -1, "", pop)
	if err != nil {
		return nil, fmt.Errorf("redisstore: pop %s: %w", key, err)
	}
	res, err := appendScript.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("redisstore: pop %s: %w", key, scriptError(err))
	}
	if len(res) == 0 {
		return nil, nil // nothing to pop
	}
	it, err := poppedItem(res)
	if err != nil {
		return nil, fmt.Errorf("redisstore: pop %s: %w", key, err)
	}
	return it, nil
}

// poppedItem extracts the item from the pop script's reply {last, seq,
// index, data, kind}: data is the item entry's, or the compaction's that
// holds the item at index.
func poppedItem(res []any) (recall.Item, error) {
	if len(res) != 5 {
		return nil, fmt.Errorf("%w: unexpected pop reply of %d values", recall.ErrCorrupt, len(res))
	}
	index, _ := res[2].(int64)
	data, _ := res[3].(string)
	switch kind, _ := res[4].(string); recall.Kind(kind) {
	case recall.KindItem:
		return recall.Item(data), nil
	case recall.KindCompaction:
		var c recall.Compaction
		if err := json.Unmarshal([]byte(data), &c); err == nil && index >= 0 && index < int64(len(c.Items)) {
			return c.Items[index], nil
		}
	}
	return nil, fmt.Errorf("%w: the popped ref names no item", recall.ErrCorrupt)
}

// Import implements recall.Store: it plans against the last seq it read
// and writes only if that is still the last seq, retrying otherwise.
func (s *Store) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	if err := s.check(key); err != nil {
		return 0, fmt.Errorf("redisstore: import %s: %w", key, err)
	}
	if err := recall.ValidateEntries(entries, s.opts.MaxItemSize); err != nil {
		return 0, fmt.Errorf("redisstore: import %s: %w", key, err)
	}
	for range maxAttempts {
		last, err := s.lastSeq(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("redisstore: import %s: %w", key, err)
		}
		fresh, err := recall.ImportPlan(last, entries)
		if err != nil {
			return 0, fmt.Errorf("redisstore: import %s: %w", key, err)
		}
		if len(fresh) == 0 {
			return last, nil
		}
		last, err = s.write(ctx, key, modeImport, last, "", stamp(fresh))
		if errors.Is(err, errStale) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("redisstore: import %s: %w", key, err)
		}
		return last, nil
	}
	return 0, fmt.Errorf("redisstore: import %s: %w: the session kept changing", key, recall.ErrConflict)
}

// Fork implements recall.Store. The new session's log is written by one
// script call that fails if newKey exists.
func (s *Store) Fork(ctx context.Context, key recall.Key, atSeq int64, newKey recall.Key) (recall.Meta, error) {
	if err := s.check(key); err != nil {
		return recall.Meta{}, fmt.Errorf("redisstore: fork %s: %w", key, err)
	}
	if err := newKey.Validate(); err != nil {
		return recall.Meta{}, fmt.Errorf("redisstore: fork onto %s: %w", newKey, err)
	}
	_, entries, err := s.load(ctx, key)
	if err != nil {
		return recall.Meta{}, fmt.Errorf("redisstore: fork %s: %w", key, err)
	}
	// Checked here to report a taken newKey before a bad atSeq, like the
	// other stores; the create script checks again, atomically.
	if n, err := s.rdb.Exists(ctx, s.k.meta(newKey)).Result(); err != nil || n > 0 {
		if err == nil {
			err = fmt.Errorf("%w: the session exists", recall.ErrConflict)
		}
		return recall.Meta{}, fmt.Errorf("redisstore: fork onto %s: %w", newKey, err)
	}
	log, err := recall.ForkLog(key, entries, atSeq, recall.Now())
	if err != nil {
		return recall.Meta{}, fmt.Errorf("redisstore: %w", err)
	}
	if _, err := s.write(ctx, newKey, modeCreate, -1, "", log); err != nil {
		return recall.Meta{}, fmt.Errorf("redisstore: fork onto %s: %w", newKey, err)
	}
	meta, _ := recall.Replay(newKey, log)
	return meta, nil
}
