package server

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
)

// The viewer's session page: a session's newest items, older ones a page
// at a time, its subagents, and the actions on it (export, rename, pin,
// archive, delete).

// sessionData is a session page.
type sessionData struct {
	pageBase
	ID         string
	Meta       recall.Meta
	ForkedFrom string // the origin's id, when it is the reader's
	ForkedAt   string // the origin item's anchor
	Items      []webItem
	Older      string // the URL of the page of older items; "" at the start
	Compaction *compactionView
	Subagents  []subView
	Formats    []export.Format
	LastSeq    int64 // the seq the items were read at: live updates go on from it
}

// compactionView is a compaction boundary: how many items it replaced,
// and the seq of the items that summarize them.
type compactionView struct {
	Replaced int
	Seq      int64
	Strategy string
}

// subView is a subagent record nested in its session's page.
type subView struct {
	Subpath string
	Meta    recall.Meta
	Items   []webItem
	More    int // items not shown
}

func (s *Server) webSession(w http.ResponseWriter, r *http.Request) {
	m, ok := s.webMeta(w, r)
	if !ok {
		return
	}
	key, ctx := m.Key, r.Context()
	var before recall.ItemRef
	if b := r.URL.Query().Get("before"); b != "" {
		var ok bool
		if before, ok = parseRef(b); !ok {
			s.webStatus(w, r, http.StatusBadRequest, "Invalid 'before': expected an item's place such as 12 or 12.3.")
			return
		}
	}
	d, err := s.sessionPage(ctx, key, m, before)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	d.pageBase = s.base(w, r, titleOr(m))
	if r.URL.Query().Get("frag") == "1" {
		s.render(w, r, http.StatusOK, "items", d)
		return
	}
	if before.Seq == 0 {
		if err := s.subagents(ctx, key, &d); err != nil {
			s.webError(w, r, err)
			return
		}
	}
	s.render(w, r, http.StatusOK, "session.html", d)
}

func titleOr(m recall.Meta) string {
	if m.Title != "" {
		return m.Title
	}
	return "Untitled session"
}

// sessionPage reads one page of a session's items: the newest
// webPageSize, or those just before the place before.
func (s *Server) sessionPage(ctx context.Context, key recall.Key, m recall.Meta, before recall.ItemRef) (sessionData, error) {
	d := sessionData{ID: key.Session, Meta: m, Formats: export.Formats}
	if f := m.ForkedFrom; f != nil && f.Key.Project == key.Project && f.Key.IsMain() {
		d.ForkedFrom, d.ForkedAt = f.Key.Session, fmt.Sprintf("i-%d", f.Seq)
	}
	got, err := recall.NewSession(s.store, key).ReadItems(ctx, recall.ItemPageOptions{Limit: webPageSize, After: before})
	if err != nil {
		return d, err
	}
	if before.Seq == 0 {
		d.LastSeq = max(got.LastSeq, m.LastSeq)
	}
	page := got.Items // newest first
	slices.Reverse(page)
	start := !got.More // the page reaches the start of the view
	if len(page) > 0 && !start {
		d.Older = fmt.Sprintf("/s/%s?before=%s", key.Session, refString(page[0].Ref))
	}
	if len(page) > 0 && start {
		es, err := s.store.Entries(ctx, key, page[0].Ref.Seq-1, 1)
		if err != nil {
			return d, err
		}
		var c recall.Compaction
		if len(es) == 1 && es[0].Kind == recall.KindCompaction && json.Unmarshal(es[0].Data, &c) == nil {
			d.Compaction = &compactionView{Replaced: c.Replaced, Seq: es[0].Seq, Strategy: c.Strategy}
		}
	}
	for _, l := range page {
		d.Items = append(d.Items, renderItem(l))
	}
	return d, nil
}

// subagents nests the session's subagent records, each with its newest
// items.
func (s *Server) subagents(ctx context.Context, key recall.Key, d *sessionData) error {
	page, err := s.store.List(ctx, key.Project, recall.ListOptions{Parent: key.Session, Limit: webSubagents, IncludeArchived: true})
	if err != nil {
		return err
	}
	for _, m := range page.Sessions {
		live, _, err := s.store.Items(ctx, m.Key, webSubItems)
		if err != nil {
			return err
		}
		sv := subView{Subpath: m.Key.Subpath, Meta: m, More: max(0, m.ItemCount-len(live))}
		for _, l := range live {
			sv.Items = append(sv.Items, renderItem(l))
		}
		d.Subagents = append(d.Subagents, sv)
	}
	return nil
}

func (s *Server) webConfirmDelete(w http.ResponseWriter, r *http.Request) {
	m, ok := s.webMeta(w, r)
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, "delete.html", sessionData{pageBase: s.base(w, r, "Delete "+titleOr(m)), ID: m.Key.Session, Meta: m})
}

func (s *Server) webExport(w http.ResponseWriter, r *http.Request) {
	key, err := sessionKey(r)
	if err != nil {
		s.webError(w, r, err)
		return
	}
	format := r.URL.Query().Get("format")
	f, err := export.ParseFormat(format)
	if err != nil {
		s.webStatus(w, r, http.StatusBadRequest, fmt.Sprintf("Unknown export format %q; use markdown, html, json or jsonl.", shorten(format)))
		return
	}
	err = s.streamExport(w, r, f, key, func(h http.Header) {
		ctype := map[export.Format]string{export.FormatMarkdown: "text/markdown; charset=utf-8", export.FormatHTML: "text/html; charset=utf-8",
			export.FormatJSON: "application/json", export.FormatJSONL: "application/jsonl"}[f]
		h.Set("Content-Type", ctype)
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": key.Session + f.Ext()}))
		h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
		h.Set("Cache-Control", "no-store")
	})
	if err != nil {
		s.webError(w, r, sessionErr(err, key))
	}
}

// webAction serves the forms of a session page: rename, pin, archive,
// fork and delete. Each needs the page's CSRF token.
func (s *Server) webAction(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !s.checkCSRF(r) {
		s.webStatus(w, r, http.StatusForbidden, "The form had expired or came from another site; reload the page and try again.")
		return
	}
	m, ok := s.webMeta(w, r)
	if !ok {
		return
	}
	key, ctx := m.Key, r.Context()
	back := "/s/" + url.PathEscape(key.Session)
	on := r.PostFormValue("value") == "1"
	var err error
	switch r.PathValue("action") {
	case "rename":
		title := strings.TrimSpace(r.PostFormValue("title"))
		if len(title) > maxTitleLen {
			s.webStatus(w, r, http.StatusBadRequest, fmt.Sprintf("The title is longer than %d bytes.", maxTitleLen))
			return
		}
		_, err = recall.NewSession(s.store, key).SetTitle(ctx, title, recall.TitleUser)
	case "pin":
		_, err = recall.NewSession(s.store, key).ChangeMeta(ctx, recall.MetaChange{Pinned: new(on)})
	case "archive":
		_, err = recall.NewSession(s.store, key).ChangeMeta(ctx, recall.MetaChange{Archived: new(on)})
	case "fork":
		ref, ok := parseRef(r.PostFormValue("at"))
		if !ok || ref.Seq > m.LastSeq {
			s.webStatus(w, r, http.StatusBadRequest, "Invalid 'at': not an item of this session.")
			return
		}
		newKey := recall.Key{Project: key.Project, Session: newConversationID()}
		if _, err = recall.NewSession(s.store, key).Fork(ctx, ref.Seq, newKey); err == nil {
			back = "/s/" + url.PathEscape(newKey.Session)
		}
	case "delete":
		if m.Pinned { // as recall rm without --force and the API without force=true
			s.webStatus(w, r, http.StatusConflict, "This session is pinned: unpin it first.")
			return
		}
		if err = s.store.Remove(ctx, key); err == nil {
			back = "/"
		}
	default:
		s.webStatus(w, r, http.StatusNotFound, "No such action.")
		return
	}
	if err != nil {
		s.webError(w, r, sessionErr(err, key))
		return
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// webMeta reads the metadata of the session the request's path names, in
// the user's project, and writes the error page when it cannot.
func (s *Server) webMeta(w http.ResponseWriter, r *http.Request) (recall.Meta, bool) {
	m, err := s.sessionMeta(r)
	if err != nil {
		s.webError(w, r, err)
		return recall.Meta{}, false
	}
	return m, true
}
