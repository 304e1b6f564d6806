package recall

import (
	"context"
	"fmt"
)

// forker is storekit.Forker, the optional ability Fork uses when a store
// has it.
type forker interface {
	Fork(ctx context.Context, key Key, atSeq int64, newKey Key) (Meta, error)
}

// Fork creates newKey holding the view of key as it stood after entry
// atSeq (the whole session when atSeq <= 0) and returns its metadata. The
// original is untouched. The fork's first entry is a fork entry naming key
// and atSeq, which becomes Meta.ForkedFrom, followed by one item entry per
// item of the view. A newKey that exists is ErrConflict; a missing key,
// or an atSeq past the end, is ErrNotFound. A store may fork natively
// (storekit.Forker); otherwise Fork loads the source's log, derives the
// view at atSeq with Replay, and appends the fork's log to newKey in one
// batch guarded by IfNew, which is atomic in every store.
func (s *StoreSession) Fork(ctx context.Context, atSeq int64, newKey Key) (Meta, error) {
	st, key := s.store, s.key
	if f, ok := As[forker](st); ok {
		return f.Fork(ctx, key, atSeq, newKey)
	}
	if err := newKey.Validate(); err != nil {
		return Meta{}, fmt.Errorf("recall: fork onto: %w", err)
	}
	_, entries, err := st.Load(ctx, key)
	if err != nil {
		return Meta{}, fmt.Errorf("recall: fork %s: %w", key, err)
	}
	live, at, err := viewAt(key, entries, atSeq)
	if err != nil {
		return Meta{}, fmt.Errorf("recall: fork: %w", err)
	}
	// The fork's log: a fork entry, then the view's items (copies already:
	// Load returns copies). Append assigns seqs and times.
	log := append([]Entry{NewEntry(KindFork, ForkOrigin{Key: key, Seq: at})}, ItemEntries(PlainItems(live)...)...)
	if _, err := st.Append(ctx, newKey, IfNew(), log...); err != nil {
		return Meta{}, fmt.Errorf("recall: fork %s onto %s: %w", key, newKey, err)
	}
	return st.Stat(ctx, newKey)
}

// viewAt returns the view of the log entries (a session's whole log in
// seq order, key's) as it stood after entry atSeq, and the seq it stands
// at: atSeq, or the last seq when atSeq <= 0. An atSeq past the end is
// ErrNotFound. It is what a fork copies.
func viewAt(key Key, entries []Entry, atSeq int64) ([]LiveItem, int64, error) {
	last := int64(0)
	if n := len(entries); n > 0 {
		last = entries[n-1].Seq
	}
	if atSeq <= 0 {
		atSeq = last
	}
	if atSeq > last {
		return nil, 0, fmt.Errorf("%w: %s at seq %d: the log ends at %d", ErrNotFound, key, atSeq, last)
	}
	cut := len(entries)
	for i, e := range entries {
		if e.Seq > atSeq {
			cut = i
			break
		}
	}
	_, live := Replay(key, entries[:cut])
	return live, atSeq, nil
}
