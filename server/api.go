package server

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/sessionjson"
	"github.com/recallkit/recall/server/audit"
)

// recall's own API, under /api/v1: what the Conversations API lacks.
//
// A session here is the same thing as a conversation there, named by the
// same id ("conv_…"). A user's sessions are in the user's projects (see
// User): the Conversations API's in the default one, synced and imported
// ones in the projects their homes gave them. Listings and searches span
// every project of the user's, or the one ?project= names; a session's
// routes take ?project= too, and find a session by its id alone in the
// default project first. Another user's session, or project, is a 404 on
// every route. An admin may list every user's
// sessions (?user=NAME, or ?all=true for all of them) and remove them
// (DELETE …?user=NAME), but every other route serves only the admin's own
// sessions: an admin cannot read another user's items. The server's own
// projects (ReservedPrefix: tokens, idempotency records) are never listed.
//
// Errors are OpenAI's shape, as under /v1.

// openAPI is the OpenAPI 3.1 document of both APIs, served at
// /api/v1/openapi.json.
//
//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the server's two APIs.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

// apiRoutes registers recall's /api/v1.
func (s *Server) apiRoutes() {
	s.mux.HandleFunc("GET /api/v1/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		writeRawJSON(w, http.StatusOK, openAPI)
	})
	s.mux.HandleFunc("GET /api/v1/me", s.api(s.me))
	s.mux.HandleFunc("GET /api/v1/audit", s.api(s.auditLog))
	s.mux.HandleFunc("POST /api/v1/sessions/{session_id}/share", s.api(s.idempotent(s.createShare)))
	s.mux.HandleFunc("GET /api/v1/shares", s.api(s.listShares))
	s.mux.HandleFunc("DELETE /api/v1/shares/{share_id}", s.api(s.revokeShare))
	s.mux.HandleFunc("GET /api/v1/policy", s.api(s.getPolicy))
	s.mux.HandleFunc("PUT /api/v1/policy", s.api(s.idempotent(s.putPolicy)))
	s.mux.HandleFunc("GET /api/v1/projects", s.api(s.listProjects))
	s.mux.HandleFunc("GET /api/v1/sessions", s.api(s.listSessions))
	s.mux.HandleFunc("GET /api/v1/search", s.api(s.search))
	s.mux.HandleFunc("GET /api/v1/sessions/{session_id}", s.api(s.getSession))
	s.mux.HandleFunc("PATCH /api/v1/sessions/{session_id}", s.api(s.updateSession))
	s.mux.HandleFunc("DELETE /api/v1/sessions/{session_id}", s.api(s.deleteSession))
	s.mux.HandleFunc("POST /api/v1/sessions/{session_id}/fork", s.api(s.idempotent(s.forkSession)))
	s.mux.HandleFunc("GET /api/v1/sessions/{session_id}/entries", s.api(s.sessionEntries))
	s.mux.HandleFunc("GET /api/v1/sessions/{session_id}/usage", s.api(s.sessionUsage))
	s.mux.HandleFunc("GET /api/v1/sessions/{session_id}/subagents", s.api(s.sessionSubagents))
	s.mux.HandleFunc("GET /api/v1/sessions/{session_id}/export", s.api(s.exportSession))
	s.mux.HandleFunc("POST /api/v1/sessions/{session_id}/compact", s.api(s.idempotent(s.compactSession)))
	s.mux.HandleFunc("POST /api/v1/sessions/{session_id}/rewind", s.api(s.idempotent(s.rewindSession)))
	s.mux.HandleFunc("POST /api/v1/sessions/{session_id}/redo", s.api(s.idempotent(s.redoSession)))
	s.mux.HandleFunc("POST /api/v1/sessions/{session_id}/redact", s.api(s.idempotent(s.redactSession)))
	s.mux.HandleFunc("GET /api/v1/trash", s.api(s.listTrash))
	s.mux.HandleFunc("POST /api/v1/sessions/{session_id}/restore", s.api(s.restoreSession))
	s.storeRoutes()
}

// session is a session as /api/v1 shows it. The fields from created to
// metadata are the ones the CLI's --json shows too (sessionjson.Fields).
type session struct {
	ID          string `json:"id"`
	Object      string `json:"object"` // "session"
	Project     string `json:"project"`
	User        string `json:"user"`
	Title       string `json:"title"`
	TitleSource string `json:"title_source,omitempty"`
	sessionjson.Fields
	ForkedFrom *forkOrigin  `json:"forked_from,omitempty"`
	Usage      recall.Usage `json:"usage"`
}

// forkOrigin is where a fork was taken from. ID is left out when the
// origin is not a session of the same user (a session forked by other
// means, from another project).
type forkOrigin struct {
	ID  string `json:"id,omitempty"`
	Seq int64  `json:"seq"`
}

// ownerOf names the user whose project p is: the one in whose namespace
// it is, or the local user (who owns every other project).
func ownerOf(p string) string {
	if name, _, ok := ProjectOwner(p); ok {
		return name
	}
	return DefaultUser
}

func sessionOf(m recall.Meta) session {
	out := session{
		ID:          m.Key.Session,
		Object:      "session",
		Project:     m.Key.Project,
		User:        ownerOf(m.Key.Project),
		Title:       m.Title,
		TitleSource: string(m.TitleSource),
		Fields:      sessionjson.Of(m),
		Usage:       m.Usage,
	}
	if f := m.ForkedFrom; f != nil {
		out.ForkedFrom = &forkOrigin{Seq: f.Seq}
		if f.Key.Project == m.Key.Project && f.Key.IsMain() {
			out.ForkedFrom.ID = f.Key.Session
		}
	}
	return out
}

// apiUser returns the request's user.
func apiUser(r *http.Request) (User, error) {
	u, ok := userFrom(r.Context())
	if !ok {
		return User{}, &APIError{Status: http.StatusUnauthorized, Message: "No user for this request.", Type: "invalid_request_error", Code: "invalid_api_key"}
	}
	return u, nil
}

// sessionMeta reads the metadata of the session the request's path
// names, in one of the user's projects (see sessionKey). Its error is one
// the API and the web pages write as it is: a 404 for a bad id, a project
// not the user's, or a missing session, or one in the trash.
func (s *Server) sessionMeta(r *http.Request) (recall.Meta, error) {
	key, err := s.pathKey(r)
	if err != nil {
		return recall.Meta{}, err
	}
	m, err := s.stat(r.Context(), key)
	if errors.Is(err, recall.ErrNotFound) && r.URL.Query().Get("project") == "" {
		if key, err = s.elsewhere(r.Context(), key); err == nil {
			m, err = s.stat(r.Context(), key)
		}
	}
	if err != nil {
		return recall.Meta{}, sessionErr(err, key)
	}
	return m, nil
}

// sessionKey returns the key of the session the path names: in the
// project ?project= names, which must be one of the user's; without it,
// in the user's default project when it is there, else in the first
// other project of the user's that holds it. An id that is not a valid
// session ID never reaches the store: it is a 404, as is a project that
// is not the user's (whether it exists or not: nothing is revealed).
func (s *Server) sessionKey(r *http.Request) (recall.Key, error) {
	key, err := s.pathKey(r)
	if err != nil || r.URL.Query().Get("project") != "" {
		return key, err
	}
	if _, err := s.store.Stat(r.Context(), key); !errors.Is(err, recall.ErrNotFound) {
		return key, nil // there, or an error the caller meets again
	}
	return s.elsewhere(r.Context(), key)
}

// sessionBody returns the key of the session the path names (sessionKey)
// and reads the request's JSON body into body.
func (s *Server) sessionBody(w http.ResponseWriter, r *http.Request, body any) (recall.Key, error) {
	key, err := s.sessionKey(r)
	if err != nil {
		return key, err
	}
	return key, s.readJSON(w, r, body)
}

// pathKey is the key the path and ?project= name, without looking
// elsewhere (see sessionKey).
func (s *Server) pathKey(r *http.Request) (recall.Key, error) {
	u, err := apiUser(r)
	if err != nil {
		return recall.Key{}, err
	}
	id := r.PathValue("session_id")
	if recall.ValidateID(id) != nil {
		return recall.Key{}, sessionNotFound(id)
	}
	key := recall.Key{Project: u.Project(), Session: id}
	if p := r.URL.Query().Get("project"); p != "" {
		if !u.owns(p) {
			return recall.Key{}, sessionNotFound(id)
		}
		key.Project = p
	}
	return key, nil
}

// elsewhere looks for the session of key, missing from key's project, in
// the user's other projects, sorted by name; it returns key itself when
// none holds it.
func (s *Server) elsewhere(ctx context.Context, key recall.Key) (recall.Key, error) {
	u, _ := userFrom(ctx)
	ps, err := s.projects(ctx, u)
	if err != nil {
		return key, err
	}
	for _, p := range ps {
		k := recall.Key{Project: p.Project, Session: key.Session}
		if p.Project == key.Project {
			continue
		}
		if _, err := s.store.Stat(ctx, k); err == nil {
			return k, nil
		} else if !errors.Is(err, recall.ErrNotFound) {
			return key, err
		}
	}
	return key, nil
}

func sessionNotFound(id string) *APIError {
	return &APIError{Status: http.StatusNotFound, Message: "Session with id '" + shorten(id) + "' not found.",
		Type: "invalid_request_error", Param: "session_id"}
}

// sessionErr turns the store's ErrNotFound into the session's 404.
func sessionErr(err error, key recall.Key) error {
	if errors.Is(err, recall.ErrNotFound) {
		return sessionNotFound(key.Session)
	}
	return err
}

// intParam reads an integer query parameter in [min, max]; def when it
// is absent.
func intParam(r *http.Request, name string, def, min, max int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < min || n > max {
		return 0, invalidParam(name, "Invalid '%s': %q; expected an integer from %d to %d.", name, shorten(v), min, max)
	}
	return n, nil
}

// boolParam reads a boolean query parameter ("true"/"false"/"1"/"0").
func boolParam(r *http.Request, name string) (bool, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalidParam(name, "Invalid '%s': %q; expected true or false.", name, shorten(v))
	}
	return b, nil
}

// timeRange reads the since and until query parameters (timeParam).
func timeRange(q url.Values) (since, until time.Time, err error) {
	if since, err = timeParam(q, "since"); err != nil {
		return since, until, err
	}
	until, err = timeParam(q, "until")
	return since, until, err
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	u, err := apiUser(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Object   string `json:"object"`
		User     string `json:"user"`
		Admin    bool   `json:"admin"`
		ReadOnly bool   `json:"read_only"`
	}{"user", u.Name, u.Admin, u.ReadOnly})
	return nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	m, err := s.sessionMeta(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, sessionOf(m))
	return nil
}

// sessionUpdate is the body of PATCH /api/v1/sessions/{id}: every field
// is optional, and only those present change.
type sessionUpdate struct {
	Title    *string   `json:"title"`
	Pinned   *bool     `json:"pinned"`
	Archived *bool     `json:"archived"`
	Labels   *[]string `json:"labels"`
}

// check refuses an update that changes nothing or sets a field beyond
// its bounds.
func (u sessionUpdate) check() error {
	if u.Title == nil && u.Pinned == nil && u.Archived == nil && u.Labels == nil {
		return invalidParam("", "Nothing to change: send one or more of title, pinned, archived and labels.")
	}
	if u.Labels != nil {
		if len(*u.Labels) > maxLabels {
			return invalidParam("labels", "At most %d labels.", maxLabels)
		}
		for i, l := range *u.Labels {
			if l == "" || len(l) > maxLabelLen {
				return invalidParam(fmt.Sprintf("labels[%d]", i), "Invalid label %q: 1 to %d bytes.", shorten(l), maxLabelLen)
			}
		}
	}
	return checkTitle(u.Title)
}

// checkTitle refuses a title (nil: none given) over maxTitleLen.
func checkTitle(title *string) error {
	if title != nil && len(*title) > maxTitleLen {
		return invalidParam("title", "The title is longer than %d bytes.", maxTitleLen)
	}
	return nil
}

// updateSession renames, pins or unpins, archives or unarchives, and
// relabels a session. The pin, archive and label changes are one entry,
// written at once; a title is one entry more.
func (s *Server) updateSession(w http.ResponseWriter, r *http.Request) error {
	var body sessionUpdate
	key, err := s.sessionBody(w, r, &body)
	if err != nil {
		return err
	}
	if err := body.check(); err != nil {
		return err
	}
	// Each change is guarded by the session's existence (IfExists), so a
	// missing session is a 404 and a removed one is never brought back;
	// one in the trash is a 404 too.
	ctx := r.Context()
	m, err := s.stat(ctx, key)
	if err != nil {
		return sessionErr(err, key)
	}
	if body.Pinned != nil || body.Archived != nil || body.Labels != nil {
		c := recall.MetaChange{Pinned: body.Pinned, Archived: body.Archived}
		if body.Labels != nil {
			c.Labels, c.SetLabels = *body.Labels, true
		}
		if m, err = recall.NewSession(s.store, key).ChangeMeta(ctx, c); err != nil {
			return sessionErr(err, key)
		}
	}
	if body.Title != nil {
		if m, err = recall.NewSession(s.store, key).SetTitle(ctx, *body.Title, recall.TitleUser); err != nil {
			return sessionErr(err, key)
		}
	}
	writeJSON(w, http.StatusOK, sessionOf(m))
	return nil
}

// The bounds of what PATCH sets.
const (
	maxTitleLen = 1024
	maxLabels   = 64
	maxLabelLen = 256
)

// userSessionKey is sessionKey, but for an admin's ?user=NAME, which
// names that user's session: anyone else naming another user gets a 404,
// never a 403, so nothing is revealed.
func (s *Server) userSessionKey(r *http.Request) (recall.Key, error) {
	key, err := s.sessionKey(r)
	if err != nil {
		return key, err
	}
	if name := r.URL.Query().Get("user"); name != "" {
		u, _ := apiUser(r)
		if name != u.Name && !u.Admin || ValidateUser(name) != nil {
			return key, sessionNotFound(key.Session)
		}
		key.Project = User{Name: name}.Project()
	}
	return key, nil
}

// deleteSession removes a session with its subagent records. An admin
// removes another user's with ?user=NAME.
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	key, err := s.userSessionKey(r)
	if err != nil {
		return err
	}
	force, err := boolParam(r, "force")
	if err != nil {
		return err
	}
	purge, err := boolParam(r, "purge")
	if err != nil {
		return err
	}
	// A session in the trash is gone but to purge=true.
	m, err := s.store.Stat(r.Context(), key)
	if err == nil && !m.Trashed.IsZero() && !purge {
		err = recall.ErrNotFound
	}
	if err != nil {
		return sessionErr(err, key)
	}
	// A pinned session goes only with force=true, as recall rm needs --force.
	if !force && m.Pinned {
		return &APIError{Status: http.StatusConflict, Type: "invalid_request_error", Code: "session_pinned", NoRetry: true,
			Message: "The session is pinned: unpin it first, or delete it with force=true."}
	}
	if err := s.deleteOrTrash(r.Context(), key, purge); err != nil {
		return sessionErr(err, key)
	}
	action := audit.ActionDelete // to the trash
	if purge {
		action = audit.ActionPurge // for good
	}
	s.record(r, action, key, nil)
	writeDeleted(w, key.Session, "session.deleted")
	return nil
}

// sessionUsage answers the session's token usage totals.
func (s *Server) sessionUsage(w http.ResponseWriter, r *http.Request) error {
	m, err := s.sessionMeta(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Object string `json:"object"`
		ID     string `json:"id"`
		recall.Usage
	}{"session.usage", m.Key.Session, m.Usage})
	return nil
}
