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
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/server/audit"
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
	LastSeq    int64  // the seq the items were read at: live updates go on from it
	CanShare   bool   // the server makes share links (not Options.NoShare)
	Shared     string // a share link just made, shown this once
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

func (s *Server) webSession(w http.ResponseWriter, r *http.Request) error {
	m, err := s.sessionMeta(r)
	if err != nil {
		return err
	}
	key, ctx := m.Key, r.Context()
	var before recall.ItemRef
	if b := r.URL.Query().Get("before"); b != "" {
		var err error
		if before, err = recall.ParseItemRef(b); err != nil {
			return pageError(http.StatusBadRequest, "Invalid 'before': expected an item's place such as 12 or 12.3.")
		}
	}
	d, err := s.sessionPage(ctx, key, m, before)
	if err != nil {
		return err
	}
	d.pageBase = s.base(w, r, titleOr(m))
	d.CanShare = !s.opts.NoShare
	if r.URL.Query().Get("frag") == "1" {
		s.render(w, r, http.StatusOK, "items", d)
		return nil
	}
	if before.Seq == 0 {
		if err := s.subagents(ctx, key, &d); err != nil {
			return err
		}
	}
	s.render(w, r, http.StatusOK, "session.html", d)
	return nil
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
		d.Older = fmt.Sprintf("/s/%s?before=%s", key.Session, page[0].Ref.String())
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

func (s *Server) webConfirmDelete(w http.ResponseWriter, r *http.Request) error {
	m, err := s.sessionMeta(r)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "delete.html", sessionData{pageBase: s.base(w, r, "Delete "+titleOr(m)), ID: m.Key.Session, Meta: m})
	return nil
}

func (s *Server) webExport(w http.ResponseWriter, r *http.Request) error {
	m, err := s.sessionMeta(r)
	if err != nil {
		return err
	}
	key := m.Key
	format := r.URL.Query().Get("format")
	f, err := export.ParseFormat(format)
	if err != nil {
		return pageError(http.StatusBadRequest, fmt.Sprintf("Unknown export format %q; use markdown, html, json or jsonl.", shorten(format)))
	}
	err = sessionErr(s.streamExport(w, r, f, key, func(h http.Header) {
		ctype := map[export.Format]string{export.FormatMarkdown: "text/markdown; charset=utf-8", export.FormatHTML: "text/html; charset=utf-8",
			export.FormatJSON: "application/json", export.FormatJSONL: "application/jsonl"}[f]
		h.Set("Content-Type", ctype)
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": key.Session + f.Ext()}))
		h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
		h.Set("Cache-Control", "no-store")
	}), key)
	s.recordExport(r, key, &err)
	return err
}

// webAction serves the forms of a session page: rename, pin, archive,
// fork and delete. Each needs the page's CSRF token.
func (s *Server) webAction(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkForm(w, r); err != nil {
		return err
	}
	m, err := s.sessionMeta(r)
	if err != nil {
		return err
	}
	key, ctx := m.Key, r.Context()
	back := "/s/" + url.PathEscape(key.Session)
	on := r.PostFormValue("value") == "1"
	switch r.PathValue("action") {
	case "rename":
		title := strings.TrimSpace(r.PostFormValue("title"))
		if err := checkTitle(&title); err != nil {
			return err
		}
		_, err = recall.NewSession(s.store, key).SetTitle(ctx, title, recall.TitleUser)
	case "pin":
		_, err = recall.NewSession(s.store, key).ChangeMeta(ctx, recall.MetaChange{Pinned: new(on)})
	case "archive":
		_, err = recall.NewSession(s.store, key).ChangeMeta(ctx, recall.MetaChange{Archived: new(on)})
	case "fork":
		ref, perr := recall.ParseItemRef(r.PostFormValue("at"))
		if perr != nil || ref.Seq > m.LastSeq {
			return pageError(http.StatusBadRequest, "Invalid 'at': not an item of this session.")
		}
		newKey := recall.Key{Project: key.Project, Session: newConversationID()}
		if _, err = recall.NewSession(s.store, key).Fork(ctx, ref.Seq, newKey); err == nil {
			back = "/s/" + url.PathEscape(newKey.Session)
		}
	case "share":
		if s.opts.NoShare {
			return pageError(http.StatusForbidden, "Sharing is turned off on this server.")
		}
		u, _ := apiUser(r)
		token, sh, err := CreateShare(ctx, s.store, u.Name, key, ShareOptions{Expires: time.Now().Add(DefaultShareExpiry)})
		if err != nil {
			return sessionErr(err, key)
		}
		s.record(r, audit.ActionShare, key, map[string]string{"share": sh.ID, "via": "web"})
		scheme := "http"
		if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
			scheme = "https"
		}
		return s.showShared(w, r, m, scheme+"://"+r.Host+"/share/"+token)
	case "delete":
		// A pinned session goes only when the confirmation page's
		// checkbox said so, as recall rm needs --force and the API
		// force=true.
		if m.Pinned && r.PostFormValue("force") != "1" {
			return pageError(http.StatusConflict, "This session is pinned: confirm that it goes anyway, or unpin it first.")
		}
		if err = s.deleteOrTrash(ctx, key, false); err == nil {
			s.record(r, audit.ActionDelete, key, map[string]string{"via": "web"})
			back = "/"
		}
	default:
		return pageError(http.StatusNotFound, "No such action.")
	}
	if err != nil {
		return sessionErr(err, key)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

// showShared renders the session page of m with the share link just
// made, the one time it is shown.
func (s *Server) showShared(w http.ResponseWriter, r *http.Request, m recall.Meta, link string) error {
	d, err := s.sessionPage(r.Context(), m.Key, m, recall.ItemRef{})
	if err != nil {
		return err
	}
	d.pageBase = s.base(w, r, titleOr(m))
	d.CanShare, d.Shared = true, link
	if err := s.subagents(r.Context(), m.Key, &d); err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "session.html", d)
	return nil
}
