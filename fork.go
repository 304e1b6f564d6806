package recall

import (
	"context"
	"fmt"
	"time"

	"github.com/recallkit/recall/internal/jsonvalid"
)

// Forker is an optional ability of a Store: a fork written natively.
//
// If a Store does not implement Forker, Fork loads the source's log,
// derives the view at atSeq with Replay, and appends the fork's log to
// newKey in one batch guarded by IfNew, which is atomic in every store.
type Forker interface {
	// Fork behaves as the package function Fork documents.
	Fork(ctx context.Context, key Key, atSeq int64, newKey Key) (Meta, error)
}

// Fork creates newKey holding the view of key as it stood after entry
// atSeq (the whole session when atSeq <= 0) and returns its metadata. The
// original is untouched. The fork's first entry is a fork entry naming key
// and atSeq, which becomes Meta.ForkedFrom, followed by one item entry per
// item of the view. A newKey that exists is ErrConflict; a missing key,
// or an atSeq past the end, is ErrNotFound.
func Fork(ctx context.Context, s Store, key Key, atSeq int64, newKey Key) (Meta, error) {
	if f, ok := s.(Forker); ok {
		return f.Fork(ctx, key, atSeq, newKey)
	}
	if err := newKey.Validate(); err != nil {
		return Meta{}, fmt.Errorf("recall: fork onto: %w", err)
	}
	_, entries, err := s.Load(ctx, key)
	if err != nil {
		return Meta{}, fmt.Errorf("recall: fork %s: %w", key, err)
	}
	log, err := forkLog(key, entries, atSeq, Now())
	if err != nil {
		return Meta{}, err
	}
	if _, err := s.Append(ctx, newKey, IfNew(), log...); err != nil {
		return Meta{}, fmt.Errorf("recall: fork %s onto %s: %w", key, newKey, err)
	}
	return s.Stat(ctx, newKey)
}

// forkLog builds the log of a fork of src, whose whole log is entries,
// taken after entry atSeq (the whole log when atSeq <= 0): a fork entry
// naming src and the seq, then one item entry per item of the view at that
// point, numbered from 1 and stamped now; an item of the view that is
// not valid JSON (a damaged record) is left out. An atSeq past the end is
// ErrNotFound.
func forkLog(src Key, entries []Entry, atSeq int64, now time.Time) ([]Entry, error) {
	last := int64(0)
	if n := len(entries); n > 0 {
		last = entries[n-1].Seq
	}
	if atSeq <= 0 {
		atSeq = last
	}
	if atSeq > last {
		return nil, fmt.Errorf("%w: fork %s at seq %d: the log ends at %d", ErrNotFound, src, atSeq, last)
	}
	cut := len(entries)
	for i, e := range entries {
		if e.Seq > atSeq {
			cut = i
			break
		}
	}
	_, live := Replay(src, entries[:cut])
	out := make([]Entry, 0, len(live)+1)
	out = append(out, NewEntry(KindFork, ForkOrigin{Key: src, Seq: atSeq}))
	for _, l := range live {
		if !jsonvalid.Valid(l.Item) {
			// A damaged record that passed ItemOf's cheap check (a SQL
			// row "{x}"): the fork is a new log and takes none.
			continue
		}
		out = append(out, ItemEntry(l.Item.Clone()))
	}
	for i := range out {
		out[i].Seq = int64(i + 1)
		out[i].Time = now
	}
	return out, nil
}
