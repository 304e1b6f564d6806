package recall

import (
	"encoding/json"
	"iter"
	"slices"
)

// LiveItem is an item of a session's current view together with the
// reference a pop entry uses to remove it.
type LiveItem struct {
	Ref  ItemRef
	Item Item
}

// Replay derives a session's metadata and item list from its whole log,
// given in Seq order. It is the reference semantics of the log: every store
// must return what Replay returns for the same entries. Entries of unknown
// kinds are skipped.
func Replay(key Key, entries []Entry) (Meta, []LiveItem) {
	m := Meta{Key: key}
	var live []LiveItem
	for _, e := range entries {
		m.Apply(e)
		switch e.Kind {
		case KindItem:
			live = append(live, LiveItem{Ref: ItemRef{Seq: e.Seq}, Item: Item(e.Data)})
		case KindPop:
			var ref ItemRef
			if json.Unmarshal(e.Data, &ref) == nil {
				// A pop names its item; a ref to nothing removes nothing,
				// as in Tail. Verify reports the count that disagrees.
				if i := slices.IndexFunc(live, func(l LiveItem) bool { return l.Ref == ref }); i >= 0 {
					live = slices.Delete(live, i, i+1)
				}
			}
		case KindClear:
			live = live[:0]
		case KindCompaction:
			var c Compaction
			if json.Unmarshal(e.Data, &c) == nil {
				live = live[:0]
				for i, it := range c.Items {
					live = append(live, LiveItem{Ref: ItemRef{Seq: e.Seq, Index: i}, Item: it})
				}
			}
		}
	}
	return m, live
}

// Items returns just the items of live.
func Items(live []LiveItem) []Item {
	out := make([]Item, len(live))
	for i, l := range live {
		out[i] = l.Item
	}
	return out
}

// Tail returns the newest limit items of a session (all when limit <= 0),
// oldest first, reading its log backwards: newestFirst yields entries from
// the highest Seq down. It stops at the first clear or compaction entry, or
// once it has limit items, so its cost is O(limit + pops) rather than the
// length of the log. Stores whose logs can be read from the end use it to
// make GetItems cheap; it agrees with [Replay].
func Tail(limit int, newestFirst iter.Seq2[Entry, error]) ([]LiveItem, error) {
	var out []LiveItem // newest first
	popped := map[ItemRef]bool{}
	full := func() bool { return limit > 0 && len(out) >= limit }
	take := func(ref ItemRef, it Item) {
		if popped[ref] {
			delete(popped, ref)
			return
		}
		out = append(out, LiveItem{Ref: ref, Item: it})
	}
scan:
	for e, err := range newestFirst {
		if err != nil {
			return nil, err
		}
		switch e.Kind {
		case KindItem:
			take(ItemRef{Seq: e.Seq}, Item(e.Data))
		case KindPop:
			var ref ItemRef
			if json.Unmarshal(e.Data, &ref) == nil {
				popped[ref] = true
			}
		case KindClear:
			break scan
		case KindCompaction:
			var c Compaction
			if json.Unmarshal(e.Data, &c) != nil {
				continue
			}
			for i := len(c.Items) - 1; i >= 0 && !full(); i-- {
				take(ItemRef{Seq: e.Seq, Index: i}, c.Items[i])
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
func Backwards(entries []Entry) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		for i := len(entries) - 1; i >= 0; i-- {
			if !yield(entries[i], nil) {
				return
			}
		}
	}
}
