package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Rewind and redo move a session's view back to an item and forward again
// without taking anything out of its log, the way an editor's undo and
// redo move through a document.
//
// A rewind is one batch: a remove entry for each item after the one
// rewound to, closed by a KindRewind entry that counts them. A redo is
// one batch too: item entries holding the bytes of the items the last
// rewind removed, in their order, closed by a KindRedo entry naming that
// rewind. Both are made of the entries every store already keeps a view
// of, so every store supports them; the two marker kinds, which views
// skip, only let Redo find what to bring back. Any other change of the
// view (a new item, a pop, a clear, a compaction) ends what can be
// redone, as typing does in an editor.

// rewindMark is the payload of a KindRewind entry.
type rewindMark struct {
	// To is the item the view was set back to; the zero ItemRef for an
	// empty view.
	To ItemRef `json:"to"`
	// Items is how many remove entries, just before this one in its
	// batch, the rewind wrote.
	Items int `json:"items"`
}

// redoMark is the payload of a KindRedo entry.
type redoMark struct {
	// Rewind is the seq of the KindRewind entry this redo undid.
	Rewind int64 `json:"rewind"`
	// Items is how many item entries, just before this one in its batch,
	// the redo wrote.
	Items int `json:"items"`
}

// rewindPage is how many items Rewind reads of the view at a time.
const rewindPage = 1000

// Rewind sets the session's view back to just after the item to, which
// must be in the view (the zero ItemRef empties the view), by removing
// every item after it. Nothing leaves the log, and Redo brings the items
// back until the view changes otherwise. It returns how many items left
// the view; 0, and nothing written, when to is the newest item. The check
// and the write are one atomic step, retried when another writer changed
// the session meanwhile. A session that does not exist, or a ref that is
// not in its view, is ErrNotFound.
func (s *StoreSession) Rewind(ctx context.Context, to ItemRef) (int, error) {
	for range maxGuardRetries {
		n, err := s.rewind(ctx, to)
		if !errors.Is(err, ErrConflict) {
			return n, err
		}
	}
	return 0, fmt.Errorf("recall: rewind %s: %w: the session kept changing", s.key, ErrConflict)
}

func (s *StoreSession) rewind(ctx context.Context, to ItemRef) (int, error) {
	last := int64(-1)
	if to != (ItemRef{}) {
		// The newest item up to and including to is to itself when it
		// is in the view.
		p, err := s.ReadItems(ctx, ItemPageOptions{Limit: 1, After: ItemRef{Seq: to.Seq, Index: to.Index + 1}})
		if err != nil {
			return 0, err
		}
		if len(p.Items) == 0 || p.Items[0].Ref != to {
			return 0, fmt.Errorf("recall: rewind %s to item %s: %w: it is not in the session's view", s.key, to, ErrNotFound)
		}
		last = p.LastSeq
	}
	var removes []Entry
	for after := to; ; {
		p, err := s.ReadItems(ctx, ItemPageOptions{Oldest: true, After: after, Limit: rewindPage})
		if err != nil {
			return 0, err
		}
		if last >= 0 && p.LastSeq != last {
			return 0, ErrConflict // a write between two reads: read again
		}
		last = p.LastSeq
		for _, l := range p.Items {
			removes = append(removes, NewEntry(KindRemove, l.Ref))
		}
		if !p.More {
			break
		}
		after = p.Items[len(p.Items)-1].Ref
	}
	if last == 0 {
		return 0, fmt.Errorf("recall: rewind %s: %w", s.key, ErrNotFound)
	}
	if len(removes) == 0 {
		return 0, nil
	}
	batch := append(removes, NewEntry(KindRewind, rewindMark{To: to, Items: len(removes)}))
	if _, err := s.store.Append(ctx, s.key, IfLastSeq(last), batch...); err != nil {
		return 0, err
	}
	return len(removes), nil
}

// Redo undoes the newest rewind not yet redone, if the view has not
// changed otherwise since: the items it removed come back, in their
// order, as new items at the end of the log. Redo again undoes the rewind
// before it. It returns how many items came back, or ErrNothingToRedo.
// The check and the write are one atomic step, retried when another
// writer changed the session meanwhile.
//
// Redo reads the log back from its end only as far as the rewind it
// undoes.
func (s *StoreSession) Redo(ctx context.Context) (int, error) {
	for range maxGuardRetries {
		n, err := s.redo(ctx)
		if !errors.Is(err, ErrConflict) {
			return n, err
		}
	}
	return 0, fmt.Errorf("recall: redo %s: %w: the session kept changing", s.key, ErrConflict)
}

func (s *StoreSession) redo(ctx context.Context) (int, error) {
	m, err := s.store.Stat(ctx, s.key)
	if err != nil {
		return 0, err
	}
	rw, mark, err := s.lastRewind(ctx, m.LastSeq)
	if err != nil {
		return 0, err
	}
	// The rewind's removes are the entries just before it; the items
	// they name come back in the order the view held them.
	removes, err := s.store.Entries(ctx, s.key, rw-int64(mark.Items)-1, mark.Items)
	if err != nil {
		return 0, err
	}
	refs := make([]ItemRef, 0, len(removes))
	for _, e := range removes {
		var ref ItemRef
		if e.Kind != KindRemove || json.Unmarshal(e.Data, &ref) != nil {
			return 0, fmt.Errorf("recall: redo %s: entry %d is not one of rewind %d's removals: %w", s.key, e.Seq, rw, ErrCorrupt)
		}
		refs = append(refs, ref)
	}
	items, err := s.itemsAt(ctx, refs)
	if err != nil {
		return 0, err
	}
	batch := append(ItemEntries(items...), NewEntry(KindRedo, redoMark{Rewind: rw, Items: len(items)}))
	if _, err := s.store.Append(ctx, s.key, IfLastSeq(m.LastSeq), batch...); err != nil {
		return 0, err
	}
	return len(items), nil
}

// lastRewind finds, reading the log back from seq last, the newest rewind
// not yet redone with no other change of the view after it, and returns
// its seq and payload, or ErrNothingToRedo.
func (s *StoreSession) lastRewind(ctx context.Context, last int64) (int64, rewindMark, error) {
	var (
		redone                 = map[int64]bool{}
		skipItems, skipRemoves int
	)
	for hi, window := last, int64(64); hi > 0; window *= 4 {
		lo := max(1, hi-window+1)
		entries, err := s.store.Entries(ctx, s.key, lo-1, int(hi-lo+1))
		if err != nil {
			return 0, rewindMark{}, err
		}
		for i := len(entries) - 1; i >= 0; i-- {
			e := entries[i]
			switch {
			case e.Kind == KindRedo:
				var r redoMark
				if json.Unmarshal(e.Data, &r) != nil {
					return 0, rewindMark{}, ErrNothingToRedo
				}
				redone[r.Rewind], skipItems = true, skipItems+r.Items
			case e.Kind == KindRewind:
				var r rewindMark
				if json.Unmarshal(e.Data, &r) != nil || r.Items < 1 || int64(r.Items) >= e.Seq {
					return 0, rewindMark{}, ErrNothingToRedo
				}
				if !redone[e.Seq] {
					return e.Seq, r, nil
				}
				skipRemoves += r.Items
			case e.Kind == KindItem && skipItems > 0:
				skipItems--
			case e.Kind == KindRemove && skipRemoves > 0:
				skipRemoves--
			case e.Kind.IsActivity():
				return 0, rewindMark{}, ErrNothingToRedo // the view changed since
			}
		}
		hi = lo - 1
	}
	return 0, rewindMark{}, ErrNothingToRedo
}

// itemsAt returns the items refs name, in the order of refs, which is the
// log's order: reading the log from the first one's entry to the last's.
func (s *StoreSession) itemsAt(ctx context.Context, refs []ItemRef) ([]Item, error) {
	items := make([]Item, 0, len(refs))
	after := refs[0].Seq - 1
	var (
		page []Entry
		err  error
	)
	for _, ref := range refs {
		for len(page) == 0 || page[len(page)-1].Seq < ref.Seq {
			if page, err = s.store.Entries(ctx, s.key, after, rewindPage); err != nil {
				return nil, err
			}
			if len(page) == 0 {
				return nil, fmt.Errorf("recall: redo %s: item %s is past the log's end: %w", s.key, ref, ErrCorrupt)
			}
			after = page[len(page)-1].Seq
		}
		it, ok := itemOf(page, ref)
		if !ok {
			return nil, fmt.Errorf("recall: redo %s: entry %d holds no item %s: %w", s.key, ref.Seq, ref, ErrCorrupt)
		}
		items = append(items, it)
	}
	return items, nil
}

// itemOf returns the item ref names in page, a run of the log that holds
// its entry.
func itemOf(page []Entry, ref ItemRef) (Item, bool) {
	i := int(ref.Seq - page[0].Seq)
	if i < 0 || i >= len(page) || page[i].Seq != ref.Seq {
		return nil, false
	}
	switch e := page[i]; e.Kind {
	case KindItem:
		if ref.Index == 0 {
			return e.Item()
		}
	case KindCompaction:
		var c Compaction
		if json.Unmarshal(e.Data, &c) == nil && ref.Index < len(c.Items) {
			return CloneItems(c.Items[ref.Index : ref.Index+1])[0], true
		}
	}
	return nil, false
}

// String returns the ref as "SEQ", or "SEQ.INDEX" for a compaction's
// item: the form ParseItemRef reads.
func (r ItemRef) String() string {
	if r.Index == 0 {
		return strconv.FormatInt(r.Seq, 10)
	}
	return strconv.FormatInt(r.Seq, 10) + "." + strconv.Itoa(r.Index)
}

// ParseItemRef reads an ItemRef written by ItemRef.String: "SEQ" or
// "SEQ.INDEX", with SEQ at least 1 and INDEX at least 0.
func ParseItemRef(s string) (ItemRef, error) {
	seq, idx, dot := strings.Cut(s, ".")
	n, err := strconv.ParseInt(seq, 10, 64)
	if err != nil || n < 1 {
		return ItemRef{}, fmt.Errorf("recall: item %q: want SEQ or SEQ.INDEX, SEQ from 1: %w", s, ErrInvalidKey)
	}
	r := ItemRef{Seq: n}
	if dot {
		if r.Index, err = strconv.Atoi(idx); err != nil || r.Index < 0 {
			return ItemRef{}, fmt.Errorf("recall: item %q: want SEQ or SEQ.INDEX, INDEX from 0: %w", s, ErrInvalidKey)
		}
	}
	return r, nil
}
