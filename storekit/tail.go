package storekit

import (
	"encoding/json"
	"iter"
	"slices"

	"github.com/recallkit/recall"
)

// Tail returns the newest limit items of a session (all when limit <= 0),
// oldest first, reading its log backwards: newestFirst yields entries from
// the highest Seq down. It stops at the first clear or compaction entry, or
// once it has limit items, so its cost is O(limit + pops) rather than the
// length of the log. Stores whose logs can be read from the end use it to
// make GetItems cheap; it agrees with [recall.Replay].
func Tail(limit int, newestFirst iter.Seq2[recall.Entry, error]) ([]recall.LiveItem, error) {
	var out []recall.LiveItem // newest first
	popped := map[recall.ItemRef]bool{}
	full := func() bool { return limit > 0 && len(out) >= limit }
	take := func(ref recall.ItemRef, it recall.Item) {
		if popped[ref] {
			delete(popped, ref)
			return
		}
		out = append(out, recall.LiveItem{Ref: ref, Item: it})
	}
scan:
	for e, err := range newestFirst {
		if err != nil {
			return nil, err
		}
		switch e.Kind {
		case recall.KindItem:
			if it, ok := e.Item(); ok {
				take(recall.ItemRef{Seq: e.Seq}, it)
			}
		case recall.KindPop, recall.KindRemove:
			var ref recall.ItemRef
			if json.Unmarshal(e.Data, &ref) == nil {
				popped[ref] = true
			}
		case recall.KindClear:
			break scan
		case recall.KindCompaction:
			var c recall.Compaction
			if json.Unmarshal(e.Data, &c) != nil {
				continue
			}
			for i := len(c.Items) - 1; i >= 0 && !full(); i-- {
				take(recall.ItemRef{Seq: e.Seq, Index: i}, c.Items[i])
			}
			break scan
		}
		if full() {
			break
		}
	}
	slices.Reverse(out)
	return out, nil
}

// Backwards returns an iterator over entries from the last to the first.
// It lets a store that holds a log in memory use [Tail].
func Backwards(entries []recall.Entry) iter.Seq2[recall.Entry, error] {
	return func(yield func(recall.Entry, error) bool) {
		for i := len(entries) - 1; i >= 0; i-- {
			if !yield(entries[i], nil) {
				return
			}
		}
	}
}
