package recall

import (
	"encoding/json"
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
// kinds are skipped, and so are item entries whose item is not a JSON
// object (see Entry.Item).
func Replay(key Key, entries []Entry) (Meta, []LiveItem) {
	m := Meta{Key: key}
	var live []LiveItem
	for _, e := range entries {
		m.Apply(e)
		switch e.Kind {
		case KindItem:
			if it, ok := e.Item(); ok {
				live = append(live, LiveItem{Ref: ItemRef{Seq: e.Seq}, Item: it})
			}
		case KindPop, KindRemove:
			var ref ItemRef
			if json.Unmarshal(e.Data, &ref) == nil {
				// A removal names its item; a ref to nothing removes
				// nothing, as in storekit.Tail. Verify reports the count
				// that disagrees.
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

// PlainItems returns just the items of live.
func PlainItems(live []LiveItem) []Item {
	out := make([]Item, len(live))
	for i, l := range live {
		out[i] = l.Item
	}
	return out
}
