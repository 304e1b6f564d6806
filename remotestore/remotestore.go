// Package remotestore is a recall.Store over the HTTP API of recall serve:
// every operation, the optional abilities and search included, is a
// request to the server's store routes (/api/v1/store/…) with a bearer
// token, served by the server's own store in the namespace of the token's
// user.
//
// A project P of the remote store is the project P of the token's user on
// the server (server.UserProject); the user's default project, where the
// Conversations API keeps its conversations, is "user.NAME". Under
// recall serve --auth none (the local viewer) the projects are the home's,
// as named there. The server's own projects are out of reach.
//
// Guards travel with the write and are checked by the server's store in
// the same atomic step as on a local store, so two clients racing with
// recall.IfLastSeq behave exactly as two local writers do. Errors carry
// recall's sentinel errors (recall.ErrNotFound, recall.ErrConflict, …);
// a server that cannot be reached, or answers that its store is down, is
// recall.ErrUnavailable. Big reads page: the server answers at most a page
// a request (server.Options.StorePage), and Load, Entries, Items,
// ReadItems and List read as many pages as they need, Items and ReadItems
// as one snapshot (see ReadItems).
//
// Open it from Go, or from a store URL (https://host, or http:// to a
// loopback host) through package storeurl, which takes the token that
// recall login saved.
package remotestore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

var (
	_ recall.Store              = (*Store)(nil)
	_ recall.Searcher           = (*Store)(nil)
	_ storekit.Forker           = (*Store)(nil)
	_ storekit.ProjectLister    = (*Store)(nil)
	_ storekit.ItemPager        = (*Store)(nil)
	_ storekit.Purger           = (*Store)(nil)
	_ interface{ URL() string } = (*Store)(nil)
)

var (
	// ErrUnauthorized reports a token the server does not accept: none,
	// an unknown, expired or revoked one. `recall login URL` saves a new one.
	ErrUnauthorized = errors.New("remotestore: the server refused the token")
	// ErrForbidden reports a request the token may not make: a write with
	// a read-only token.
	ErrForbidden = errors.New("remotestore: the token may not do this")
	// ErrInsecure reports an http:// URL to a host that is not loopback:
	// the token would cross the network in clear text.
	ErrInsecure = errors.New("remotestore: http:// is for loopback hosts only; use https://")
)

// Options are the settings of a Store.
type Options struct {
	// Token is the bearer token sent with every request. Default: none,
	// which only a server under --auth none accepts.
	Token string
	// Client sends the requests. Default: a client of the package's own
	// with a 10s dial timeout, a 30s wait for an answer's headers and a
	// 2-minute bound on a whole request.
	Client *http.Client
	// Retries is how many times a write whose connection failed before
	// its answer is sent again. A write that may be retried carries an
	// Idempotency-Key, so the server does it once and answers the retry
	// with the first answer; each such write costs the server's store
	// two writes more (the key's record). Default (0): a write is sent
	// once, and one whose connection failed is recall.ErrUnavailable and
	// may or may not have been applied, as with the stores over a
	// database. A read is sent twice at most, whatever Retries says.
	Retries int
}

// Store is a recall.Store served by a recall serve. It is safe for
// concurrent use.
type Store struct {
	base    *url.URL // scheme, host and path prefix; no user info
	token   string
	client  *http.Client
	retries int
	closed  atomic.Bool
}

// Open returns the store of the recall serve at baseURL (https://host[:port][/prefix],
// or http:// to a loopback host). It does not contact the server: a
// server that cannot be reached fails the first operation, with
// recall.ErrUnavailable.
func Open(_ context.Context, baseURL string, opts Options) (*Store, error) {
	u, err := CheckURL(baseURL)
	if err != nil {
		return nil, err
	}
	c := opts.Client
	if c == nil {
		c = defaultClient()
	}
	return &Store{base: u, token: opts.Token, client: c, retries: max(opts.Retries, 0)}, nil
}

// CheckURL parses a server's base URL as Open takes it: https://, or
// http:// to a loopback host only (ErrInsecure otherwise), with no user
// info, query or fragment. The URL it returns has no trailing slash.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("remotestore: server URL: %w", errors.Unwrap(err))
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "", u.Opaque != "":
		return nil, fmt.Errorf("remotestore: server URL %q: expected https://host[:port][/prefix]", Redact(raw))
	case u.User != nil:
		return nil, fmt.Errorf("remotestore: server URL %s: it holds user info; give the token to `recall login`, never in a URL", Redact(raw))
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("remotestore: server URL %s: a query or fragment is not allowed", Redact(raw))
	case u.Scheme == "http" && !IsLoopback(u.Hostname()):
		return nil, fmt.Errorf("%w: %s would send the token unencrypted to %s", ErrInsecure, Redact(raw), u.Hostname())
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// IsLoopback reports whether host (no port) names this machine only:
// localhost, or a loopback address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Redact returns raw with any user info replaced, for messages.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if err != nil {
			return "(an unparsable URL)"
		}
		return raw
	}
	u.User = url.User("REDACTED")
	return u.String()
}

func defaultClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.ResponseHeaderTimeout = 30 * time.Second
	t.MaxIdleConnsPerHost = 16
	return &http.Client{Transport: t, Timeout: 2 * time.Minute}
}

// URL returns the server's base URL, which holds no secret.
func (s *Store) URL() string { return s.base.String() }

// String names the store by its server.
func (s *Store) String() string { return "remotestore " + s.base.String() }

// Close releases the store's idle connections; calls after it return
// recall.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.client.CloseIdleConnections()
	return nil
}

// Me is who the server serves a token as.
type Me struct {
	User     string `json:"user"`
	Admin    bool   `json:"admin"`
	ReadOnly bool   `json:"read_only"`
}

// Me asks the server whom it serves the store's token as (GET
// /api/v1/me): ErrUnauthorized when it refuses the token.
func (s *Store) Me(ctx context.Context) (Me, error) {
	var me Me
	err := s.get(ctx, "who am I", "/api/v1/me", nil, &me)
	return me, err
}
