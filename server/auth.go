package server

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/time/rate"
)

// The defaults of Options.RateLimit and Options.Burst.
const (
	DefaultRateLimit rate.Limit = 50
	DefaultBurst     int        = 100
)

// opsPaths are served to anyone, without a token and without a rate
// limit: a load balancer's probes and Prometheus' scraper carry none.
var opsPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// authenticate puts the request's user in its context. Under AuthToken
// it needs "Authorization: Bearer <token>" with a token of the store
// (see CreateToken; verified through the Server's cache of verified
// tokens, auth_tokencache.go), and answers 401 in OpenAI's shape when it
// is missing, malformed, unknown or revoked; under AuthNone every request
// is the local user's (localUser).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if opsPaths[r.URL.Path] || strings.HasPrefix(r.URL.Path, "/share/") { // a share link needs no token
			next.ServeHTTP(w, r)
			return
		}
		if isWebPath(r.URL.Path) { // the web viewer: a session cookie (web.go)
			s.authenticateWeb(w, r, next)
			return
		}
		u := localUser
		if s.opts.Auth == AuthToken {
			token, ok := bearer(r.Header.Get("Authorization"))
			if !ok {
				s.unauthorized(w, r, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY). Create one with 'recall token create'.")
				return
			}
			var err error
			u, err = s.auth.authenticate(r.Context(), s.store, clientAddr(r), token)
			if errors.Is(err, ErrUnauthorized) {
				s.unauthorized(w, r, "Incorrect API key provided. Create one with 'recall token create'.")
				return
			}
			if err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		serveAs(w, r, next, u)
	})
}

// serveAs serves the request to next as the user u, who is named in its
// log line too. A read-only user's request that is not a GET or HEAD (a
// write, through any API or the viewer, whose sign-out alone is let
// through) is refused with 403.
func serveAs(w http.ResponseWriter, r *http.Request, next http.Handler, u User) {
	infoFrom(r.Context()).user = u.Name
	if u.ReadOnly && r.Method != http.MethodGet && r.Method != http.MethodHead && r.URL.Path != "/signout" {
		writeJSON(w, http.StatusForbidden, struct {
			Error *APIError `json:"error"`
		}{&APIError{Message: "This token is read-only: it cannot write. Create one without --read-only to write.",
			Type: "permission_error", Code: "read_only_token"}})
		return
	}
	next.ServeHTTP(w, r.WithContext(withUser(r.Context(), u)))
}

func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="recall"`)
	s.writeError(w, r, &APIError{Status: http.StatusUnauthorized, Message: msg, Type: "invalid_request_error", Code: "invalid_api_key"})
}

// clientAddr is the IP address the request came from (the proxy's, behind
// a reverse proxy).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
// The scheme is case-insensitive (RFC 9110).
func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// limiters holds one token bucket per user. They live in this process
// only: N replicas allow a user N times the rate, which the README says.
type limiters struct {
	limit rate.Limit
	burst int
	users sync.Map // user name → *rate.Limiter; read without a lock
}

func newLimiters(limit rate.Limit, burst int) *limiters {
	if limit == 0 {
		limit = DefaultRateLimit
	}
	if burst <= 0 {
		burst = DefaultBurst
	}
	return &limiters{limit: limit, burst: burst}
}

func (l *limiters) get(user string) *rate.Limiter {
	if lim, ok := l.users.Load(user); ok {
		return lim.(*rate.Limiter)
	}
	lim, _ := l.users.LoadOrStore(user, rate.NewLimiter(l.limit, l.burst))
	return lim.(*rate.Limiter)
}

// rateLimit answers 429 with Retry-After (whole seconds, at least 1) to
// a user over their rate; a negative Options.RateLimit turns it off.
func (s *Server) rateLimit(next http.Handler) http.Handler {
	if s.ops.limiters.limit < 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok := userFrom(r.Context())
		if !ok { // an ops path: not limited
			next.ServeHTTP(w, r)
			return
		}
		res := s.ops.limiters.get(u.Name).Reserve()
		if d := res.Delay(); d > 0 {
			res.Cancel()
			s.writeError(w, r, &APIError{Status: http.StatusTooManyRequests, Type: "requests", Code: "rate_limit_exceeded", RetryAfter: d,
				Message: "Rate limit reached for user " + u.Name + ": " + strconv.FormatFloat(float64(s.ops.limiters.limit), 'g', -1, 64) +
					" requests a second, bursts of " + strconv.Itoa(s.ops.limiters.burst) + ". Please retry after the time in the Retry-After header."})
			return
		}
		next.ServeHTTP(w, r)
	})
}
