package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/internal/storewire"
	"github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/secrets"
)

// AuthMode says how requests are authenticated.
type AuthMode string

const (
	// AuthToken requires a bearer token made by CreateToken on every
	// request but /healthz, /readyz and /metrics. It is the default.
	AuthToken AuthMode = "token"
	// AuthNone serves every request as the single user DefaultUser, who
	// owns every project of the store (the server's own aside): the
	// sessions of a home, under the projects the home gives them, with
	// the Conversations API's in "user.local". It is
	// meant for a server on a loopback address only, and answers only to
	// this machine's host names (see Options.AllowedHosts) and to no
	// write a web page of another origin could send.
	AuthNone AuthMode = "none"
)

// DefaultUser is the user every request is served as under AuthNone.
const DefaultUser = "local"

// Options configures a Server. The zero Options is a token-authenticated
// server with the defaults below.
type Options struct {
	// Auth is the authentication mode. Default: AuthToken.
	Auth AuthMode
	// AllowedHosts are the host names, besides localhost, 127.0.0.0/8
	// and [::1], that a request may name in its Host header under
	// AuthNone (a name in /etc/hosts, a proxy's), with or without a
	// port. Any other Host is refused (403), so that a web page cannot
	// reach the server by pointing its own name at 127.0.0.1 (DNS
	// rebinding). Unused under AuthToken.
	AllowedHosts []string
	// Logger receives one structured line per request and the errors
	// the server recovers from. Default: slog.Default().
	Logger *slog.Logger
	// Registerer is where the server's Prometheus metrics are registered;
	// /metrics serves Gatherer. Default: a new registry of the server's
	// own, serving both.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// RateLimit and Burst limit each user's requests (per server
	// process). Default: 50 requests a second, bursts of 100. A negative
	// RateLimit turns limiting off.
	RateLimit rate.Limit
	Burst     int
	// TokenTTL is how long a Server keeps a token it has verified before
	// asking the store again. A token revoked by RevokeToken in this
	// process is refused at once; one revoked by another process (recall
	// token revoke, another replica) is refused here within TokenTTL.
	// Default: DefaultTokenTTL (5s). A negative TokenTTL looks every
	// request's token up in the store.
	TokenTTL time.Duration
	// MaxBodyBytes is the largest request body accepted (413 over it).
	// Default: the store's item limit plus room for the envelope.
	MaxBodyBytes int64
	// Compactor compacts sessions for POST
	// /api/v1/sessions/{id}/compact. Default: nil, and that route
	// answers that no model is configured.
	Compactor compact.Compactor

	// Upstream is the base URL (ending in /v1 for most servers, e.g.
	// http://localhost:11434/v1 for Ollama) of the OpenAI-compatible
	// model server that POST /v1/responses relays to, with recall keeping
	// the conversations (see responses.go). Default: "", and the server
	// has no such route (404).
	Upstream string
	// UpstreamAPI is the upstream's wire API: openai.APIResponses or
	// openai.APIChat. Default: as openai.ResolveAPI picks (the Responses
	// API for api.openai.com, Chat Completions for any other server).
	UpstreamAPI openai.API
	// UpstreamKey is sent to the upstream as a bearer token. Default: none.
	UpstreamKey string
	// UpstreamClient sends the upstream requests; the server uses a copy
	// that follows no redirect (one is answered as a 502). Default: a
	// client of its own, without an overall timeout (a stream lasts as
	// long as the model writes; a client that goes away cancels it).
	UpstreamClient *http.Client
	// TrashGrace is how long a deleted session stays in the trash,
	// restorable (POST /api/v1/sessions/{id}/restore), before the server
	// deletes it for good: each delete sweeps the user's trash of what
	// has been there longer. Default: recall.DefaultTrashGrace (30 days).
	// A negative TrashGrace never sweeps (recall gc --grace still does).
	TrashGrace time.Duration
	// ContextTokens is the context a model takes, estimated at 4 bytes of
	// JSON a token. When a conversation's view plus a request's input is
	// over it, POST /v1/responses compacts the conversation with
	// Compactor first and sends the compacted view. Default: 0, no limit.
	ContextTokens int
	// AuditRetention is how long the audit log (package audit) keeps an
	// event: the server removes older days of it, at most once an hour.
	// Default (0): DefaultAuditRetention. Negative: forever.
	AuditRetention time.Duration
	// RetentionEvery is how often the server applies the store's
	// retention policy (package retention; PUT /api/v1/policy sets it)
	// and empties the trash of what is past TrashGrace. Of the replicas
	// that serve one store, one at a time does (the one that holds the
	// store's lease). Default (0): DefaultRetentionEvery. Negative: never
	// (recall gc still applies the policy).
	RetentionEvery time.Duration
	// NoShare turns share links off: POST …/share is refused (403) and
	// every /share/ link answers 404, those made before included.
	NoShare bool
	// Redactor finds the secrets POST /api/v1/sessions/{id}/redact
	// removes. Default (nil): secrets' default rules.
	Redactor *secrets.Redactor
	// StorePage is the most entries, items or sessions one answer of the
	// store routes (/api/v1/store/…, package remotestore's) holds: a
	// bigger read is answered a page at a time, and the client pages on.
	// Default (0), and the most it can be: storewire.MaxEntries (1,000).
	StorePage int
}

// ErrBadOptions reports Options New cannot serve with.
var ErrBadOptions = errors.New("server: bad options")

// Server is an http.Handler serving one store. Make it with New.
type Server struct {
	store recall.Store
	opts  Options
	log   *slog.Logger
	mux   *http.ServeMux
	h     http.Handler // mux wrapped in the middleware
	ops   *ops         // the middleware's state: limiters, metrics
	up    *upstream    // where POST /v1/responses goes; nil: nowhere
	auth  *tokenCache  // the tokens verified lately

	projectCache projectCache // the store's projects, read lately

	watches watches  // the pollers of the sessions open pages watch
	ids     idPlaces // where the items with own ids this process showed sit
	taken   takenIDs // the own ids of conversations, for adding items
	audit   auditState
	replica string // this process, as a lease's holder

	redactor func() (*secrets.Redactor, error) // Options.Redactor, or the default built once

	// The background work (see background), which Close cancels and
	// waits for.
	bgMu     sync.Mutex
	bg       sync.WaitGroup
	bgCtx    context.Context
	bgCancel context.CancelFunc
}

// New returns a Server over store. The store stays the caller's to close.
func New(ctx context.Context, store recall.Store, opts Options) (*Server, error) {
	if store == nil {
		return nil, errors.Join(ErrBadOptions, errors.New("server: nil store"))
	}
	if opts.Auth == "" {
		opts.Auth = AuthToken
	}
	if opts.Auth != AuthToken && opts.Auth != AuthNone {
		return nil, errors.Join(ErrBadOptions, errors.New("server: auth must be token or none"))
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StorePage <= 0 || opts.StorePage > storewire.MaxEntries {
		opts.StorePage = storewire.MaxEntries
	}
	up, err := newUpstream(opts)
	if err != nil {
		return nil, err
	}
	s := &Server{store: store, opts: opts, log: opts.Logger, mux: http.NewServeMux(), up: up, auth: newTokenCache(opts.TokenTTL)}
	s.bgCtx, s.bgCancel = context.WithCancel(context.WithoutCancel(ctx))
	s.watches.s = s
	s.redactor = sync.OnceValues(func() (*secrets.Redactor, error) {
		if opts.Redactor != nil {
			return opts.Redactor, nil
		}
		return secrets.New(secrets.Options{})
	})
	if err := s.init(ctx); err != nil {
		return nil, err
	}
	s.conversationRoutes()
	s.responseRoutes()
	s.apiRoutes()
	s.opsRoutes()
	s.mcpRoutes()
	s.webRoutes()
	s.h = s.middleware(s.mux)
	s.replica = replicaName()
	s.startRetention()
	st := s.store
	s.background(func(ctx context.Context) {
		if err := IndexShares(ctx, st); err != nil && ctx.Err() == nil {
			s.log.ErrorContext(ctx, "share links: the links of an earlier version were not indexed", "err", err)
		}
	})
	return s, nil
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.h.ServeHTTP(w, r) }

// Close stops the work the server does in the background, between
// requests (the sweep of old idempotency records, the pollers of the
// sessions open pages watch), and waits for it to
// return. Call it after the http.Server's Shutdown and before closing the
// store; requests served after Close are answered, but start no more
// background work.
func (s *Server) Close() error {
	s.bgMu.Lock()
	s.bgCancel()
	s.bgMu.Unlock()
	s.bg.Wait()
	return nil
}

// background runs fn in a goroutine of its own, with a context that Close
// cancels, and reports whether it did: after Close it runs nothing.
func (s *Server) background(fn func(ctx context.Context)) bool {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bgCtx.Err() != nil {
		return false
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		fn(s.bgCtx)
	}()
	return true
}
