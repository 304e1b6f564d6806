package storekit

import (
	"cmp"
	"encoding/json"
	"iter"
	"math"
	"slices"

	"github.com/recallkit/recall"
)

// PageReader is what a store gives ReadPage to read one page of a
// session's view by position: three reads of one consistent snapshot of
// its log, each yielding entries that are not retained after the page is
// built (the items are cloned).
type PageReader struct {
	// Controls yields the log's pop, remove, clear and compaction entries
	// (other kinds are skipped if yielded), from the newest down. ReadPage
	// stops at the first clear or usable compaction: the start of the
	// view. A store answers it from an index of those entries, so a page
	// costs O(page + the view's pops), not O(log).
	Controls iter.Seq2[recall.Entry, error]
	// Backward yields the entries with Seq <= atMost, from the highest
	// down.
	Backward func(atMost int64) iter.Seq2[recall.Entry, error]
	// Forward yields the entries with Seq >= atLeast, in Seq order.
	Forward func(atLeast int64) iter.Seq2[recall.Entry, error]
}

// SlicePages is the PageReader of a log held in memory, es, in Seq order:
// a page is found by binary search on the seqs, and the controls by a
// walk back from the end.
func SlicePages(es []recall.Entry) PageReader {
	at := func(seq int64) int {
		i, _ := slices.BinarySearchFunc(es, seq, func(e recall.Entry, seq int64) int { return cmp.Compare(e.Seq, seq) })
		return i
	}
	return PageReader{
		Controls: func(yield func(recall.Entry, error) bool) {
			for i := len(es) - 1; i >= 0; i-- {
				if es[i].Kind != recall.KindItem && !yield(es[i], nil) {
					return
				}
			}
		},
		Backward: func(atMost int64) iter.Seq2[recall.Entry, error] {
			if atMost < math.MaxInt64 {
				atMost++
			}
			return Backwards(es[:at(atMost)])
		},
		Forward: func(atLeast int64) iter.Seq2[recall.Entry, error] {
			return func(yield func(recall.Entry, error) bool) {
				for _, e := range es[at(atLeast):] {
					if !yield(e, nil) {
						return
					}
				}
			}
		},
	}
}

// ReadPage returns the page of the view that opts selects (see
// recall.StoreSession.ReadItems), and whether more items follow it. It agrees with
// recall.StoreSession.ReadItems over recall.Replay's view; the conformance suite checks
// that.
func ReadPage(r PageReader, opts recall.ItemPageOptions) ([]recall.LiveItem, bool, error) {
	v, err := readControls(r.Controls)
	if err != nil {
		return nil, false, err
	}
	p := pager{view: v, opts: opts}
	if opts.Oldest {
		err = p.forward(r.Forward)
	} else {
		err = p.backward(r.Backward)
	}
	if err != nil {
		return nil, false, err
	}
	if opts.Limit > 0 && len(p.out) > opts.Limit {
		return p.out[:opts.Limit], true, nil
	}
	return p.out, false, nil
}

// viewControls is what the controls of a view tell a page: where the view
// starts, with what items, and which items were removed.
type viewControls struct {
	base      int64         // the seq of the clear or compaction the view starts at; 0 for none
	baseItems []recall.Item // the compaction's items
	popped    map[recall.ItemRef]int64
}

func readControls(controls iter.Seq2[recall.Entry, error]) (viewControls, error) {
	v := viewControls{popped: map[recall.ItemRef]int64{}}
	for e, err := range controls {
		if err != nil {
			return v, err
		}
		switch e.Kind {
		case recall.KindPop, recall.KindRemove:
			var ref recall.ItemRef
			if json.Unmarshal(e.Data, &ref) == nil {
				v.popped[ref] = max(v.popped[ref], e.Seq)
			}
		case recall.KindClear:
			v.base = e.Seq
			return v, nil
		case recall.KindCompaction:
			var c recall.Compaction
			if json.Unmarshal(e.Data, &c) == nil {
				v.base, v.baseItems = e.Seq, c.Items
				return v, nil
			}
		}
	}
	return v, nil
}

// live reports whether the item at ref is in the view: a removal counts
// for the items before it only, as in recall.Replay.
func (v *viewControls) live(ref recall.ItemRef) bool {
	by, ok := v.popped[ref]
	return !ok || by < ref.Seq
}

type pager struct {
	view viewControls
	opts recall.ItemPageOptions
	out  []recall.LiveItem
}

func (p *pager) full() bool { return p.opts.Limit > 0 && len(p.out) > p.opts.Limit }

// take adds the item at ref when the page holds it.
func (p *pager) take(ref recall.ItemRef, it recall.Item) {
	after := p.opts.After
	if after != (recall.ItemRef{}) {
		c := ref.Compare(after)
		if p.opts.Oldest && c <= 0 || !p.opts.Oldest && c >= 0 {
			return
		}
	}
	if p.view.live(ref) {
		p.out = append(p.out, recall.LiveItem{Ref: ref, Item: recall.Item(cloneBytes(it))})
	}
}

// backward fills a newest-first page: the item entries at or below the
// cursor's seq down to the start of the view, then the compaction's items.
func (p *pager) backward(entries func(int64) iter.Seq2[recall.Entry, error]) error {
	from := int64(math.MaxInt64)
	if p.opts.After != (recall.ItemRef{}) {
		from = p.opts.After.Seq
	}
	if from > p.view.base {
		for e, err := range entries(from) {
			if err != nil {
				return err
			}
			if e.Seq <= p.view.base {
				break
			}
			if e.Kind == recall.KindItem {
				if it, ok := e.Item(); ok {
					p.take(recall.ItemRef{Seq: e.Seq}, it)
				}
			}
			if p.full() {
				return nil
			}
		}
	}
	for i := len(p.view.baseItems) - 1; i >= 0 && !p.full(); i-- {
		p.take(recall.ItemRef{Seq: p.view.base, Index: i}, p.view.baseItems[i])
	}
	return nil
}

// forward fills an oldest-first page: the compaction's items, then the
// item entries after the start of the view, from the cursor's seq on.
func (p *pager) forward(entries func(int64) iter.Seq2[recall.Entry, error]) error {
	for i := 0; i < len(p.view.baseItems) && !p.full(); i++ {
		p.take(recall.ItemRef{Seq: p.view.base, Index: i}, p.view.baseItems[i])
	}
	from := max(p.view.base+1, p.opts.After.Seq)
	for e, err := range entries(from) {
		if err != nil {
			return err
		}
		if e.Kind == recall.KindItem {
			if it, ok := e.Item(); ok {
				p.take(recall.ItemRef{Seq: e.Seq}, it)
			}
		}
		if p.full() {
			return nil
		}
	}
	return nil
}

func cloneBytes(b []byte) []byte { return append([]byte(nil), b...) }
