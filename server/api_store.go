package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/pagefilter"
	"github.com/recallkit/recall/internal/storewire"
	"github.com/recallkit/recall/storekit"
)

// The store routes, /api/v1/store/…: recall.Store over HTTP, for package
// remotestore (the wire shapes are internal/storewire's). Each is one
// call of the server's store, in the namespace of the token's user:
//
//   - a client's project P is the user's project P (UserProject); the
//     user's default project, "user.NAME", keeps its name; for the local
//     user (AuthNone) projects are the home's, named as there. The
//     server's own projects (ReservedPrefix), and any other user's, are
//     out of reach: a key naming one is invalid (400, invalid_key);
//   - the keys the answers hold (a session's, a fork's origin, a search
//     hit's, a project's) and those in fork entries are translated back
//     and forth, so the client sees its own projects only;
//   - guards travel with the write, to the store's Append, which checks
//     them in one atomic step with the write;
//   - errors carry recall's sentinels in their code (storewire.Code);
//   - the writes (POST) take an Idempotency-Key; a read-only token's are
//     refused (serveAs).
func (s *Server) storeRoutes() {
	post := func(h handlerFunc) http.HandlerFunc { return s.api(s.idempotent(storeErrs(h))) }
	get := func(h handlerFunc) http.HandlerFunc { return s.api(storeErrs(h)) }
	s.mux.HandleFunc("POST /api/v1/store/append", post(s.storeAppend))
	s.mux.HandleFunc("POST /api/v1/store/import", post(s.storeImport))
	s.mux.HandleFunc("POST /api/v1/store/pop", post(s.storePop))
	s.mux.HandleFunc("POST /api/v1/store/remove", post(s.storeRemove))
	s.mux.HandleFunc("POST /api/v1/store/fork", post(s.storeFork))
	s.mux.HandleFunc("POST /api/v1/store/purge", post(s.storePurge))
	s.mux.HandleFunc("GET /api/v1/store/page", get(s.storePage))
	s.mux.HandleFunc("GET /api/v1/store/stat", get(s.storeStat))
	s.mux.HandleFunc("GET /api/v1/store/entries", get(s.storeEntries))
	s.mux.HandleFunc("GET /api/v1/store/list", get(s.storeList))
	s.mux.HandleFunc("GET /api/v1/store/projects", get(s.storeProjects))
	s.mux.HandleFunc("GET /api/v1/store/search", get(s.storeSearch))
}

// storeErrs gives the errors of h that wrap a sentinel of recall its
// code (storewire.Code), which the client turns back into the sentinel.
func storeErrs(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		err := h(w, r)
		code := storewire.Code(err)
		var ae *APIError
		if err == nil || code == "" || errors.As(err, &ae) {
			return err
		}
		ae = apiErrorOf(err)
		if ae == nil { // a sentinel apiErrorOf leaves to the server: said as it is
			ae = &APIError{Status: http.StatusBadRequest, Type: "invalid_request_error", Message: withDetail("Refused", err, errors.Unwrap(err))}
			if code == "unsupported" {
				ae.Status, ae.Message = http.StatusNotImplemented, "The server's store cannot do this."
			}
		}
		copied := *ae
		copied.Code = code
		return &copied
	}
}

// storeProject is the store project of the client's project p for u.
func (u User) storeProject(p string) (string, error) {
	switch {
	case u.Local:
		if !u.owns(p) {
			return "", fmt.Errorf("%w: project %q is the server's own", recall.ErrInvalidKey, shorten(p))
		}
		return p, nil
	case p == u.Project():
		return p, nil
	}
	return UserProject(u.Name, p)
}

// clientProject is storeProject backwards.
func (u User) clientProject(p string) string {
	if name, project, ok := ProjectOwner(p); ok && !u.Local && name == u.Name && project != "" {
		return project
	}
	return p
}

// storeKey is the store's key of the client's key k for u.
func (u User) storeKey(k recall.Key) (recall.Key, error) {
	if err := k.Validate(); err != nil {
		return k, err
	}
	p, err := u.storeProject(k.Project)
	if err != nil {
		return k, err
	}
	k.Project = p
	return k, k.Validate()
}

// clientMeta translates the keys of m for u.
func (u User) clientMeta(m recall.Meta) recall.Meta {
	m.Key.Project = u.clientProject(m.Key.Project)
	if f := m.ForkedFrom; f != nil {
		c := *f
		c.Key.Project = u.clientProject(c.Key.Project)
		m.ForkedFrom = &c
	}
	return m
}

// forkEntries translates the origin in the fork entries of es with to;
// an origin that does not decode is left as it is.
func forkEntries(es []recall.Entry, to func(string) (string, error)) ([]recall.Entry, error) {
	for i, e := range es {
		var o recall.ForkOrigin
		if e.Kind != recall.KindFork || json.Unmarshal(e.Data, &o) != nil {
			continue
		}
		p, err := to(o.Key.Project)
		if err != nil {
			return nil, err
		}
		o.Key.Project = p
		es[i].Data, _ = json.Marshal(o) // an origin always marshals
	}
	return es, nil
}

// queryKey reads the key of a GET store route for the user.
func queryKey(r *http.Request) (User, recall.Key, error) {
	u, err := apiUser(r)
	if err != nil {
		return u, recall.Key{}, err
	}
	q := r.URL.Query()
	k, err := u.storeKey(recall.Key{Project: q.Get("project"), Session: q.Get("session"), Subpath: q.Get("subpath")})
	return u, k, err
}

// bodyKey reads the JSON body of a POST store route into v and returns
// the user.
func (s *Server) storeBody(w http.ResponseWriter, r *http.Request, v any) (User, error) {
	u, err := apiUser(r)
	if err != nil {
		return u, err
	}
	return u, s.readJSON(w, r, v)
}

func (s *Server) storeAppend(w http.ResponseWriter, r *http.Request) error {
	var body storewire.Append
	return s.storeWrite(w, r, &body, &body.Key, &body.Entries, func(ctx context.Context, key recall.Key, es ...recall.Entry) (int64, error) {
		return s.store.Append(ctx, key, body.Guard, es...)
	})
}

func (s *Server) storeImport(w http.ResponseWriter, r *http.Request) error {
	var body storewire.Import
	return s.storeWrite(w, r, &body, &body.Key, &body.Entries, s.store.Import)
}

// storeWrite reads the body of append or import into body, whose key
// and entries are at key and entries, and writes the entries with write
// in the user's namespace.
func (s *Server) storeWrite(w http.ResponseWriter, r *http.Request, body any, key *recall.Key, entries *[]storewire.Entry,
	write func(context.Context, recall.Key, ...recall.Entry) (int64, error)) error {
	u, err := s.storeBody(w, r, body)
	if err != nil {
		return err
	}
	k, err := u.storeKey(*key)
	if err != nil {
		return err
	}
	es, err := forkEntries(storewire.Entries(*entries), u.storeProject)
	if err != nil {
		return err
	}
	last, err := write(r.Context(), k, es...)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, storewire.LastSeq{LastSeq: last})
	return nil
}

// keyBody reads the body of pop, remove and purge.
func (s *Server) keyBody(w http.ResponseWriter, r *http.Request) (User, recall.Key, error) {
	var body storewire.KeyBody
	u, err := s.storeBody(w, r, &body)
	if err != nil {
		return u, recall.Key{}, err
	}
	key, err := u.storeKey(body.Key)
	return u, key, err
}

func (s *Server) storePop(w http.ResponseWriter, r *http.Request) error {
	_, key, err := s.keyBody(w, r)
	if err != nil {
		return err
	}
	it, err := s.store.Pop(r.Context(), key)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, storewire.Popped{Item: storewire.FromItem(it)})
	return nil
}

func (s *Server) storeRemove(w http.ResponseWriter, r *http.Request) error {
	_, key, err := s.keyBody(w, r)
	if err != nil {
		return err
	}
	if err := s.store.Remove(r.Context(), key); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct{}{})
	return nil
}

func (s *Server) storePurge(w http.ResponseWriter, r *http.Request) error {
	_, key, err := s.keyBody(w, r)
	if err != nil {
		return err
	}
	p, ok := recall.As[storekit.Purger](s.store)
	if !ok {
		return fmt.Errorf("%w: the server's store cannot purge", recall.ErrUnsupported)
	}
	res, err := p.Purge(r.Context(), key)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (s *Server) storeFork(w http.ResponseWriter, r *http.Request) error {
	var body storewire.Fork
	u, err := s.storeBody(w, r, &body)
	if err != nil {
		return err
	}
	key, err := u.storeKey(body.Key)
	if err != nil {
		return err
	}
	newKey, err := u.storeKey(body.NewKey)
	if err != nil {
		return err
	}
	m, err := recall.NewSession(s.store, key).Fork(r.Context(), body.AtSeq, newKey)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, u.clientMeta(m))
	return nil
}

// pageLimit is the request's limit, at most a page (Options.StorePage):
// a read asked for more, or for no limit (below 1), is answered a page at
// a time. A missing limit is def, or a page when def is 0.
func (s *Server) pageLimit(r *http.Request, def int) (int, error) {
	page := int64(s.opts.StorePage)
	limit, err := intParam(r, "limit", int64(def), math.MinInt32, math.MaxInt32)
	if err != nil {
		return 0, err
	}
	if limit < 1 || limit > page {
		limit = page
	}
	return int(limit), nil
}

func (s *Server) storePage(w http.ResponseWriter, r *http.Request) error {
	_, key, err := queryKey(r)
	if err != nil {
		return err
	}
	var opts recall.ItemPageOptions
	limit, err := s.pageLimit(r, 0)
	if err != nil {
		return err
	}
	seq, err := intParam(r, "after_seq", 0, 0, 1<<62)
	if err != nil {
		return err
	}
	index, err := intParam(r, "after_index", 0, 0, 1<<31)
	if err != nil {
		return err
	}
	if opts.Oldest, err = boolParam(r, "oldest"); err != nil {
		return err
	}
	opts.Limit, opts.After = limit, recall.ItemRef{Seq: seq, Index: int(index)}
	page, err := recall.NewSession(s.store, key).ReadItems(r.Context(), opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, storewire.ItemsPage{Items: storewire.FromItems(page.Items), More: page.More, LastSeq: page.LastSeq})
	return nil
}

func (s *Server) storeStat(w http.ResponseWriter, r *http.Request) error {
	u, key, err := queryKey(r)
	if err != nil {
		return err
	}
	m, err := s.store.Stat(r.Context(), key)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, u.clientMeta(m))
	return nil
}

func (s *Server) storeEntries(w http.ResponseWriter, r *http.Request) error {
	u, key, err := queryKey(r)
	if err != nil {
		return err
	}
	after, err := intParam(r, "after", 0, -1<<62, 1<<62) // below 0: from the first, as a store takes it
	if err != nil {
		return err
	}
	limit, err := s.pageLimit(r, 0)
	if err != nil {
		return err
	}
	es, err := s.store.Entries(r.Context(), key, after, limit+1)
	if err != nil {
		return err
	}
	more := len(es) > limit
	if more {
		es = es[:limit]
	}
	es, _ = forkEntries(es, func(p string) (string, error) { return u.clientProject(p), nil })
	writeJSON(w, http.StatusOK, storewire.EntriesPage{Entries: storewire.FromEntries(es), More: more})
	return nil
}

// storeScope is what a listing or a search of the client's project
// reads: the store project and a filter (nil keeps all). Every project
// of a user's is the whole store, filtered to the user's own: exact,
// where the server's cached project list (spanScope) may be late.
func storeScope(u User, project string) (string, pagefilter.Keep, error) {
	if project == "" {
		return "", u.ownsMeta, nil
	}
	p, err := u.storeProject(project)
	return p, nil, err
}

func (s *Server) storeList(w http.ResponseWriter, r *http.Request) error {
	u, err := apiUser(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	project, keep, err := storeScope(u, q.Get("project"))
	if err != nil {
		return err
	}
	limit, err := s.pageLimit(r, recall.DefaultListLimit)
	if err != nil {
		return err
	}
	opts := recall.ListOptions{Limit: limit, Cursor: q.Get("cursor"), Parent: q.Get("parent")}
	for name, p := range map[string]*bool{"archived": &opts.IncludeArchived, "pinned": &opts.Pinned, "trashed": &opts.Trashed} {
		if *p, err = boolParam(r, name); err != nil {
			return err
		}
	}
	var page recall.Page
	if keep != nil && opts.Parent != "" {
		return fmt.Errorf("%w: subagent records are listed within a project", recall.ErrInvalidKey)
	}
	if keep != nil {
		page, err = s.listOwn(r.Context(), u, opts)
	} else {
		page, err = s.store.List(r.Context(), project, opts)
	}
	if err != nil {
		return err
	}
	for i, m := range page.Sessions {
		page.Sessions[i] = u.clientMeta(m)
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// listOwn is List of every project of u's: the listings of each, merged.
// Its cursor is the keyset cursor of the last session returned
// (storekit.CursorAt), which every store of this module takes in a
// listing of any project, so each page costs a page of each of u's
// projects, never a read of the other users' sessions.
func (s *Server) listOwn(ctx context.Context, u User, opts recall.ListOptions) (recall.Page, error) {
	ps, err := s.ownProjects(ctx, u)
	if err != nil {
		return recall.Page{}, err
	}
	if opts.Limit == 0 {
		opts.Limit = recall.DefaultListLimit
	}
	var all []recall.Meta
	more := false
	for _, p := range ps {
		page, err := s.store.List(ctx, p.Project, opts)
		if err != nil {
			return recall.Page{}, err
		}
		all = append(all, page.Sessions...)
		more = more || page.Next != ""
	}
	storekit.SortList(all)
	out := recall.Page{Sessions: all}
	if opts.Limit > 0 && len(all) >= opts.Limit {
		more = more || len(all) > opts.Limit
		out.Sessions = all[:opts.Limit]
	}
	if more && len(out.Sessions) > 0 {
		out.Next = storekit.CursorAt(out.Sessions[len(out.Sessions)-1]).String()
	}
	if out.Sessions == nil {
		out.Sessions = []recall.Meta{}
	}
	return out, nil
}

// ownProjects reads the store's projects afresh (the server's cache may
// be late) and keeps u's.
func (s *Server) ownProjects(ctx context.Context, u User) ([]recall.ProjectInfo, error) {
	all, err := recall.Projects(ctx, s.store)
	if err != nil {
		return nil, err
	}
	return u.ownProjects(all), nil
}

func (s *Server) storeProjects(w http.ResponseWriter, r *http.Request) error {
	u, err := apiUser(r)
	if err != nil {
		return err
	}
	ps, err := s.ownProjects(r.Context(), u)
	if err != nil {
		return err
	}
	out := []recall.ProjectInfo{}
	for _, p := range ps {
		p.Project = u.clientProject(p.Project)
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b recall.ProjectInfo) int { return strings.Compare(a.Project, b.Project) })
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) storeSearch(w http.ResponseWriter, r *http.Request) error {
	u, err := apiUser(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	limit, err := intParam(r, "limit", 0, -1<<31, 1<<31)
	if err != nil {
		return err
	}
	opts := recall.SearchOptions{Query: q.Get("q"), Role: q.Get("role"), Cursor: q.Get("cursor"), Limit: int(limit)}
	var keep pagefilter.Keep
	if opts.Project, keep, err = storeScope(u, q.Get("project")); err != nil {
		return err
	}
	if err := searchFilters(r, &opts); err != nil {
		return err
	}
	page, err := searchPage(r, s.store, opts, keep)
	if err != nil {
		return err
	}
	for i, h := range page.Hits {
		page.Hits[i].Key.Project = u.clientProject(h.Key.Project)
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// searchPage is one page of the store's search, filtered by keep.
func searchPage(r *http.Request, st recall.Store, opts recall.SearchOptions, keep pagefilter.Keep) (recall.SearchPage, error) {
	if keep == nil {
		return recall.Search(r.Context(), st, opts)
	}
	page, err := pagefilter.Search(r.Context(), st, opts, keep)
	if err != nil {
		return recall.SearchPage{}, err
	}
	return page.SearchPage, nil
}

// timeParam reads an RFC 3339 time; the zero time when it is absent.
func timeParam(q url.Values, name string) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return t, invalidParam(name, "Invalid '%s': %q; expected an RFC 3339 time.", name, shorten(v))
	}
	return t, nil
}
