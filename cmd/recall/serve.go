package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/time/rate"

	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/provider/offline"
	"github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/server"
	"github.com/recallkit/recall/storeurl"
)

// The http.Server limits of recall serve. The write timeout is generous
// because compaction waits for a model's summary before it answers.
const (
	serveReadHeaderTimeout = 10 * time.Second
	serveReadTimeout       = 2 * time.Minute
	serveWriteTimeout      = 5 * time.Minute
	serveIdleTimeout       = 2 * time.Minute
	serveMaxHeaderBytes    = 64 << 10
)

// serveFlags are the flags of recall serve.
type serveFlags struct {
	addr     string
	auth     string
	rate     float64
	burst    int
	maxBody  int64
	grace    time.Duration
	tokenTTL time.Duration
	// auditKeep is --audit-retention: an age, or "never".
	auditKeep string
	noShare   bool
	// trash is --trash-grace: an age, or "never".
	trash     string
	logFormat string
	hosts     []string // --allowed-host
	open      bool     // --open: open the viewer in a browser
	model     modelFlags
	// upstream, upstreamAPI and contextTokens configure POST /v1/responses.
	upstream      string
	upstreamAPI   string
	contextTokens int
}

func newServeCmd(a *app) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the store over HTTP: OpenAI's Conversations API and recall's /api/v1",
		Long: `Serve the store to many users over HTTP: OpenAI's Conversations API under
/v1 (the official OpenAI SDKs are clients: change only their base URL),
recall's own API under /api/v1 (its OpenAPI document at
/api/v1/openapi.json), and /healthz, /readyz and /metrics.

With --auth token (the default) every request needs a bearer token made by
'recall token create' over the same store; each user sees only their own
projects: the Conversations API's conversations are in the user's default
project, and sessions keep the project of the home they came from.

--auth none is the local viewer: it serves the store (your home, by
default) as the one user "local", who owns every project in it, so the web
viewer at the URL of the start line (--open opens it in a browser), /api/v1
and /mcp show the sessions of 'recall ls --all': those 'recall chat' wrote
and those 'recall import' brought in, under their projects. It is accepted
only on a loopback address; it answers only to the names localhost,
127.0.0.1 and [::1] (add others, such as a name in /etc/hosts, with
--allowed-host) and refuses writes from web pages of other origins, so that
no page the person opens can read or change their sessions.

The server keeps nothing of its own: tokens, idempotency records and
sessions live in the store, so any number of 'recall serve' processes over
one PostgreSQL or Redis store serve the same users as one, behind any load
balancer.

POST /api/v1/sessions/{id}/compact compacts with the model configured as
for 'recall chat' (OPENAI_API_KEY, OPENAI_BASE_URL, RECALL_MODEL or the
flags below); without one, that route answers that no model is set.

With --upstream URL (an OpenAI-compatible model server such as Ollama's
http://localhost:11434/v1 or vLLM's), POST /v1/responses relays OpenAI's
Responses API to it, and a request that names a "conversation" is
answered from the stored conversation and stored to it afterwards: the
OpenAI SDKs get server-side conversation state against a model server
that keeps none. --upstream-api says which API the upstream speaks
(default: responses for api.openai.com, chat for any other server, or
$RECALL_API); OPENAI_API_KEY, when set, is sent to it as the key. When a
conversation plus the input is over --context-tokens (estimated), it is
compacted with the configured model first.

It logs one line on start with the address and the store, then one line a
request, on stderr. SIGINT or SIGTERM stops it gracefully: it takes no new
requests, lets those in flight finish (up to --shutdown-timeout), then
closes the store.`,
		Example: `  recall serve
  recall serve --addr 0.0.0.0:8080 --store postgres://recall@db/recall
  recall serve --auth none --open
  recall serve --upstream http://localhost:11434/v1 --context-tokens 8000`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.serve(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen on `HOST:PORT` (port 0: any free port, logged on start)")
	fl.StringVar(&f.auth, "auth", string(server.AuthToken), "authentication: token (bearer tokens from 'recall token create') or none (loopback only)")
	fl.BoolVar(&f.open, "open", false, "open the web viewer in a browser once listening (with xdg-open, open or the Windows shell, when there is one)")
	fl.StringArrayVar(&f.hosts, "allowed-host", nil, "with --auth none, also answer to the host `NAME` (repeatable; localhost, 127.0.0.1 and [::1] always)")
	fl.Float64Var(&f.rate, "rate-limit", 50, "requests a second allowed to each user, per server process (0: no limit)")
	fl.IntVar(&f.burst, "burst", 100, "requests a user may send at once above --rate-limit")
	fl.Int64Var(&f.maxBody, "max-body", 0, "largest request body in `BYTES` (default: the store's item limit plus room for the envelope)")
	fl.DurationVar(&f.grace, "shutdown-timeout", 30*time.Second, "on SIGINT/SIGTERM, how long requests in flight may take to finish")
	fl.BoolVar(&f.noShare, "no-share", false, "turn share links off: POST …/share is refused and every /share/ link answers 404")
	fl.StringVar(&a.userKeys, "user-keys", "", "seal each user's sessions under its own key, `DIR`/USER.key (with --encrypt-key for the server's own records); removing a user's file makes their sessions unreadable")
	fl.StringVar(&f.auditKeep, "audit-retention", "365d", "how long the audit log ('recall audit') keeps an event: an age such as 90d or 1y, or never")
	fl.DurationVar(&f.tokenTTL, "token-cache", server.DefaultTokenTTL, "how long a verified token is kept before the store is asked again: a token revoked elsewhere is refused within it (0: ask on every request)")
	fl.StringVar(&f.trash, "trash-grace", "30d", "how long a deleted session stays in the trash, restorable, before it is deleted for good (y, w, d, h, m, s; never: keep it)")
	fl.StringVar(&f.logFormat, "log-format", "text", "log lines as text (logfmt) or json")
	fl.StringVar(&f.upstream, "upstream", "", "relay POST /v1/responses to the OpenAI-compatible model server at `URL`, keeping conversations (e.g. http://localhost:11434/v1)")
	fl.StringVar(&f.upstreamAPI, "upstream-api", "", "the upstream's wire API: responses or chat (default $RECALL_API, else responses for OpenAI and chat for other servers)")
	fl.IntVar(&f.contextTokens, "context-tokens", 0, "compact a conversation before relaying it when it and the input are estimated over `N` tokens (0: never)")
	f.model.register(fl)
	return cmd
}

// checkServeAddr refuses a listen address that is not HOST:PORT with a
// valid port, and --auth none on any address that is not loopback.
func checkServeAddr(addr string, auth server.AuthMode) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port) // 0-65535, or a service name
	}
	if err != nil {
		return usageError("--addr takes HOST:PORT, e.g. 127.0.0.1:8080", "--addr %q: %v", addr, err)
	}
	if auth == server.AuthNone && !isLoopback(host) {
		return usageError("use --auth token (create tokens with 'recall token create'), or listen on 127.0.0.1",
			"--auth none is refused on %q: it serves anyone who can connect, so it is allowed on a loopback address only", addr)
	}
	return nil
}

// isLoopback reports whether host (of an --addr) can be reached from this
// machine only: localhost, 127.0.0.0/8 or ::1. An empty host listens on
// every interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (a *app) serve(ctx context.Context, f serveFlags) error {
	auth := server.AuthMode(f.auth)
	if auth != server.AuthToken && auth != server.AuthNone {
		return usageError("use --auth token or --auth none", "--auth %q: unknown mode", f.auth)
	}
	if err := checkServeAddr(f.addr, auth); err != nil {
		return err
	}
	if len(f.hosts) > 0 && auth != server.AuthNone {
		return usageError("drop --allowed-host: a token-authenticated server answers to any host name", "--allowed-host applies to --auth none only")
	}
	if f.rate < 0 || f.burst < 0 || f.maxBody < 0 || f.grace < 0 || f.tokenTTL < 0 {
		return usageError("use 0 or more", "--rate-limit, --burst, --max-body, --shutdown-timeout and --token-cache must not be negative")
	}
	log, err := serveLogger(a.stderr, f.logFormat)
	if err != nil {
		return err
	}
	opts := server.Options{Auth: auth, AllowedHosts: f.hosts, Logger: log, RateLimit: rate.Limit(f.rate), Burst: f.burst, MaxBodyBytes: f.maxBody}
	if f.rate == 0 {
		opts.RateLimit = -1 // server.Options: negative turns limiting off
	}
	if opts.TrashGrace, err = ageOrNever("--trash-grace", f.trash); err != nil {
		return err
	}
	opts.TokenTTL = f.tokenTTL
	if f.tokenTTL == 0 {
		opts.TokenTTL = -1 // server.Options: negative turns the cache off
	}
	opts.NoShare = f.noShare
	if len(a.redactPatterns) > 0 { // POST …/redact uses them too
		if opts.Redactor, err = a.redactor(); err != nil {
			return err
		}
	}
	if opts.AuditRetention, err = ageOrNever("--audit-retention", f.auditKeep); err != nil {
		return err
	}
	if err := f.upstreamOptions(&opts); err != nil {
		return err
	}
	model, err := f.model.build()
	if err != nil {
		return err
	}
	modelLabel := "none (set OPENAI_API_KEY to compact sessions)"
	if _, off := model.model.(offline.Model); !off {
		if opts.Compactor, err = compactor(model.model); err != nil {
			return err
		}
		modelLabel = model.label
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	h, err := server.New(ctx, st, opts)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer h.Close() // after the requests, before the store
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return withHint(fmt.Errorf("serve: %w", err), "choose another --addr, or stop what listens there")
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: serveReadHeaderTimeout,
		ReadTimeout:       serveReadTimeout,
		WriteTimeout:      serveWriteTimeout,
		IdleTimeout:       serveIdleTimeout,
		MaxHeaderBytes:    serveMaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	url := "http://" + ln.Addr().String() + "/"
	log.Info("recall serve listening", "addr", ln.Addr().String(), "url", url,
		"store", a.storeName(), "auth", string(auth), "model", modelLabel, "upstream", upstreamLabel(opts))
	if f.open {
		openBrowser(url, log)
	}
	return serveUntilSignal(ctx, srv, ln, f.grace, log)
}

// openBrowser opens url in the person's browser with the system's opener
// (xdg-open, macOS' open, the Windows shell), without waiting for it; it
// logs why when there is none or it fails: the start line holds the URL.
func openBrowser(url string, log *slog.Logger) {
	name, args := "xdg-open", []string{url}
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler", url}
	}
	path, err := exec.LookPath(name)
	if err == nil {
		cmd := exec.Command(path, args...)
		if err = cmd.Start(); err == nil {
			go func() { _ = cmd.Wait() }()
			return
		}
	}
	log.Warn("no browser opened: open the url of the line above", "opener", name, "error", err)
}

// upstreamOptions sets the upstream of POST /v1/responses from the flags
// and the environment: the API from --upstream-api, else $RECALL_API, else
// as the chat command picks; the key from OPENAI_API_KEY. Unless another
// is named, the upstream is also the model that compacts.
func (f *serveFlags) upstreamOptions(opts *server.Options) error {
	if f.contextTokens < 0 {
		return usageError("use 0 or more", "--context-tokens must not be negative")
	}
	if f.upstream == "" {
		if f.upstreamAPI != "" {
			return usageError("add --upstream URL", "--upstream-api needs --upstream")
		}
		return nil
	}
	api := openai.API(strings.ToLower(strings.TrimSpace(f.upstreamAPI)))
	if api == "" {
		api = openai.ConfigFromEnv().API
	}
	resolved, err := openai.ResolveAPI(f.upstream, api)
	if err != nil {
		return usageError("--upstream takes an http(s) URL such as http://localhost:11434/v1; --upstream-api takes responses or chat", "%v", err)
	}
	opts.Upstream, opts.UpstreamAPI = f.upstream, resolved
	opts.UpstreamKey = os.Getenv("OPENAI_API_KEY")
	opts.ContextTokens = f.contextTokens
	// The model that compacts (for --context-tokens) is the upstream too,
	// unless --base-url or OPENAI_BASE_URL names another.
	if f.model.baseURL == "" && os.Getenv("OPENAI_BASE_URL") == "" {
		f.model.baseURL = f.upstream
		if f.model.api == "" {
			f.model.api = string(resolved)
		}
	}
	return nil
}

// upstreamLabel names the upstream for the start line, without any
// password in its URL.
func upstreamLabel(opts server.Options) string {
	if opts.Upstream == "" {
		return "none"
	}
	return storeurl.Redact(opts.Upstream) + " (" + string(opts.UpstreamAPI) + " API)"
}

// serveUntilSignal serves on ln until SIGINT or SIGTERM (or ctx ends),
// then shuts srv down: the listener closes, requests in flight run to the
// end (for up to grace), idle connections close. Only then does the
// caller close the store, so no request loses its store half-way.
// cutOffWait is how long serve waits, after cutting off the requests
// still running at the end of the grace period, for their handlers to
// return (their connections are closed, so they end at their next read
// or write).
const cutOffWait = 2 * time.Second

func serveUntilSignal(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration, log *slog.Logger) error {
	sigCtx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Handlers still running when the grace ends are cut off by Close,
	// which does not wait for them; counting them lets the last word
	// (and the log's last line) come after theirs.
	var running atomic.Int64
	h := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.Add(1)
		defer running.Add(-1)
		h.ServeHTTP(w, r)
	})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-sigCtx.Done():
	}
	stop() // a second signal now kills the process, as usual
	log.Info("recall serve shutting down", "grace", grace.String())
	shutCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(shutCtx)
	if errors.Is(err, context.DeadlineExceeded) {
		_ = srv.Close()
		for wait := time.Now().Add(cutOffWait); running.Load() > 0 && time.Now().Before(wait); {
			time.Sleep(10 * time.Millisecond)
		}
		return withHint(fmt.Errorf("serve: requests still running after %s were cut off", grace),
			"raise --shutdown-timeout; every write that was cut off either committed whole or not at all")
	}
	if err != nil {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("recall serve stopped")
	return nil
}

// serveLogger is the logger of recall serve, on w.
func serveLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, usageError("use --log-format text or json", "--log-format %q: unknown format", format)
}

// storeName names the store the flags and environment chose, in the order
// app.store takes them, with every secret redacted.
func (a *app) storeName() string {
	switch {
	case a.storeURL != "":
		return storeurl.Redact(a.storeURL)
	case a.home != "":
		if abs, err := filepath.Abs(a.home); err == nil {
			return "file://" + abs
		}
		return "file://" + a.home
	case os.Getenv("RECALL_STORE") != "":
		return storeurl.Redact(os.Getenv("RECALL_STORE"))
	}
	home, err := filestore.DefaultHome()
	if err != nil {
		return "file store (default home)"
	}
	return "file://" + home
}

// ageOrNever reads the value of flag, an age or never, as server.Options
// takes its periods: never is negative (the trash is never emptied, the
// audit log kept forever).
func ageOrNever(flag, v string) (time.Duration, error) {
	if strings.TrimSpace(v) == "never" {
		return -1, nil
	}
	d, err := age.Parse(v)
	if err != nil {
		return 0, usageError(flag+" takes an age such as 30d or 1y, or never", "%s: %v", flag, err)
	}
	return d, nil
}
