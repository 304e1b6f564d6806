package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Script modes of lua/append.lua.
const (
	modeAppend = "a" // the script assigns seqs
	modeImport = "i" // entries carry their seqs
	modePop    = "p" // one pop entry, whose ref the script finds
)

// write runs the append script for entries, which already passed
// validation, and returns the session's last seq. expect, when >= 0, is the
// last seq the caller read: the script refuses with errStale if it moved.
// guard is checked by the script before it writes anything; a failed one
// is a *guardError.
func (s *Store) write(ctx context.Context, key recall.Key, mode string, expect int64, guard recall.Guard, entries []recall.Entry) (int64, error) {
	keys, args, err := s.writeArgs(key, mode, expect, guard, entries)
	if err != nil {
		return 0, err
	}
	// The context is checked last thing before the call that writes: a
	// done context changes nothing.
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// The batch token in args makes a client-side retry of this call (after
	// a lost reply) return the first outcome instead of appending twice.
	last, err := appendScript.Run(ctx, s.rdb, keys, args...).Int64()
	return last, scriptError(err)
}

// encodeGuard renders a guard as the append script reads it (ARGV[4]).
func encodeGuard(g recall.Guard) string {
	if g.IsZero() {
		return ""
	}
	var b []byte
	if g.Exists {
		b = append(b, 'e')
	}
	if g.New {
		b = append(b, 'n')
	}
	if g.CheckSeq {
		b = append(b, 's')
		b = strconv.AppendInt(b, g.LastSeq, 10)
	}
	return string(b)
}

// writeArgs builds the KEYS and ARGV of the append script.
func (s *Store) writeArgs(key recall.Key, mode string, expect int64, guard recall.Guard, entries []recall.Entry) ([]string, []any, error) {
	keys := append([]string{s.k.meta(key), s.k.log(key), s.k.ctl(key)}, s.k.indexes(key)...)
	exp := ""
	if expect >= 0 {
		exp = strconv.FormatInt(expect, 10)
	}
	args := make([]any, 0, 10+12*len(entries))
	args = append(args, s.k.prefix, mode, exp, encodeGuard(guard), s.ttlMS, randomHex(), randomHex(),
		member(key), key.Project, len(entries))
	for _, e := range entries {
		us, err := micros(e.Time)
		if err != nil {
			return nil, nil, err
		}
		seq := "" // the script assigns it
		if mode == modeImport {
			seq = strconv.FormatInt(e.Seq, 10)
		}
		op, a, n := effect(e)
		if mode == modePop {
			op = "pop" // its payload, the ref, is written by the script
		}
		var uin, uout, utot string
		if u := e.Usage; u != nil {
			uin, uout, utot = strconv.FormatInt(u.InputTokens, 10), strconv.FormatInt(u.OutputTokens, 10), strconv.FormatInt(u.TotalTokens, 10)
		}
		activity := ""
		if e.Kind.IsActivity() {
			activity = "1" // moves Updated and the index score
		}
		args = append(args, seq, encodeBody(e, us, n), us, activity, op, a[0], a[1], a[2], uin, uout, utot, e.Prompt())
	}
	return keys, args, nil
}

// stamp returns copies of entries with a zero Time set to now (imported
// entries never have one: storekit.ImportPlan checks) and every time cut to
// the microsecond, the precision the store keeps.
func stamp(entries []recall.Entry) []recall.Entry {
	now := storekit.Now()
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

// Append implements recall.Store. The batch is validated and encoded
// before the one script call that checks the guard and writes it, so a
// bad entry or a failed guard writes nothing.
func (s *Store) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	if err := s.check(ctx, key); err != nil {
		return 0, fmt.Errorf("redisstore: append %s: %w", key, err)
	}
	if err := storekit.ValidateEntries(entries, s.opts.MaxItemSize); err != nil {
		return 0, fmt.Errorf("redisstore: append %s: %w", key, err)
	}
	last, err := s.write(ctx, key, modeAppend, -1, guard, stamp(entries))
	if err != nil {
		var ge *guardError
		if errors.As(err, &ge) {
			err = ge.check(guard)
		}
		return 0, fmt.Errorf("redisstore: append %s: %w", key, err)
	}
	return last, nil
}

// Pop implements recall.Store. One script finds the newest item (as
// storekit.Tail does) and appends the pop entry naming it, so two concurrent
// pops never return the same item.
func (s *Store) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, fmt.Errorf("redisstore: pop %s: %w", key, err)
	}
	// The script fills in the entry's data, the ref of the item it finds.
	pop := stamp([]recall.Entry{{Kind: recall.KindPop}})
	keys, args, err := s.writeArgs(key, modePop, -1, recall.Guard{}, pop)
	if err != nil {
		return nil, fmt.Errorf("redisstore: pop %s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
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
// (storekit.ImportPlan) and the script writes only if that is still the
// last seq, so a plan never lands on a log that moved; it plans again
// otherwise.
func (s *Store) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	if err := s.check(ctx, key); err != nil {
		return 0, fmt.Errorf("redisstore: import %s: %w", key, err)
	}
	if err := storekit.ValidateEntries(entries, s.opts.MaxItemSize); err != nil {
		return 0, fmt.Errorf("redisstore: import %s: %w", key, err)
	}
	for range maxAttempts {
		last, err := s.lastSeq(ctx, key)
		if err != nil {
			return 0, fmt.Errorf("redisstore: import %s: %w", key, err)
		}
		fresh, err := storekit.ImportPlan(last, entries)
		if err != nil {
			return 0, fmt.Errorf("redisstore: import %s: %w", key, err)
		}
		if len(fresh) == 0 {
			return last, nil
		}
		last, err = s.write(ctx, key, modeImport, last, recall.Guard{}, stamp(fresh))
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
