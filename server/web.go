package server

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The web viewer: pages for people, served at / next to the APIs (see
// web_pages.go for the pages, web_render.go for how items are shown and
// web_live.go for live updates).
//
// Who: the same users and tokens as the APIs. /signin takes a token and
// keeps it in a session cookie (HttpOnly, SameSite=Strict, Secure when
// served over TLS), so the server stays stateless: any replica reads the
// cookie as it reads a bearer token. The pages accept only the cookie;
// the APIs only the Authorization header, as before.
//
// Hostile content is inert: every page carries a strict
// Content-Security-Policy (scripts from /static only, no inline script,
// no eval, images from /static and data: URIs), frame denial,
// X-Content-Type-Options and Referrer-Policy; content is escaped by
// html/template, Markdown is sanitized by bluemonday; every POST carries
// a CSRF token bound to the session cookie and is checked, with the
// Origin header when the browser sends one.

// Cookie names.
const (
	sessionCookie = "recall_session"
	csrfCookie    = "recall_csrf" // under AuthNone only: the secret CSRF tokens derive from
)

// sessionCookieAge is how long a browser keeps a sign-in.
const sessionCookieAge = 30 * 24 * time.Hour

// contentSecurityPolicy is sent with every page.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// isWebPath reports whether a path is the web viewer's: those are
// authenticated by cookie rather than by bearer token.
func isWebPath(p string) bool {
	return p == "/" || p == "/signin" || p == "/signout" ||
		strings.HasPrefix(p, "/static/") || strings.HasPrefix(p, "/s/") ||
		p == "/trash" || strings.HasPrefix(p, "/trash/")
}

// securityHeaders sets the headers every page and asset carries.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // not no-referrer: under it a form POST's Origin is "null"
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// authenticateWeb is authenticate for the web viewer's paths: the user
// comes from the session cookie (or is DefaultUser under AuthNone). A
// page without a valid cookie redirects to /signin; the sign-in page and
// the static assets need none.
func (s *Server) authenticateWeb(w http.ResponseWriter, r *http.Request, next http.Handler) {
	securityHeaders(w.Header())
	public := r.URL.Path == "/signin" || strings.HasPrefix(r.URL.Path, "/static/")
	if s.opts.Auth == AuthNone {
		serveAs(w, r, next, localUser)
		return
	}
	if public {
		next.ServeHTTP(w, r)
		return
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		s.toSignIn(w, r)
		return
	}
	u, err := s.auth.authenticate(r.Context(), s.store, clientAddr(r), c.Value)
	if errors.Is(err, ErrUnauthorized) {
		clearCookie(w, r, sessionCookie)
		s.toSignIn(w, r)
		return
	}
	if err != nil {
		s.webError(w, r, err)
		return
	}
	serveAs(w, r, next, u)
}

// toSignIn sends a browser without a valid session to the sign-in page,
// remembering where it was going (a GET only; anything else is a 401).
func (s *Server) toSignIn(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.webStatus(w, r, http.StatusUnauthorized, "Sign in first.")
		return
	}
	target := "/signin"
	if r.URL.Path != "/" {
		target += "?next=" + url.QueryEscape(r.URL.RequestURI())
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// isTLS reports whether the request came over TLS, directly or, as a
// proxy in front says, before it.
func isTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

func setCookie(w http.ResponseWriter, r *http.Request, name, value string, age time.Duration) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/", MaxAge: int(age.Seconds()),
		HttpOnly: true, Secure: isTLS(r), SameSite: http.SameSiteStrictMode})
}

func clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: isTLS(r), SameSite: http.SameSiteStrictMode})
}

// csrfToken returns the CSRF token of the request's browser session: an
// HMAC of the session cookie (the token), which a page on another origin
// can neither read nor compute. Under AuthNone, where there is no
// cookie of the user's, a random secret is kept in a cookie of its own
// (set here when missing).
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	secret := ""
	if c, err := r.Cookie(sessionCookie); err == nil && s.opts.Auth == AuthToken {
		secret = c.Value
	} else if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 32 {
		secret = c.Value
	} else {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		secret = hex.EncodeToString(b)
		setCookie(w, r, csrfCookie, secret, sessionCookieAge)
		r.AddCookie(&http.Cookie{Name: csrfCookie, Value: secret})
	}
	return csrfOf(secret)
}

func csrfOf(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("recall web csrf v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// checkCSRF reports whether a state-changing request is the viewer's
// own: its form field (or X-CSRF-Token header) matches the session's
// token, and its Origin, when sent, is this server.
func (s *Server) checkCSRF(r *http.Request) bool {
	if !sameOrigin(r) {
		return false
	}
	secret := ""
	if c, err := r.Cookie(sessionCookie); err == nil && s.opts.Auth == AuthToken {
		secret = c.Value
	} else if c, err := r.Cookie(csrfCookie); err == nil {
		secret = c.Value
	}
	if secret == "" {
		return false
	}
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(csrfOf(secret))) == 1
}

// checkForm bounds the body of a form a session page or the trash sends
// (64 KiB) and refuses, as a 403, one that is not the viewer's own
// (checkCSRF).
func (s *Server) checkForm(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if !s.checkCSRF(r) {
		return pageError(http.StatusForbidden, "The form had expired or came from another site; reload the page and try again.")
	}
	return nil
}

// sameOrigin reports whether the request's Origin header, when present,
// names the host it was sent to.
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return r.Header.Get("Sec-Fetch-Site") == "" || r.Header.Get("Sec-Fetch-Site") == "same-origin"
	}
	u, err := url.Parse(o)
	return err == nil && u.Host == r.Host
}
