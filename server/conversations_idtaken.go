package server

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/recallkit/recall"
)

// takenIDs remembers, per conversation, the ids of its view's items that
// have ids of their own, as of a seq: adding items with ids of their own
// checks them against the entries written since, not against the whole
// view read again, so a request costs what was written since the last
// one this process saw, however long the conversation. A conversation is
// read whole the first time this process checks ids in it (or after
// items left its view: a pop, a removal, a compaction).
//
// It holds about maxTakenIDs ids and starts afresh when it holds more.
type takenIDs struct {
	mu sync.Mutex
	m  map[recall.Key]*convIDs
	n  atomic.Int64 // ids held, across conversations
}

// convIDs are the own ids of one conversation's view as of seq last.
type convIDs struct {
	mu   sync.Mutex // held by the request that checks and appends
	last int64
	ids  map[string]bool // nil until read
}

// maxTakenIDs bounds takenIDs: about 50 bytes an id.
const maxTakenIDs = 1 << 20

// get returns the ids kept for key, a new empty set when none are.
func (t *takenIDs) get(key recall.Key) *convIDs {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || t.n.Load() > maxTakenIDs {
		t.m = map[recall.Key]*convIDs{}
		t.n.Store(0)
	}
	v := t.m[key]
	if v == nil {
		v = &convIDs{}
		t.m[key] = v
	}
	return v
}

// drop forgets key's ids (the conversation is gone).
func (t *takenIDs) drop(key recall.Key) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, key)
}

// catchUp brings v up to the conversation's last entry: the view read
// whole when v is empty, the entries since v.last otherwise. The caller
// holds v.mu.
func (t *takenIDs) catchUp(ctx context.Context, st recall.Store, key recall.Key, v *convIDs) error {
	if v.ids != nil {
		es, err := st.Entries(ctx, key, v.last, 0)
		if err != nil {
			return notFoundAs(err, key)
		}
		for _, e := range es {
			v.last = e.Seq
			switch e.Kind {
			case recall.KindItem:
				if it, ok := e.Item(); ok {
					t.add(v, headOf(it).ownID())
				}
			case recall.KindPop, recall.KindRemove, recall.KindClear, recall.KindCompaction:
				v.ids = nil // the view lost items: read it again
			}
		}
		if v.ids != nil {
			return nil
		}
	}
	live, at, err := st.Items(ctx, key, 0)
	if err != nil {
		return err
	}
	if at == 0 {
		return conversationNotFound(key.Session)
	}
	t.n.Add(-int64(len(v.ids)))
	v.ids, v.last = map[string]bool{}, at
	for _, l := range live {
		t.add(v, headOf(l.Item).ownID())
	}
	return nil
}

// add notes id, when it is one, among v's. The caller holds v.mu.
func (t *takenIDs) add(v *convIDs, id string) {
	if id != "" && v.ids != nil && !v.ids[id] {
		v.ids[id] = true
		t.n.Add(1)
	}
}
