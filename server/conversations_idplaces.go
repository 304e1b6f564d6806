package server

import (
	"slices"
	"sync"

	"github.com/recallkit/recall"
)

// idPlaces remembers where the items with ids of their own that this
// process answered with sit in their conversation's view. A client pages
// with the last id of the page it was just sent, and an item's own id
// says nothing of its place: without this, finding it would read the view
// back from the newest item, which makes paging through a long
// conversation quadratic. A place is only a hint: the item there is read
// (one item) and its id compared before the place is used, so a place made
// stale by a removal, or never known to this process (another replica
// answered the page), costs the read back and nothing else.
//
// It holds at most maxIDPlaces places and starts afresh when full: a
// client that pages on is remembered again by its next page.
type idPlaces struct {
	mu sync.Mutex
	m  map[idPlace]recall.ItemRef
}

type idPlace struct {
	key recall.Key
	id  string
}

// maxIDPlaces bounds idPlaces: about 100 bytes a place.
const maxIDPlaces = 1 << 16

// note remembers the places of the items with own ids among live.
// A page without such items (the usual case for conversations built from
// plain messages) does not take the lock.
func (p *idPlaces) note(key recall.Key, live []recall.LiveItem) {
	var ids []string
	for _, l := range live {
		ids = append(ids, headOf(l.Item).ownID())
	}
	if !slices.ContainsFunc(ids, func(id string) bool { return id != "" }) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, id := range ids {
		if id == "" {
			continue
		}
		if p.m == nil || len(p.m) >= maxIDPlaces {
			p.m = make(map[idPlace]recall.ItemRef)
		}
		p.m[idPlace{key, id}] = live[i].Ref
	}
}

// place returns the place remembered for the item of key with own id id.
func (p *idPlaces) place(key recall.Key, id string) (recall.ItemRef, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ref, ok := p.m[idPlace{key, id}]
	return ref, ok
}
