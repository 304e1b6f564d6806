package server

import (
	"bytes"
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
// The handler polls the store's Stat (the session's LastSeq) every
// livePoll while the page is open, so a write through any replica shows
// within a second; when the seq moved it reads only the new entries and
// sends:
//
//	event: items   data: the new items' HTML (as the page renders them)
//	event: meta    data: {"title","items","last_seq"} as JSON
//	event: reload  the view changed other than by appending (an item
//	               removed, a compaction, a clear): the page reloads
//	event: gone    the session was deleted
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

// liveBatch bounds the entries read at one poll; more are read at the
// next.
const liveBatch = 200

func (s *Server) webEvents(w http.ResponseWriter, r *http.Request) {
	key, err := sessionKey(r)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	ctx := r.Context()
	m, err := s.store.Stat(ctx, key)
	if err != nil {
		s.webError(w, r, sessionErr(err, key))
		return
	}
	after := m.LastSeq
	for _, v := range []string{r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after")} {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 && n <= m.LastSeq {
			after = n
			break
		}
	}
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

	poll := time.NewTicker(livePoll)
	defer poll.Stop()
	end := time.After(liveMax)
	beat := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-end:
			return
		case <-poll.C:
		}
		m, err := s.store.Stat(ctx, key)
		if errors.Is(err, recall.ErrNotFound) {
			writeEvent(w, "gone", "", "deleted")
			_ = rc.Flush()
			return
		}
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "web: live update", "error", err)
			}
			return
		}
		if m.LastSeq <= after {
			if time.Since(beat) > liveHeartbeat {
				fmt.Fprint(w, ": keep-alive\n\n")
				_ = rc.Flush()
				beat = time.Now()
			}
			continue
		}
		es, err := s.store.Entries(ctx, key, after, liveBatch)
		if err != nil || len(es) == 0 {
			continue
		}
		var items bytes.Buffer
		reload := false
		for _, e := range es {
			switch e.Kind {
			case recall.KindItem:
				if it, ok := recall.ItemOf(e); ok {
					wi := renderItem(recall.LiveItem{Ref: recall.ItemRef{Seq: e.Seq}, Item: it})
					if err := webTemplates.ExecuteTemplate(&items, "item", itemCtx{wi, key.Session, csrf}); err != nil {
						s.log.ErrorContext(ctx, "web: render", "error", err)
					}
				}
			case recall.KindPop, recall.KindRemove, recall.KindClear, recall.KindCompaction:
				reload = true
			}
		}
		after = es[len(es)-1].Seq
		id := strconv.FormatInt(after, 10)
		if reload {
			writeEvent(w, "reload", id, "changed")
			_ = rc.Flush()
			return
		}
		if items.Len() > 0 {
			writeEvent(w, "items", id, items.String())
		}
		meta, _ := json.Marshal(map[string]any{"title": titleOr(m), "items": m.ItemCount, "last_seq": after})
		writeEvent(w, "meta", id, string(meta))
		_ = rc.Flush()
		beat = time.Now()
	}
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
