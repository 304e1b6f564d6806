package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/recallkit/recall"
)

// watches runs one poller per session that open pages watch, in this
// process, however many pages watch it: every livePoll it asks the store
// for the session's Stat (one cheap call) and tells the pages when the
// answer changed. A thousand tabs on ten sessions cost the store ten
// calls a poll, not a thousand. A poller stops when its last page goes,
// and with the server (Server.Close).
type watches struct {
	s  *Server
	mu sync.Mutex
	w  map[recall.Key]*watch
}

// watch is one session's poller and the pages watching it. Its fields
// but kick are guarded by watches.mu.
type watch struct {
	subs map[chan struct{}]bool
	meta recall.Meta // the last Stat's answer
	err  error       // and its error: ErrNotFound when the session is gone
	seen bool        // a Stat has answered
	kick chan struct{}
}

// subscribe starts watching key. Each time the poller's view of the
// session changes, the returned channel receives a signal (coalesced: a
// slow page gets one for several changes); state reads that view (seen:
// the store has answered once). stop ends the subscription. ok is false
// when the server is closing.
func (ws *watches) subscribe(key recall.Key) (changed <-chan struct{}, state func() (recall.Meta, bool, error), stop func(), ok bool) {
	ch := make(chan struct{}, 1)
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.w == nil {
		ws.w = map[recall.Key]*watch{}
	}
	w := ws.w[key]
	if w == nil {
		w = &watch{subs: map[chan struct{}]bool{}, kick: make(chan struct{}, 1)}
		if !ws.s.background(func(ctx context.Context) { ws.poll(ctx, key, w) }) {
			return nil, nil, nil, false
		}
		ws.w[key] = w
	}
	w.subs[ch] = true
	state = func() (recall.Meta, bool, error) {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		return w.meta, w.seen, w.err
	}
	stop = func() {
		ws.mu.Lock()
		defer ws.mu.Unlock()
		delete(w.subs, ch)
	}
	return ch, state, stop, true
}

// poll is key's poller: it asks the store every livePoll (or when kicked)
// until no page watches the session, or the server closes.
func (ws *watches) poll(ctx context.Context, key recall.Key, w *watch) {
	tick := time.NewTicker(livePoll)
	defer tick.Stop()
	defer func() { // the server closed: no page may subscribe to this one
		ws.mu.Lock()
		if ws.w[key] == w {
			delete(ws.w, key)
		}
		ws.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-w.kick:
		}
		ws.mu.Lock()
		if len(w.subs) == 0 {
			delete(ws.w, key) // a new page starts a new poller
			ws.mu.Unlock()
			return
		}
		ws.mu.Unlock()
		m, err := ws.s.stat(ctx, key)
		if ctx.Err() != nil {
			return
		}
		ws.mu.Lock()
		if changed := !w.seen || m.LastSeq != w.meta.LastSeq || !sameError(err, w.err); changed {
			if err != nil && !errors.Is(err, recall.ErrNotFound) && !sameError(err, w.err) {
				ws.s.log.WarnContext(ctx, "web: live updates: reading the session failed; pages watching it are told, and it is read again every poll",
					"session", key.Session, "error", err)
			}
			w.meta, w.err, w.seen = m, err, true
			for ch := range w.subs {
				select {
				case ch <- struct{}{}:
				default: // a signal is already waiting
				}
			}
		}
		ws.mu.Unlock()
	}
}

// sameError says whether two Stat errors are the same for a page: both
// nil, both "gone", or both failures with the same text.
func sameError(a, b error) bool {
	switch {
	case a == nil || b == nil:
		return a == b
	case errors.Is(a, recall.ErrNotFound) || errors.Is(b, recall.ErrNotFound):
		return errors.Is(a, recall.ErrNotFound) && errors.Is(b, recall.ErrNotFound)
	default:
		return a.Error() == b.Error()
	}
}
