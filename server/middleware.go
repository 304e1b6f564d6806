package server

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// The middleware, outermost first:
//
//	observe      request id, one log line and the metrics of every request
//	recoverPanic a panic is a logged 500 in OpenAI's error shape
//	guardLocal   under AuthNone only: this machine's host names, and no
//	             writes a page of another origin could send (auth_local.go)
//	authenticate the bearer token (the web viewer: its session cookie, or
//	             AuthNone's user) into the context
//	rateLimit    each user's token bucket (429 with Retry-After)
//	routeErrors  the mux's own 404 and 405 in OpenAI's error shape
//
// Every layer is a func(http.Handler) http.Handler over the standard
// library's types.
func (s *Server) middleware(mux *http.ServeMux) http.Handler {
	h := s.routeErrors(mux)
	h = s.rateLimit(h)
	h = s.authenticate(h)
	h = s.guardLocal(h)
	h = s.recoverPanic(h)
	return s.observe(h)
}

// reqInfo is what the layers learn of a request, for its log line and
// metrics: the outermost layer puts it in the context, the inner ones
// fill it in.
type reqInfo struct {
	id    string
	user  string
	route string // the mux pattern that served it; "" when none matched
}

type reqInfoKey struct{}

func infoFrom(ctx context.Context) *reqInfo {
	if ri, ok := ctx.Value(reqInfoKey{}).(*reqInfo); ok {
		return ri
	}
	return &reqInfo{} // a handler called without the middleware, in a test
}

// maxRequestIDLen bounds an X-Request-Id taken from a client.
const maxRequestIDLen = 128

// requestID returns the client's X-Request-Id when it is short and plain
// (so it is safe in a log line), or a new random one.
func requestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= maxRequestIDLen &&
		strings.Trim(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:-") == "" {
		return id
	}
	// A request id needs to be unique, not secret: the runtime's per-thread
	// generator is enough, and costs no system call.
	var raw [12]byte
	binary.LittleEndian.PutUint64(raw[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(raw[8:], rand.Uint32())
	var b [4 + 2*len(raw)]byte
	copy(b[:], "req_")
	hex.Encode(b[4:], raw[:])
	return string(b[:])
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush passes flushes through, for streamed responses.
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe gives the request its id (X-Request-Id, in and out), then
// logs one line and records the metrics when it is done: the id, the
// user, the route pattern, the status and the duration. It never logs a
// header, a query or a body, so neither a token nor any content reaches
// the log.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ri := &reqInfo{id: requestID(r)}
		w.Header().Set("X-Request-Id", ri.id)
		sw := &statusWriter{ResponseWriter: w}
		s.ops.metrics.inflight.Inc()
		defer func() {
			s.ops.metrics.inflight.Dec()
			d := time.Since(start)
			status := sw.status
			if status == 0 {
				status = http.StatusOK // a handler that wrote nothing
			}
			route := ri.route
			if route == "" {
				route = "unmatched"
			}
			s.ops.metrics.requests.WithLabelValues(route, methodLabel(r.Method), strconv.Itoa(status)).Inc()
			s.ops.metrics.latency.WithLabelValues(route).Observe(d.Seconds())
			level := slog.LevelInfo
			if status >= 500 {
				level = slog.LevelError
			}
			s.log.LogAttrs(r.Context(), level, "request",
				slog.String("request_id", ri.id),
				slog.String("user", ri.user),
				slog.String("method", methodLabel(r.Method)),
				slog.String("route", route),
				slog.Int("status", status),
				slog.Duration("duration", d),
				slog.Int64("bytes", sw.bytes),
			)
		}()
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, ri)))
	})
}

// methodLabel is a request's method as /metrics and the log name it: one
// of HTTP's methods, or "other" for any a client made up, so that no
// client can add series to /metrics (or bulk to the log) at will.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "other"
}

// recoverPanic turns a panic in a handler into a logged 500 in OpenAI's
// error shape, so one bad request never takes the process down. When the
// response has begun already it cannot be turned into an error any more:
// the connection is then cut (http.ErrAbortHandler), so the client sees
// a broken response rather than a short one that looks whole.
func (s *Server) recoverPanic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw, _ := w.(*statusWriter)
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			ri := infoFrom(r.Context())
			s.log.ErrorContext(r.Context(), "panic serving a request", "request_id", ri.id, "route", ri.route,
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if sw != nil && sw.status != 0 {
				panic(http.ErrAbortHandler)
			}
			s.writeError(w, r, &APIError{Status: http.StatusInternalServerError,
				Message: "The server had an error while processing your request.", Type: "server_error"})
		}()
		next.ServeHTTP(w, r)
	})
}

// routeErrors serves the mux's own answers to a request no route matches
// (404) or that no route of its path takes with its method (405, with the
// mux's Allow header) in OpenAI's error shape instead of plain text. It
// records the pattern that served the request for the log and metrics.
//
// The request is routed once: ServeMux sets r.Pattern on the request it
// is given before it calls the handler it found, and leaves it "" when
// that handler is its own 404 or 405, so the writer tells the mux's
// answers from a route's own 404 by r.Pattern when the status is written.
func (s *Server) routeErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ri := infoFrom(r.Context())
		defer func() { ri.route = r.Pattern }() // ServeMux sets it on r
		mux.ServeHTTP(&routeErrorWriter{ResponseWriter: w, s: s, r: r}, r)
	})
}

// routeErrorWriter rewrites a 404 or 405 the mux itself writes (r.Pattern
// is "": no route served the request) into the error shape and drops the
// mux's plain-text body. Other answers (a route's own, a redirect to a
// cleaned path) pass through.
type routeErrorWriter struct {
	http.ResponseWriter
	s       *Server
	r       *http.Request
	rewrote bool
}

func (w *routeErrorWriter) WriteHeader(code int) {
	if w.rewrote {
		return
	}
	if w.r.Pattern != "" { // a route's answer
		w.ResponseWriter.WriteHeader(code)
		return
	}
	switch code {
	case http.StatusNotFound:
		w.rewrote = true
		w.s.writeError(w.ResponseWriter, w.r, &APIError{Status: code, Type: "invalid_request_error", Code: "unknown_url",
			Message: fmt.Sprintf("Invalid URL (%s %s).", w.r.Method, w.r.URL.Path)})
	case http.StatusMethodNotAllowed:
		w.rewrote = true
		w.ResponseWriter.Header().Del("X-Content-Type-Options")
		w.s.writeError(w.ResponseWriter, w.r, &APIError{Status: code, Type: "invalid_request_error", Code: "method_not_allowed",
			Message: fmt.Sprintf("Method %s is not allowed on %s; allowed: %s.", w.r.Method, w.r.URL.Path, w.Header().Get("Allow"))})
	default:
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *routeErrorWriter) Write(b []byte) (int, error) {
	if w.rewrote {
		return len(b), nil // the mux's plain text, replaced
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *routeErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// ctxLogHandler adds the request id of the context's request, when there
// is one, to every record logged with that context, so the errors a
// handler logs join its request's line.
type ctxLogHandler struct{ slog.Handler }

func (h ctxLogHandler) Handle(ctx context.Context, rec slog.Record) error {
	if ri, ok := ctx.Value(reqInfoKey{}).(*reqInfo); ok && ri.id != "" {
		has := false
		rec.Attrs(func(a slog.Attr) bool {
			has = a.Key == "request_id"
			return !has
		})
		if !has {
			rec = rec.Clone()
			rec.AddAttrs(slog.String("request_id", ri.id))
		}
	}
	return h.Handler.Handle(ctx, rec)
}

func (h ctxLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return ctxLogHandler{h.Handler.WithAttrs(as)}
}

func (h ctxLogHandler) WithGroup(name string) slog.Handler {
	return ctxLogHandler{h.Handler.WithGroup(name)}
}
