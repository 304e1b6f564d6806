package server

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	ages "github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/server/audit"
)

// shareRequest is the body of POST …/share; every field is optional.
type shareRequest struct {
	// ExpiresIn is how long the link works: an age ("7d", "12h") or
	// "never". Default: DefaultShareExpiry.
	ExpiresIn string `json:"expires_in"`
	// Live shows the session as it is when the link is opened; by
	// default the link shows it as it is now.
	Live bool `json:"live"`
}

// shareAnswer is a link as the API answers it; Token and URL only when
// it is made.
type shareAnswer struct {
	Object string `json:"object"` // "share"
	Share
	Token string `json:"token,omitempty"`
	URL   string `json:"url,omitempty"` // the link's path: /share/TOKEN
	Live  bool   `json:"live"`
}

func answerOf(sh Share) shareAnswer {
	return shareAnswer{Object: "share", Share: sh, Live: sh.AtSeq == 0}
}

// errSharingOff answers a share request when Options.NoShare is set.
var errSharingOff = &APIError{Status: http.StatusForbidden, Type: "permission_error", Code: "sharing_off", NoRetry: true,
	Message: "Sharing is turned off on this server."}

// createShare makes a share link to a session of the request's user.
func (s *Server) createShare(w http.ResponseWriter, r *http.Request) error {
	if s.opts.NoShare {
		return errSharingOff
	}
	m, err := s.sessionMeta(r)
	if err != nil {
		return err
	}
	var body shareRequest
	if err := s.readJSON(w, r, &body); err != nil {
		return err
	}
	opts := ShareOptions{Live: body.Live, Expires: time.Now().Add(DefaultShareExpiry)}
	switch v := strings.TrimSpace(body.ExpiresIn); v {
	case "":
	case "never":
		opts.Expires = time.Time{}
	default:
		d, err := ages.Parse(v)
		if err != nil {
			return invalidParam("expires_in", "Invalid 'expires_in': %q; an age such as 7d or 12h, or never.", shorten(v))
		}
		opts.Expires = time.Now().Add(d)
	}
	u, _ := apiUser(r)
	token, sh, err := CreateShare(r.Context(), s.store, u.Name, m.Key, opts)
	if err != nil {
		return sessionErr(err, m.Key)
	}
	s.record(r, audit.ActionShare, m.Key, map[string]string{"share": sh.ID, "live": strconv.FormatBool(body.Live)})
	out := answerOf(sh)
	out.Token, out.URL = token, "/share/"+token
	writeJSON(w, http.StatusCreated, out)
	return nil
}

// listShares lists the request's user's links.
func (s *Server) listShares(w http.ResponseWriter, r *http.Request) error {
	u, limit, err := listCaller(r)
	if err != nil {
		return err
	}
	cursor := r.URL.Query().Get("cursor")
	page, err := ListSharePage(r.Context(), s.store, u.Name, limit, cursor)
	if err != nil {
		return cursorErr(err, cursor)
	}
	data := make([]shareAnswer, 0, len(page.Shares))
	for _, sh := range page.Shares {
		data = append(data, answerOf(sh))
	}
	writeJSON(w, http.StatusOK, listOf(data, page.Next))
	return nil
}

// revokeShare revokes one of the request's user's links.
func (s *Server) revokeShare(w http.ResponseWriter, r *http.Request) error {
	u, err := apiUser(r)
	if err != nil {
		return err
	}
	sh, err := RevokeShare(r.Context(), s.store, u.Name, r.PathValue("share_id"))
	if errors.Is(err, ErrNoShare) {
		return &APIError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "share_id", Message: "No such share link."}
	}
	if err != nil {
		return err
	}
	s.record(r, audit.ActionShare, recall.Key{Project: sh.Project, Session: sh.Session}, map[string]string{"share": sh.ID, "revoked": "true"})
	writeDeleted(w, sh.ID, "share.deleted")
	return nil
}

// sharedPage serves a share link: the session's HTML view, as it stood
// when it was shared (or as it is, for a live link), to anyone who has
// the link, with no token. The page runs no script (the export's
// Content-Security-Policy), asks search engines not to index it, and is
// a 404 once the link was revoked or expired, or its session went.
func (s *Server) sharedPage(w http.ResponseWriter, r *http.Request) error {
	notFound := pageError(http.StatusNotFound, "This share link does not exist, was revoked, or has expired.")
	if s.opts.NoShare {
		return notFound
	}
	ctx := r.Context()
	sh, err := OpenShare(ctx, s.store, r.PathValue("token"), time.Now())
	if errors.Is(err, ErrNoShare) {
		return notFound
	}
	if err != nil {
		return err
	}
	key := recall.Key{Project: sh.Project, Session: sh.Session}
	headers := func(h http.Header) {
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", export.CSP)
		h.Set("X-Robots-Tag", "noindex, nofollow")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
	}
	if m, err := s.store.Stat(ctx, key); err != nil || !m.Trashed.IsZero() {
		return notFound
	}
	if sh.AtSeq == 0 {
		return sessionErr(s.streamExport(w, r, export.FormatHTML, key, headers), key)
	}
	sess, err := export.Load(ctx, s.store, key)
	if errors.Is(err, recall.ErrNotFound) {
		return notFound
	}
	if err != nil {
		return err
	}
	for i, e := range sess.Entries {
		if e.Seq > sh.AtSeq {
			sess.Entries = sess.Entries[:i]
			break
		}
	}
	sess.Meta, _ = recall.Replay(key, sess.Entries) // as it stood then
	var b bytes.Buffer
	if err := export.HTML(&b, sess); err != nil {
		return err
	}
	headers(w.Header())
	w.WriteHeader(http.StatusOK)
	_, _ = b.WriteTo(w)
	return nil
}
