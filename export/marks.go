package export

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/jsonvalid"
)

// marks is what a first pass over a log learns that the second, which
// renders it, needs before it comes to the entries that tell it: which
// items later entries remove, where the view was last reset, and how
// many items each compaction holds. It is small: a few words per
// removal, per compaction and per damaged item, nothing per item.
type marks struct {
	// removed maps every item some pop or remove entry names to the
	// seq of the entry that takes it out of the view (the first naming
	// it after it was written, as recall.Replay applies them), or to
	// never when only entries before it name it.
	removed map[recall.ItemRef]int64
	// compactions are the compaction entries Replay applies, in order.
	compactions []compactionMark
	// lastReset is the seq of the last clear or compaction Replay
	// applies, 0 if none: the final view holds nothing from before it.
	lastReset int64
	// invalid are the item entries (objects, so in the view) whose
	// bytes are not valid JSON, when the pass was asked to look.
	invalid []recall.ItemRef
}

// compactionMark is one compaction entry: its seq and how many items it
// holds.
type compactionMark struct {
	seq   int64
	items int
}

// never is the seq of a removal that removes nothing.
const never = math.MaxInt64

// scan reads r's log once and returns its marks. With checkJSON set it
// also notes the items whose bytes are not valid JSON.
func scan(ctx context.Context, r *record, checkJSON bool) (*marks, error) {
	mk := &marks{removed: map[recall.ItemRef]int64{}}
	err := r.each(ctx, func(e recall.Entry) error {
		switch e.Kind {
		case recall.KindItem:
			if it, ok := e.Item(); ok && checkJSON && !jsonvalid.Valid(it) {
				mk.invalid = append(mk.invalid, recall.ItemRef{Seq: e.Seq})
			}
		case recall.KindPop, recall.KindRemove:
			var ref recall.ItemRef
			if json.Unmarshal(e.Data, &ref) == nil {
				mk.remove(ref, e.Seq)
			}
		case recall.KindClear:
			mk.lastReset = e.Seq
		case recall.KindCompaction:
			// The same test as Replay's: a compaction it applies.
			var c recall.Compaction
			if json.Unmarshal(e.Data, &c) == nil {
				mk.compactions = append(mk.compactions, compactionMark{seq: e.Seq, items: len(c.Items)})
				mk.lastReset = e.Seq
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return mk, nil
}

// remove notes that the entry at seq at names ref. Only a removal after
// the item was written can take it out of the view, and only the first
// such does: the item is gone after it.
func (mk *marks) remove(ref recall.ItemRef, at int64) {
	cur, seen := mk.removed[ref]
	switch {
	case at > ref.Seq && (!seen || cur == never):
		mk.removed[ref] = at
	case !seen:
		mk.removed[ref] = never
	}
}

// named reports whether any removal names ref: the readable formats mark
// such an item "removed later".
func (mk *marks) named(ref recall.ItemRef) bool {
	_, ok := mk.removed[ref]
	return ok
}

// inViewAt reports whether ref, once in the view, is still in it just
// before the entry at seq at: no removal took it out before then.
func (mk *marks) inViewAt(ref recall.ItemRef, at int64) bool {
	r, ok := mk.removed[ref]
	return !ok || r > at
}

// inFinalView reports whether the item ref, written at or after the last
// reset, is in the view at the end of the log.
func (mk *marks) inFinalView(ref recall.ItemRef) bool {
	return mk.inViewAt(ref, never-1)
}

// checkJSON returns the error JSON reports for the first item of the
// final view that is not valid JSON, or nil.
func (mk *marks) checkJSON(key recall.Key) error {
	for _, ref := range mk.invalid {
		if ref.Seq > mk.lastReset && mk.inFinalView(ref) {
			return fmt.Errorf("export: json %s: item %d.%d: %w: not valid JSON", key, ref.Seq, ref.Index, recall.ErrCorrupt)
		}
	}
	return nil
}

// viewTail holds the newest items of the view, as many as the next
// compaction holds: all a compaction's note needs to count the items it
// kept verbatim (keptCopies), without the whole view.
type viewTail struct {
	items []recall.Item // a ring once full
	start int           // where the oldest is once full
	size  int
}

// reset empties the tail and makes it hold size items.
func (t *viewTail) reset(size int) {
	clear(t.items)
	t.items, t.start, t.size = t.items[:0], 0, size
}

// push adds the view's newest item, dropping the oldest when full.
func (t *viewTail) push(it recall.Item) {
	switch {
	case t.size == 0:
	case len(t.items) < t.size:
		t.items = append(t.items, it)
	default:
		t.items[t.start] = it
		t.start = (t.start + 1) % t.size
	}
}

// view returns the items held, oldest first.
func (t *viewTail) view() []recall.Item {
	return append(t.items[t.start:len(t.items):len(t.items)], t.items[:t.start]...)
}
