package server

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/internal/pagefilter"
	"github.com/recallkit/recall/search"
	"github.com/recallkit/recall/server/audit"
)

// The viewer's list page: the pinned sessions, then the others newest
// first, or the hits of a search, a page at a time.

// listRow is one session of the list.
type listRow struct {
	ID          string
	Title       string
	Project     string
	FirstPrompt string
	Updated     time.Time
	Items       int
	Pinned      bool
	Archived    bool
	Source      string // the tool it came from (importer.Source)
	Own         bool   // the reader's own: linked, its first prompt shown
}

// hitRow is one search hit.
type hitRow struct {
	ID, Title, Role, Anchor string
	Snippet                 template.HTML
	Time                    time.Time
}

// projectOption is one project of the list's project picker.
type projectOption struct {
	ID       string
	Sessions int
}

type listData struct {
	pageBase
	Q        string
	Project  string // "": every project of the reader's
	Projects []projectOption
	// Pick shows the project picker: there is a choice (more than one
	// project, or an admin's look at another user's).
	Pick     bool
	Archived bool
	Pinned   bool // ?pinned=1: the pinned sessions only
	Rows     []listRow
	Hits     []hitRow
	More     string // the URL of the next page; "" on the last
	// MorePinned is the URL of the pinned sessions after the first page's
	// pinnedCap, when there are more.
	MorePinned string
	Error      string
}

func (s *Server) webList(w http.ResponseWriter, r *http.Request) error {
	u, err := apiUser(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	d := listData{pageBase: s.base(w, r, "Sessions"), Q: strings.TrimSpace(q.Get("q")), Project: q.Get("project"),
		Archived: q.Get("archived") == "1", Pinned: q.Get("pinned") == "1"}
	if d.Projects, err = s.pickerProjects(r.Context(), u); err != nil {
		return err
	}
	if !slices.ContainsFunc(d.Projects, func(p projectOption) bool { return p.ID == d.Project }) {
		d.Project = "" // every project of the reader's
	}
	d.Pick = len(d.Projects) > 1 || len(d.Projects) == 1 && !u.owns(d.Projects[0].ID)
	if d.Project != "" && !u.owns(d.Project) { // an admin's look at another user's project
		s.record(r, audit.ActionAdminList, recall.Key{Project: d.Project}, map[string]string{"via": "web"})
	}
	if d.Q != "" {
		err = s.webSearch(r, u, &d)
	} else {
		err = s.webListPage(r, u, &d)
	}
	if err != nil {
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
			return err
		}
		d.Error = ae.Message
	}
	name := "list.html"
	if q.Get("frag") == "1" {
		name = "rows"
	}
	s.render(w, r, http.StatusOK, name, d)
	return nil
}

// pickerProjects lists the projects of the list's picker, sorted, with
// their session counts: the reader's own, or for an admin every user's
// (an admin may list others' sessions, not read them).
func (s *Server) pickerProjects(ctx context.Context, u User) ([]projectOption, error) {
	ps, err := s.projectCache.get(ctx, s.store)
	if err != nil {
		return nil, err
	}
	var out []projectOption
	for _, p := range ps {
		if u.owns(p.Project) || u.Admin && isUserProject(p.Project) {
			out = append(out, projectOption{ID: p.Project, Sessions: p.Sessions})
		}
	}
	return out, nil
}

// projectLabel names a store project for the viewer: a user's default
// project by the user's name, another of theirs as "NAME: PROJECT", any
// other (the local user's) as it is.
func projectLabel(p string) string {
	user, project, ok := ProjectOwner(p)
	switch {
	case !ok:
		return p
	case project == "":
		return user
	}
	return user + ": " + project
}

// nextURL is the list's URL with the cursor set.
func nextURL(r *http.Request, cursor string) string {
	q := r.URL.Query()
	q.Set("cursor", cursor)
	q.Del("frag")
	return "/?" + q.Encode()
}

// webListPage reads one page of the list: on the first, the pinned
// sessions (up to pinnedCap, from the store's listing of pinned sessions),
// then up to webPageSize others from the cursor on. With ?pinned=1 it
// lists the pinned sessions only, paged the same way; the first page
// links there (MorePinned) when it could not show every pinned session.
// Every page ends on one of the store's own cursors.
func (s *Server) webListPage(r *http.Request, u User, d *listData) error {
	opts := recall.ListOptions{IncludeArchived: d.Archived, Pinned: d.Pinned, Cursor: r.URL.Query().Get("cursor")}
	project, mine, err := s.listScope(r.Context(), u, d.Project)
	if d.Project != "" && !u.owns(d.Project) { // an admin's look at another user's project
		project, mine, err = d.Project, nil, nil
	}
	if err != nil {
		return err
	}
	keep := func(m recall.Meta) bool { return (!d.Archived || m.Archived) && (mine == nil || mine(m)) }
	metas, more, next, err := s.pinnedFirst(r.Context(), project, opts, webPageSize, keep)
	if err != nil {
		return err
	}
	if more != "" {
		q := r.URL.Query()
		q.Set("pinned", "1")
		q.Set("cursor", more)
		q.Del("frag")
		d.MorePinned = "/?" + q.Encode()
	}
	d.Rows = make([]listRow, len(metas))
	for i, m := range metas {
		row := listRow{ID: m.Key.Session, Title: m.Title, Project: m.Key.Project, Updated: m.Updated, Items: m.ItemCount,
			Pinned: m.Pinned, Archived: m.Archived, Source: importer.Source(m), Own: u.owns(m.Key.Project)}
		if row.Own {
			row.FirstPrompt = m.FirstPrompt // kept by the store: the list reads no items
		}
		d.Rows[i] = row
	}
	if next != "" {
		d.More = nextURL(r, next)
	}
	return nil
}

// webSearch runs a full-text search over the reader's own sessions: of
// the project picked, or of every project of theirs.
func (s *Server) webSearch(r *http.Request, u User, d *listData) error {
	if !u.owns(d.Project) {
		d.Project = "" // search reads items: only the reader's own
	}
	cursor := r.URL.Query().Get("cursor")
	if _, err := search.ParseCursor(cursor); cursor != "" && err != nil {
		return badCursor()
	}
	project, keep, err := s.searchScope(r.Context(), u, d.Project)
	if err != nil {
		return err
	}
	page, err := pagefilter.Search(r.Context(), s.store, recall.SearchOptions{Query: d.Q, Project: project,
		IncludeArchived: d.Archived, Limit: webPageSize, Cursor: cursor}, keep)
	if err != nil {
		return searchErr(err)
	}
	for _, h := range page.Hits {
		anchor := ""
		if h.Ref.Seq > 0 {
			anchor = "#i-" + strings.ReplaceAll(h.Ref.String(), ".", "-")
		}
		d.Hits = append(d.Hits, hitRow{ID: h.Key.Session, Title: h.Title, Role: h.Role, Anchor: anchor,
			Snippet: highlight(h.Snippet, h.Matches), Time: h.Time})
	}
	if page.Next != "" {
		d.More = nextURL(r, page.Next)
	}
	return nil
}

// highlight escapes a snippet and marks its matches.
func highlight(snippet string, spans []recall.Span) template.HTML {
	var b strings.Builder
	at := 0
	for _, sp := range spans {
		if sp.Start < at || sp.End > len(snippet) || sp.Start > sp.End {
			continue
		}
		b.WriteString(template.HTMLEscapeString(snippet[at:sp.Start]))
		b.WriteString("<mark>" + template.HTMLEscapeString(snippet[sp.Start:sp.End]) + "</mark>")
		at = sp.End
	}
	b.WriteString(template.HTMLEscapeString(snippet[at:]))
	return template.HTML(b.String()) // #nosec: every part escaped
}
