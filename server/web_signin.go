package server

import (
	"errors"
	"net/http"
	"path"
	"strings"
	"unicode"
)

// The viewer's sign-in page: a token in, a session cookie out.

func (s *Server) webSignInPage(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Auth == AuthNone {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return nil
	}
	s.signInPage(w, r, http.StatusOK, safeNext(r.URL.Query().Get("next")), "")
	return nil
}

// signInPage answers the sign-in form with status, going on to next once
// signed in, with the error msg ("" for none).
func (s *Server) signInPage(w http.ResponseWriter, r *http.Request, status int, next, msg string) {
	s.render(w, r, status, "signin.html", struct {
		pageBase
		Next  string
		Error string
	}{pageBase{PageTitle: "Sign in"}, next, msg})
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

func (s *Server) webSignIn(w http.ResponseWriter, r *http.Request) error {
	if s.opts.Auth == AuthNone {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return nil
	}
	if !sameOrigin(r) {
		return pageError(http.StatusForbidden, "The sign-in form was sent from another site.")
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	next := safeNext(r.PostFormValue("next"))
	if _, err := s.auth.authenticate(r.Context(), s.store, clientAddr(r), token); err != nil {
		if !errors.Is(err, ErrUnauthorized) {
			return err
		}
		s.signInPage(w, r, http.StatusUnauthorized, next, "That token is not valid. Create one with 'recall token create --user NAME'.")
		return nil
	}
	setCookie(w, r, sessionCookie, token, sessionCookieAge)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

func (s *Server) webSignOut(w http.ResponseWriter, r *http.Request) error {
	if !s.checkCSRF(r) {
		return pageError(http.StatusForbidden, "The form had expired; reload the page and try again.")
	}
	clearCookie(w, r, sessionCookie)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
	return nil
}
