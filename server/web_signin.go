package server

import (
	"errors"
	"net/http"
	"path"
	"strings"
	"unicode"
)

// The viewer's sign-in page: a token in, a session cookie out.

func (s *Server) webSignInPage(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth == AuthNone {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "signin.html", struct {
		pageBase
		Next  string
		Error string
	}{pageBase{PageTitle: "Sign in"}, safeNext(r.URL.Query().Get("next")), ""})
}

// safeNext keeps a post-sign-in target only when it is a clean path of
// this server's pages: one leading "/", no backslash or control character
// anywhere, no "." or ".." segment (http.Redirect would clean
// "/s/../\\evil.example" to "/\\evil.example", which browsers take for
// another site), and a page of the viewer. Anything else goes to "/".
func safeNext(next string) string {
	p, _, _ := strings.Cut(next, "?")
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsRune(next, '\\') ||
		strings.ContainsFunc(next, unicode.IsControl) || path.Clean(p) != p || !isWebPath(p) {
		return "/"
	}
	return next
}

func (s *Server) webSignIn(w http.ResponseWriter, r *http.Request) {
	if s.opts.Auth == AuthNone {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if !sameOrigin(r) {
		s.webStatus(w, r, http.StatusForbidden, "The sign-in form was sent from another site.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	if _, err := s.auth.authenticate(r.Context(), s.store, clientAddr(r), token); err != nil {
		msg := "That token is not valid. Create one with 'recall token create --user NAME'."
		if !errors.Is(err, ErrUnauthorized) {
			s.webError(w, r, err)
			return
		}
		s.render(w, r, http.StatusUnauthorized, "signin.html", struct {
			pageBase
			Next  string
			Error string
		}{pageBase{PageTitle: "Sign in"}, next, msg})
		return
	}
	setCookie(w, r, sessionCookie, token, sessionCookieAge)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) webSignOut(w http.ResponseWriter, r *http.Request) {
	if !s.checkCSRF(r) {
		s.webStatus(w, r, http.StatusForbidden, "The form had expired; reload the page and try again.")
		return
	}
	clearCookie(w, r, sessionCookie)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}
