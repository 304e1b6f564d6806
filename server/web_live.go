package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// Live updates of an open session page, as server-sent events.
//
// One poller per session in this process (web_watch.go), shared by every
// page open on it, asks the store for the session's Stat (its LastSeq)
// every livePoll, so a write through any replica shows within a second.
// When the seq moved, each page's stream reads only the entries it has
// not sent, and sends:
//
//	event: items   data: the new items' HTML (as the page renders them)
//	event: meta    data: {"title","items","last_seq"} as JSON
//	event: reload  the view changed other than by appending (an item
//	               removed, a compaction, a clear): the page reloads
//	event: gone    the session was deleted
//	event: stalled data: why live updates stopped for now (the store
//	               failed); the poller goes on asking, and an items or
//	               meta event says they are back
//
// Each event's id is the seq it brings the page to, so a reconnecting
// EventSource (Last-Event-ID) goes on where it was. A stream ends after
// liveMax (the browser reconnects), so it never outlives the server's
// write timeout nor holds a graceful shutdown for long.

// Timing of live updates.
var (
	livePoll      = 300 * time.Millisecond
	liveMax       = 2 * time.Minute
	liveHeartbeat = 15 * time.Second
)

// liveStalled is the data of a stalled event.
const liveStalled = "Live updates stopped: the session could not be read. Trying again."

// liveBatch bounds the entries read at once; a stream behind by more
// reads again at once.
const liveBatch = 200

func (s *Server) webEvents(w http.ResponseWriter, r *http.Request) error {
	m, err := s.sessionMeta(r)
	if err != nil {
		return err
	}
	key, ctx := m.Key, r.Context()
	after := m.LastSeq
	for _, v := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n <= m.LastSeq {
			after = n
			break
		}
	}
	changed, state, stop, ok := s.watches.subscribe(key)
	if !ok {
		return pageError(http.StatusServiceUnavailable, "The server is shutting down.")
	}
	defer stop()
	csrf := s.csrfToken(w, r) // for the fork forms of new items; before the head is written
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(liveMax + 10*time.Second))
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 1000\n\n")
	_ = rc.Flush()

	st := liveStream{s: s, w: w, key: key, csrf: csrf, after: after}
	beat := time.NewTicker(liveHeartbeat)
	defer beat.Stop()
	end := time.After(liveMax)
	failing := false // an error event was sent and nothing since
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-end:
			return nil
		case <-beat.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			_ = rc.Flush()
			continue
		case <-changed:
		}
		m, seen, err := state()
		switch {
		case !seen:
			continue
		case errors.Is(err, recall.ErrNotFound):
			writeEvent(w, "gone", "", "deleted")
			_ = rc.Flush()
			return nil
		case err != nil:
			if !failing {
				writeEvent(w, "stalled", "", liveStalled)
				_ = rc.Flush()
				failing = true
			}
			continue
		}
		more, err := st.send(ctx, m, failing)
		if err != nil {
			if ctx.Err() == nil && !failing {
				s.log.WarnContext(ctx, "web: live update", "session", key.Session, "error", err)
				writeEvent(w, "stalled", "", liveStalled)
				failing = true
			}
			_ = rc.Flush()
			continue
		}
		failing = false
		_ = rc.Flush()
		if !more {
			return nil // the page reloads
		}
	}
}

// liveStream is what one page's stream has sent.
type liveStream struct {
	s     *Server
	w     http.ResponseWriter
	key   recall.Key
	csrf  string
	after int64 // the seq the page is at
}

// send brings the page from its seq to m's: items and meta events, or a
// reload (more is then false: the stream ends). A page already at m's seq
// gets a meta event only when force is set (after an error event, to say
// updates are back).
func (st *liveStream) send(ctx context.Context, m recall.Meta, force bool) (more bool, err error) {
	if st.after >= m.LastSeq && !force {
		return true, nil
	}
	for st.after < m.LastSeq {
		es, err := st.s.store.Entries(ctx, st.key, st.after, liveBatch)
		if err != nil {
			return true, err
		}
		if len(es) == 0 {
			break // removed since: the next Stat says so
		}
		var items bytes.Buffer
		for _, e := range es {
			switch e.Kind {
			case recall.KindItem:
				if it, ok := e.Item(); ok {
					wi := renderItem(recall.LiveItem{Ref: recall.ItemRef{Seq: e.Seq}, Item: it})
					if err := webTemplates.ExecuteTemplate(&items, "item", itemCtx{wi, st.key.Session, st.csrf}); err != nil {
						st.s.log.ErrorContext(ctx, "web: render", "error", err)
					}
				}
			case recall.KindPop, recall.KindRemove, recall.KindClear, recall.KindCompaction:
				writeEvent(st.w, "reload", strconv.FormatInt(e.Seq, 10), "changed")
				return false, nil
			}
		}
		st.after = es[len(es)-1].Seq
		if items.Len() > 0 {
			writeEvent(st.w, "items", strconv.FormatInt(st.after, 10), items.String())
		}
	}
	meta, _ := json.Marshal(map[string]any{"title": titleOr(m), "items": m.ItemCount, "last_seq": st.after})
	writeEvent(st.w, "meta", strconv.FormatInt(st.after, 10), string(meta))
	return true, nil
}

// writeEvent writes one server-sent event; data may span lines.
func writeEvent(w http.ResponseWriter, event, id, data string) {
	var b strings.Builder
	b.WriteString("event: " + event + "\n")
	if id != "" {
		b.WriteString("id: " + id + "\n")
	}
	for _, line := range strings.Split(strings.ReplaceAll(data, "\r", ""), "\n") {
		b.WriteString("data: " + line + "\n")
	}
	b.WriteString("\n")
	_, _ = w.Write([]byte(b.String()))
}
