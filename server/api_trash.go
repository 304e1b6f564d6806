package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/pagefilter"
	"github.com/recallkit/recall/server/audit"
)

// The trash: a DELETE moves a session there (recall.StoreSession.Trash),
// where it is in no listing, search or view, a 404 on every route, until
// POST /api/v1/sessions/{id}/restore brings it back as it was, DELETE
// ...?purge=true deletes it, or Options.TrashGrace runs out.

// stat reads the session key's metadata; a session in the trash is
// recall.ErrNotFound, as a missing one.
func (s *Server) stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	m, err := s.store.Stat(ctx, key)
	if err == nil && !m.Trashed.IsZero() {
		return recall.Meta{}, trashedError{key}
	}
	return m, err
}

// deleteOrTrash deletes the session key for good when purge, else moves it
// to the trash and sweeps its project's trash of what has been there
// longer than Options.TrashGrace.
func (s *Server) deleteOrTrash(ctx context.Context, key recall.Key, purge bool) error {
	if purge {
		return s.store.Remove(ctx, key)
	}
	if _, err := recall.NewSession(s.store, key).Trash(ctx); err != nil {
		return err
	}
	if s.opts.TrashGrace >= 0 {
		project := key.Project
		s.background(func(ctx context.Context) { s.sweepTrash(ctx, project) })
	}
	return nil
}

// sweepTrash deletes for good the sessions of project that have been in
// the trash for longer than Options.TrashGrace.
func (s *Server) sweepTrash(ctx context.Context, project string) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	grace := s.opts.TrashGrace
	if grace == 0 {
		grace = recall.DefaultTrashGrace
	}
	rep, err := recall.EmptyTrash(ctx, s.store, recall.CleanupOptions{OlderThan: time.Now().Add(-grace), Project: project})
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.log.WarnContext(ctx, "trash: emptying old sessions failed", "project", project, "err", err)
		}
		return
	}
	if len(rep.Removed) > 0 {
		s.log.InfoContext(ctx, "trash: deleted sessions past the grace period", "project", project, "removed", len(rep.Removed))
	}
}

// listTrash lists the user's sessions in the trash, of every project of
// theirs or of the one ?project= names (listScope), a page at a time,
// newest-updated first, as GET /api/v1/sessions lists the others.
func (s *Server) listTrash(w http.ResponseWriter, r *http.Request) error {
	u, limit, err := listCaller(r)
	if err != nil {
		return err
	}
	cursor := r.URL.Query().Get("cursor")
	project, keep, err := s.listScope(r.Context(), u, r.URL.Query().Get("project"))
	if err != nil {
		return err
	}
	page, err := pagefilter.List(r.Context(), s.store, project, recall.ListOptions{Trashed: true, Limit: limit, Cursor: cursor}, keep)
	if err != nil {
		return cursorErr(err, cursor)
	}
	out := sessionList{Object: "list", Data: []session{}, NextCursor: page.Next, HasMore: page.Next != ""}
	for _, m := range page.Sessions {
		out.Data = append(out.Data, sessionOf(m))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// restoreSession takes the session out of the trash and answers it as it
// is now; a session that is not in the trash is a 404.
func (s *Server) restoreSession(w http.ResponseWriter, r *http.Request) error {
	key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	m, err := recall.NewSession(s.store, key).Restore(r.Context())
	if err != nil {
		return sessionErr(err, key)
	}
	s.record(r, audit.ActionRestore, key, nil)
	writeJSON(w, http.StatusOK, sessionOf(m))
	return nil
}

// isTrashed reports whether err is stat's error for a session in the
// trash.
func isTrashed(err error) bool {
	var t trashedError
	return errors.As(err, &t)
}

// trashedError is stat's error for a session in the trash; it wraps
// recall.ErrNotFound.
type trashedError struct{ key recall.Key }

func (e trashedError) Error() string { return e.key.String() + " is in the trash" }
func (e trashedError) Unwrap() error { return recall.ErrNotFound }

// trashData is the Trash page: a page of the user's sessions in the trash.
type trashData struct {
	pageBase
	Sessions []recall.Meta
	Next     string
	Error    string
}

// webTrash shows the user's sessions in the trash, of every project of
// theirs, a page at a time, each
// with a Restore button.
func (s *Server) webTrash(w http.ResponseWriter, r *http.Request) error {
	u, err := apiUser(r)
	if err != nil {
		return err
	}
	cursor := r.URL.Query().Get("cursor")
	project, keep, err := s.listScope(r.Context(), u, "")
	if err != nil {
		return err
	}
	page, err := pagefilter.List(r.Context(), s.store, project, recall.ListOptions{Trashed: true, Limit: webPageSize, Cursor: cursor}, keep)
	if err != nil {
		if cursor != "" && errors.Is(err, recall.ErrInvalidKey) {
			return pageError(http.StatusBadRequest, "Invalid 'cursor': not one this server gave.")
		}
		return err
	}
	s.render(w, r, http.StatusOK, "trash.html", trashData{pageBase: s.base(w, r, "Trash"), Sessions: page.Sessions, Next: page.Next})
	return nil
}

// webRestore restores a session from the trash and opens it.
func (s *Server) webRestore(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkForm(w, r); err != nil {
		return err
	}
	key, err := s.sessionKey(r)
	if err != nil {
		return err
	}
	if _, err := recall.NewSession(s.store, key).Restore(r.Context()); err != nil {
		return sessionErr(err, key)
	}
	s.record(r, audit.ActionRestore, key, map[string]string{"via": "web"})
	http.Redirect(w, r, "/s/"+url.PathEscape(key.Session), http.StatusSeeOther)
	return nil
}
