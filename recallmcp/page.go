package recallmcp

import (
	"context"
	"errors"
	"slices"

	"github.com/recallkit/recall"
)

// window is the part of a session's view read_session reads for one page:
// the page asked for, or around an item both its sides. It is read with
// recall.StoreSession.ReadItems, a page by position, so a page costs the page and not
// the session, however long the session is.
type window struct {
	items []recall.LiveItem // oldest first
	// first is the position in the view of items[0], from 1; 0 when the
	// reads could not know it (see positioned).
	first int
	// older and newer report that the view holds items before items[0]
	// and after the last item.
	older, newer bool
	// forward tells which end of the page to keep when it does not fit in
	// a result: the oldest items (reading forwards or around an item), or
	// the newest (reading backwards).
	forward bool
	// target is the index in items of the item read around; -1 otherwise.
	target int
}

// aroundTries bounds how often read_session rereads the two sides of an
// item when the session changed between the reads.
const aroundTries = 3

// newestWindow reads the newest limit items.
func (s *server) newestWindow(ctx context.Context, m recall.Meta, limit int) (window, recall.Meta, error) {
	p, err := recall.NewSession(s.st, m.Key).ReadItems(ctx, recall.ItemPageOptions{Limit: limit})
	if err != nil {
		return window{}, m, err
	}
	m, settled := s.settle(ctx, m, p.LastSeq)
	w := window{items: reversed(p.Items), older: p.More, target: -1}
	w.positioned(!p.More, settled, m, 0)
	return w, m, nil
}

// beforeWindow reads the limit items older than ref, which must be in the
// view. One read does both: newest first from just after ref, its first
// item is ref's own when the view holds it.
func (s *server) beforeWindow(ctx context.Context, m recall.Meta, ref recall.ItemRef, pos, limit int) (window, error) {
	p, err := recall.NewSession(s.st, m.Key).ReadItems(ctx, recall.ItemPageOptions{Limit: limit + 1, After: justAfter(ref)})
	if err != nil {
		return window{}, err
	}
	if len(p.Items) == 0 || p.Items[0].Ref != ref {
		return window{}, errNoItem
	}
	w := window{items: reversed(p.Items[1:]), older: p.More, newer: true, target: -1}
	at := 0
	if pos > 0 {
		at = pos - len(w.items)
	}
	w.positioned(!p.More, false, m, at)
	return w, nil
}

// afterWindow reads the limit items newer than ref, which must be in the
// view.
func (s *server) afterWindow(ctx context.Context, m recall.Meta, ref recall.ItemRef, pos, limit int) (window, recall.Meta, error) {
	if err := s.mustHave(ctx, m.Key, ref); err != nil {
		return window{}, m, err
	}
	p, err := recall.NewSession(s.st, m.Key).ReadItems(ctx, recall.ItemPageOptions{Limit: limit, Oldest: true, After: ref})
	if err != nil {
		return window{}, m, err
	}
	m, settled := s.settle(ctx, m, p.LastSeq)
	w := window{items: p.Items, older: true, newer: p.More, forward: true, target: -1}
	at := 0
	if pos > 0 {
		at = pos + 1
	}
	w.positioned(false, !p.More && settled, m, at)
	return w, m, nil
}

// aroundWindow reads ref, which must be in the view, and up to limit-1
// items on each side of it: all a page of limit items around it can
// hold, wherever ref falls in it. The two sides are two reads, reread
// (up to aroundTries times) until both come from one state of the log.
func (s *server) aroundWindow(ctx context.Context, m recall.Meta, ref recall.ItemRef, pos, limit int) (window, recall.Meta, error) {
	var older, newer recall.ItemPage
	for try := 1; ; try++ {
		var err error
		// Newest first from just after ref: ref itself, then the older side.
		older, err = recall.NewSession(s.st, m.Key).ReadItems(ctx, recall.ItemPageOptions{Limit: limit, After: justAfter(ref)})
		if err != nil {
			return window{}, m, err
		}
		if len(older.Items) == 0 || older.Items[0].Ref != ref {
			return window{}, m, errNoItem
		}
		// At least one item, so that More tells whether a newer one exists.
		newer, err = recall.NewSession(s.st, m.Key).ReadItems(ctx, recall.ItemPageOptions{Limit: max(1, limit-1), Oldest: true, After: ref})
		if err != nil {
			return window{}, m, err
		}
		if older.LastSeq == newer.LastSeq || try == aroundTries {
			break
		}
	}
	m, settled := s.settle(ctx, m, newer.LastSeq)
	w := window{
		items: append(reversed(older.Items), newer.Items...),
		older: older.More, newer: newer.More, forward: true, target: len(older.Items) - 1,
	}
	at := 0
	if pos > 0 {
		at = pos - w.target
	}
	w.positioned(!older.More, !newer.More && settled && older.LastSeq == newer.LastSeq, m, at)
	return w, m, nil
}

// positioned sets w.first, the position of w.items[0]. It is exact when
// the window was read from an end of the view: from the oldest item
// (fromStart), it starts at 1; up to the newest (toEnd, read from the log
// state m describes), it ends at m.ItemCount. Otherwise it is at, the
// position a cursor handed out by an earlier page carried (0 for none),
// unless that puts the window past the session's end; it stays exact
// unless items older than the cursor's were removed since.
func (w *window) positioned(fromStart, toEnd bool, m recall.Meta, at int) {
	switch {
	case fromStart:
		w.first = 1
	case toEnd:
		w.first = m.ItemCount - len(w.items) + 1
	case at+len(w.items)-1 <= m.ItemCount:
		w.first = at
	}
	if w.first < 1 {
		w.first = 0 // a stale or made-up cursor or count: better no position than a wrong one
	}
}

// settle returns the metadata of the log state a page read at lastSeq
// came from, and whether it has it. The metadata read to find the session
// is usually it; when the session changed since, it is read again (a
// Stat: the session's metadata only), and is it when nothing changed
// after the page was read.
func (s *server) settle(ctx context.Context, m recall.Meta, lastSeq int64) (recall.Meta, bool) {
	if m.LastSeq == lastSeq {
		return m, true
	}
	now, err := s.st.Stat(ctx, m.Key)
	if err != nil {
		return m, false
	}
	return now, now.LastSeq == lastSeq
}

// mustHave returns errNoItem unless the view of key holds the item at
// ref: a page of one item, the newest at or before ref.
func (s *server) mustHave(ctx context.Context, key recall.Key, ref recall.ItemRef) error {
	p, err := recall.NewSession(s.st, key).ReadItems(ctx, recall.ItemPageOptions{Limit: 1, After: justAfter(ref)})
	if err != nil {
		return err
	}
	if len(p.Items) == 0 || p.Items[0].Ref != ref {
		return errNoItem
	}
	return nil
}

// justAfter is the place in a view's order just after ref, before any
// newer item: a newest-first page read after it starts with ref's item.
func justAfter(ref recall.ItemRef) recall.ItemRef {
	return recall.ItemRef{Seq: ref.Seq, Index: ref.Index + 1}
}

// reversed returns a reversed copy of items.
func reversed(items []recall.LiveItem) []recall.LiveItem {
	r := slices.Clone(items)
	slices.Reverse(r)
	return r
}

// errNoItem reports a ref to an item the view does not hold.
var errNoItem = errors.New("no such item")

// readWindow reads the window of the page in asks for: the newest items,
// or those before, after or around the item ref one of its arguments
// names. It returns the session's metadata, read again when the session
// changed since m was read.
func (s *server) readWindow(ctx context.Context, m recall.Meta, in ReadInput, limit int) (window, recall.Meta, error) {
	for _, arg := range []struct {
		name, ref string
	}{{"around", in.Around}, {"before", in.Before}, {"after", in.After}} {
		if arg.ref == "" {
			continue
		}
		ref, pos, ok := parseRef(arg.ref)
		if !ok {
			return window{}, m, badArg("%s %q is not an item ref (refs look like 412 or 400.3)", arg.name, arg.ref)
		}
		var w window
		var err error
		switch arg.name {
		case "around":
			w, m, err = s.aroundWindow(ctx, m, ref, pos, limit)
		case "before":
			w, err = s.beforeWindow(ctx, m, ref, pos, limit)
		default:
			w, m, err = s.afterWindow(ctx, m, ref, pos, limit)
		}
		if errors.Is(err, errNoItem) {
			err = badArg("%s %q: the session has no such item now (it may have been removed or compacted); read the newest items without %s", arg.name, arg.ref, arg.name)
		}
		return w, m, err
	}
	return s.newestWindow(ctx, m, limit)
}
