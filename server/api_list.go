package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/server/audit"
)

// Listing sessions.
//
// GET /api/v1/sessions pages through Store.List: newest activity first,
// its cursor passed through as next_cursor. The first page (no cursor)
// starts with the pinned sessions, newest first, up to pinnedCap of them,
// followed by up to limit unpinned ones; later pages hold unpinned
// sessions only, so each session is listed once. The pinned ones are a
// listing of their own (recall.ListOptions.Pinned), which the stores
// answer from an index of the pinned sessions, so a first page reads
// about limit + pinned sessions' metadata, however many the user has.
// Past pinnedCap, pinned_next_cursor is set: the rest are read with
// pinned=true from that cursor. pinned=true lists the pinned sessions
// only, paged like any listing.
//
// Filters (title, and for an admin's ?all=true the user projects only)
// are applied to the store's pages as they are read: a page asks the
// store for as many sessions as it still lacks, so it always ends on one
// of the store's cursors. has_more may then be true before a last page
// that turns out empty.

// Bounds of the listing routes.
const (
	defaultListLimit = 20
	maxListLimit     = 100
	// pinnedCap is the most pinned sessions a first page starts with (of
	// the API's list and the web viewer's).
	pinnedCap = 100
)

// listLimit reads the limit= of a listing: defaultListLimit when it is
// absent, 1 to maxListLimit.
func listLimit(r *http.Request) (int, error) {
	n, err := intParam(r, "limit", defaultListLimit, 1, maxListLimit)
	return int(n), err
}

// listCaller returns the request's user (apiUser) and the limit= of the
// listing they ask for (listLimit).
func listCaller(r *http.Request) (User, int, error) {
	u, err := apiUser(r)
	if err != nil {
		return User{}, 0, err
	}
	limit, err := listLimit(r)
	return u, limit, err
}

// cursorList is the envelope of the /api/v1 listings paged by cursor
// (sessionList is the same with a pinned cursor added).
type cursorList[T any] struct {
	Object     string `json:"object"` // "list"
	Data       []T    `json:"data"`
	NextCursor string `json:"next_cursor,omitempty"`
	HasMore    bool   `json:"has_more"`
}

// listOf is the list of data whose next page is at cursor next ("" after
// the last page).
func listOf[T any](data []T, next string) cursorList[T] {
	return cursorList[T]{Object: "list", Data: data, NextCursor: next, HasMore: next != ""}
}

// sessionList is the envelope of GET /api/v1/sessions.
type sessionList struct {
	Object     string    `json:"object"` // "list"
	Data       []session `json:"data"`
	NextCursor string    `json:"next_cursor,omitempty"`
	HasMore    bool      `json:"has_more"`
	// PinnedNextCursor is set on a first page that holds pinnedCap pinned
	// sessions and not all of them: pass it as cursor= with pinned=true.
	PinnedNextCursor string `json:"pinned_next_cursor,omitempty"`
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	u, limit, err := listCaller(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	var archived, all, onlyPinned bool
	for _, p := range []struct {
		name string
		v    *bool
	}{{"archived", &archived}, {"all", &all}, {"pinned", &onlyPinned}} {
		if *p.v, err = boolParam(r, p.name); err != nil {
			return err
		}
	}
	if q.Has("q") {
		if all || q.Get("user") != "" && q.Get("user") != u.Name {
			return invalidParam("q", "Search (q) covers your own sessions only; an admin lists others' without it.")
		}
		if onlyPinned {
			return invalidParam("pinned", "Search (q) does not take pinned; list the pinned sessions without it.")
		}
		return s.searchSessions(w, r, u, limit)
	}
	owner := u
	if name := q.Get("user"); name != "" && name != u.Name {
		if err := ValidateUser(name); err != nil {
			return invalidParam("user", "Invalid user name %q.", shorten(name))
		}
		if !u.Admin {
			return notAdmin("Only an admin may list another user's sessions.")
		}
		owner = User{Name: name}
	}
	project, mine, err := s.listScope(r.Context(), owner, q.Get("project"))
	if err != nil {
		return err
	}
	if all {
		if !u.Admin {
			return notAdmin("Only an admin may list every user's sessions.")
		}
		project, mine = "", func(m recall.Meta) bool { return isUserProject(m.Key.Project) }
	}
	if all || owner.Name != u.Name { // another user's sessions
		of := recall.Key{Project: project}
		if project == "" && !all {
			of.Project = owner.Project() // names the user whose projects are listed
		}
		s.record(r, audit.ActionAdminList, of, map[string]string{"all": strconv.FormatBool(all)})
	}
	title := strings.ToLower(q.Get("title"))
	keep := func(m recall.Meta) bool {
		return (mine == nil || mine(m)) && (title == "" || strings.Contains(strings.ToLower(m.Title), title))
	}

	opts := recall.ListOptions{IncludeArchived: archived, Cursor: q.Get("cursor"), Pinned: onlyPinned}
	metas, pinnedNext, next, err := s.pinnedFirst(r.Context(), project, opts, limit, keep)
	if err != nil {
		return err
	}
	out := sessionList{Object: "list", Data: []session{}, PinnedNextCursor: pinnedNext, NextCursor: next, HasMore: next != ""}
	for _, m := range metas {
		out.Data = append(out.Data, sessionOf(m))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// pinnedFirst reads one page of a listing of project with opts, as the
// API and the viewer list sessions (see above): on a first page (no
// cursor) that is not of the pinned sessions only, up to pinnedCap pinned
// sessions, then up to limit others from the cursor on; keep filters
// both. It returns the cursor of the pinned sessions past those shown,
// and that of the next page: "" when there are none.
func (s *Server) pinnedFirst(ctx context.Context, project string, opts recall.ListOptions, limit int, keep func(recall.Meta) bool) (
	metas []recall.Meta, pinnedNext, next string, err error) {
	others := func(m recall.Meta) bool { return !m.Pinned && keep(m) }
	if opts.Pinned {
		others = keep // the listing holds pinned sessions only
	}
	if opts.Cursor == "" && !opts.Pinned {
		pinned := recall.ListOptions{IncludeArchived: opts.IncludeArchived, Pinned: true}
		if metas, pinnedNext, err = s.collect(ctx, project, pinned, pinnedCap, keep); err != nil {
			return nil, "", "", err
		}
	}
	rest, next, err := s.collect(ctx, project, opts, limit, others)
	if err != nil {
		return nil, "", "", cursorErr(err, opts.Cursor)
	}
	return append(metas, rest...), pinnedNext, next, nil
}

// listScope returns what a listing of u's sessions reads: the store
// project ("" for every project) and a filter of its sessions (nil keeps
// every one). With project (?project=) set, that project, which must be
// u's; without, every project of u's: for the local user, one listing of
// every project of the store, the server's own left out; for any other,
// see spanScope.
func (s *Server) listScope(ctx context.Context, u User, project string) (string, func(recall.Meta) bool, error) {
	if project != "" {
		if !u.owns(project) {
			return "", nil, projectNotFound(project)
		}
		return project, nil, nil
	}
	if u.Local {
		return "", u.ownsMeta, nil
	}
	return s.spanScope(ctx, u)
}

// searchScope is listScope for a search, which over every project of a
// store reads the index of every one: the local user's search spans
// their projects as spanScope says too.
func (s *Server) searchScope(ctx context.Context, u User, project string) (string, func(recall.Meta) bool, error) {
	if project != "" || !u.Local {
		return s.listScope(ctx, u, project)
	}
	return s.spanScope(ctx, u)
}

// spanScope is the scope of every project of u's: a user whose sessions
// are all in one project gets that project, which the stores list and
// search without reading any other project's sessions (another user's,
// on a server of many); a user of several gets every project, filtered.
func (s *Server) spanScope(ctx context.Context, u User) (string, func(recall.Meta) bool, error) {
	ps, err := s.projects(ctx, u)
	switch {
	case err != nil:
		return "", nil, err
	case len(ps) == 0:
		return u.Project(), nil, nil
	case len(ps) == 1:
		return ps[0].Project, nil, nil
	}
	return "", u.ownsMeta, nil
}

// projectNotFound is the 404 of a project that is not the user's,
// whether it exists or not.
func projectNotFound(project string) *APIError {
	return &APIError{Status: http.StatusNotFound, Message: "Project '" + shorten(project) + "' not found.",
		Type: "invalid_request_error", Param: "project", Code: "project_not_found"}
}

// cursorErr puts a store's refusal of a client's cursor (a list cursor the
// store cannot parse wraps recall.ErrInvalidKey) in the API's own words,
// as the search's is; any other error is returned as it is.
func cursorErr(err error, cursor string) error {
	if cursor != "" && errors.Is(err, recall.ErrInvalidKey) {
		return badCursor()
	}
	return err
}

// badCursor is the 400 of a cursor this server did not give.
func badCursor() *APIError {
	return invalidParam("cursor", "Invalid 'cursor': not one this server gave.")
}

func notAdmin(msg string) *APIError {
	return &APIError{Status: http.StatusForbidden, Message: msg, Type: "permission_error", Code: "admin_required"}
}

// collect reads the store's pages from opts.Cursor and keeps up to limit
// sessions that keep accepts. It returns the cursor after the last page it
// read, "" when that was the last.
func (s *Server) collect(ctx context.Context, project string, opts recall.ListOptions, limit int, keep func(recall.Meta) bool) ([]recall.Meta, string, error) {
	var out []recall.Meta
	for {
		opts.Limit = limit - len(out)
		page, err := s.store.List(ctx, project, opts)
		if err != nil {
			return nil, "", err
		}
		for _, m := range page.Sessions {
			if keep(m) {
				out = append(out, m)
			}
		}
		if page.Next == "" || len(out) >= limit {
			return out, page.Next, nil
		}
		opts.Cursor = page.Next
	}
}

// project is a project of the user's, as GET /api/v1/projects lists it.
type project struct {
	Object string `json:"object"` // "project"
	// ID is the store project: what ?project= takes, and a session's
	// project.
	ID string `json:"id"`
	// Name is the project's name in the user's namespace: the project
	// key of the home its sessions came from (recall.ProjectKey); "" for
	// the default project.
	Name     string    `json:"name"`
	Default  bool      `json:"default"`
	Sessions int       `json:"sessions"` // main sessions, archived ones included
	Updated  time.Time `json:"updated"`
}

// listProjects answers the user's projects that hold sessions, sorted
// by id, with their session counts.
func (s *Server) listProjects(w http.ResponseWriter, r *http.Request) error {
	u, err := apiUser(r)
	if err != nil {
		return err
	}
	all, err := recall.Projects(r.Context(), s.store) // afresh: what a client just wrote counts
	if err != nil {
		return err
	}
	data := []project{}
	for _, p := range all {
		if !u.owns(p.Project) {
			continue
		}
		name := p.Project
		if !u.Local {
			_, name, _ = ProjectOwner(p.Project)
		}
		data = append(data, project{Object: "project", ID: p.Project, Name: name, Default: p.Project == u.Project(),
			Sessions: p.Sessions, Updated: p.Updated})
	}
	writeJSON(w, http.StatusOK, listOf(data, ""))
	return nil
}

// subagent is a subagent record of a session, as /api/v1 shows it.
type subagent struct {
	Object    string       `json:"object"` // "session.subagent"
	Subpath   string       `json:"subpath"`
	Title     string       `json:"title"`
	Created   time.Time    `json:"created"`
	Updated   time.Time    `json:"updated"`
	ItemCount int          `json:"item_count"`
	LastSeq   int64        `json:"last_seq"`
	Usage     recall.Usage `json:"usage"`
}

// sessionSubagents lists the subagent records under a session (see
// recall.Key.Subpath); their logs are read with entries?subpath=.
func (s *Server) sessionSubagents(w http.ResponseWriter, r *http.Request) error {
	key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	limit, err := listLimit(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	if _, err := s.stat(ctx, key); err != nil {
		return sessionErr(err, key)
	}
	page, err := s.store.List(ctx, key.Project, recall.ListOptions{
		Parent: key.Session, Limit: limit, Cursor: r.URL.Query().Get("cursor"), IncludeArchived: true,
	})
	if err != nil {
		return cursorErr(err, r.URL.Query().Get("cursor"))
	}
	data := make([]subagent, 0, len(page.Sessions))
	for _, m := range page.Sessions {
		data = append(data, subagent{Object: "session.subagent", Subpath: m.Key.Subpath, Title: m.Title,
			Created: m.Created, Updated: m.Updated, ItemCount: m.ItemCount, LastSeq: m.LastSeq, Usage: m.Usage})
	}
	writeJSON(w, http.StatusOK, listOf(data, page.Next))
	return nil
}
