package recall

import (
	"cmp"
	"context"
	"slices"
)

// ItemPageOptions selects one page of a session's view for ReadItems.
type ItemPageOptions struct {
	// Limit is the most items the page holds; <= 0 means no limit.
	Limit int
	// Oldest pages from the oldest item of the view to the newest. By
	// default a page starts at the newest item and goes back.
	Oldest bool
	// After is the place the page starts after, in the page's order: with
	// the default order the page holds items older than After, with
	// Oldest items newer than it. The zero ItemRef starts at the newest
	// (or, with Oldest, the oldest) item. A ref whose item is no longer in
	// the view still marks its place in the order, so a reader paging
	// through a session while items are removed goes on where it was.
	After ItemRef
}

// ItemPage is one page of a session's view, read by ReadItems.
type ItemPage struct {
	// Items are in the page's order: newest first, or with
	// ItemPageOptions.Oldest oldest first. They are copies.
	Items []LiveItem
	// More reports that the view holds more items past the page's last.
	More bool
	// LastSeq is the LastSeq of the log the page was read from; 0 for a
	// session that does not exist, which has no items.
	LastSeq int64
}

// itemPager is storekit.ItemPager, the optional ability ReadItems uses
// when a store has it.
type itemPager interface {
	ReadItems(ctx context.Context, key Key, opts ItemPageOptions) (ItemPage, error)
}

// ReadItems returns one page of the view of key, as opts selects, read as
// one consistent snapshot. A session that does not exist has no items:
// ReadItems returns an empty page, LastSeq 0 and no error.
//
// A store that implements storekit.ItemPager (found through wrappers by As) reads
// the page itself. Otherwise ReadItems reads the newest Limit+1 items with
// Items when that covers the page (newest first from the newest item) and
// the whole view otherwise.
func (s *StoreSession) ReadItems(ctx context.Context, opts ItemPageOptions) (ItemPage, error) {
	st, key := s.store, s.key
	if p, ok := As[itemPager](st); ok {
		return p.ReadItems(ctx, key, opts)
	}
	n := 0
	if !opts.Oldest && opts.After == (ItemRef{}) && opts.Limit > 0 {
		n = opts.Limit + 1
	}
	live, last, err := st.Items(ctx, key, n)
	if err != nil {
		return ItemPage{}, err
	}
	page := pageOf(live, opts)
	page.LastSeq = last
	return page, nil
}

// pageOf cuts the page opts selects out of live, a whole view in order (or,
// for a newest-first page from the newest item, the view's newest items).
func pageOf(live []LiveItem, opts ItemPageOptions) ItemPage {
	var window []LiveItem
	if opts.Oldest {
		from := 0
		if opts.After != (ItemRef{}) {
			from, _ = slices.BinarySearchFunc(live, opts.After, func(l LiveItem, r ItemRef) int { return l.Ref.Compare(r) })
			if from < len(live) && live[from].Ref == opts.After {
				from++
			}
		}
		window = live[from:]
	} else {
		to := len(live)
		if opts.After != (ItemRef{}) {
			to, _ = slices.BinarySearchFunc(live, opts.After, func(l LiveItem, r ItemRef) int { return l.Ref.Compare(r) })
		}
		window = slices.Clone(live[:to])
		slices.Reverse(window)
	}
	page := ItemPage{Items: window}
	if opts.Limit > 0 && len(window) > opts.Limit {
		page.Items, page.More = window[:opts.Limit], true
	}
	if opts.Oldest {
		page.Items = slices.Clone(page.Items)
	}
	return page
}

// Compare orders r and o as a view does: by seq, then by index. It
// returns -1, 0 or +1.
func (r ItemRef) Compare(o ItemRef) int {
	if c := cmp.Compare(r.Seq, o.Seq); c != 0 {
		return c
	}
	return cmp.Compare(r.Index, o.Index)
}
