package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

func TestAuth(t *testing.T) {
	for name, open := range envStores() {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, open(t), Options{RateLimit: -1}, nil)
			conv := e.newConv("alice", msg("user", "hello"))

			// No token, a wrong one, a malformed header: 401 in OpenAI's shape.
			for _, c := range []struct{ user, header string }{
				{"", ""},
				{"rk_" + strings.Repeat("A", 43), ""},
				{"", "Basic YWxpY2U6eA=="},
				{"", "Bearer"},
				{"", "Bearer " + e.tokens["alice"] + "x"},
			} {
				var hdr []string
				if c.header != "" {
					hdr = []string{"Authorization", c.header}
				}
				for _, path := range []string{"/v1/conversations/" + conv, "/api/v1/sessions", "/api/v1/openapi.json", "/nowhere"} {
					r := e.do("GET", path, c.user, nil, hdr...)
					ae := r.wantError(t, http.StatusUnauthorized)
					if ae.Error.Code != "invalid_api_key" || r.Header.Get("WWW-Authenticate") == "" {
						t.Fatalf("GET %s with %q: %s, WWW-Authenticate %q", path, c.header, r.body, r.Header.Get("WWW-Authenticate"))
					}
				}
			}
			// The scheme is case-insensitive.
			e.do("GET", "/v1/conversations/"+conv, "", nil, "Authorization", "bearer "+e.tokens["alice"]).want(t, http.StatusOK)

			// bob and root (an admin) do not see alice's conversation: 404.
			for _, u := range []string{"bob", "root"} {
				e.do("GET", "/v1/conversations/"+conv, u, nil).wantError(t, http.StatusNotFound)
				e.do("GET", "/v1/conversations/"+conv+"/items", u, nil).wantError(t, http.StatusNotFound)
				e.do("GET", "/api/v1/sessions/"+conv, u, nil).wantError(t, http.StatusNotFound)
				e.do("GET", "/api/v1/sessions/"+conv+"/entries", u, nil).wantError(t, http.StatusNotFound)
				e.do("GET", "/api/v1/sessions/"+conv+"/export", u, nil).wantError(t, http.StatusNotFound)
			}
			var me struct {
				User  string `json:"user"`
				Admin bool   `json:"admin"`
			}
			e.do("GET", "/api/v1/me", "root", nil).want(t, http.StatusOK).decode(t, &me)
			if me.User != "root" || !me.Admin {
				t.Fatalf("root is %+v", me)
			}

			// A revoked token stops working at once.
			ctx := context.Background()
			infos, err := ListTokens(ctx, e.st)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range infos {
				if in.User == "alice" {
					if _, err := RevokeToken(ctx, e.st, in.ID); err != nil {
						t.Fatal(err)
					}
				}
			}
			e.do("GET", "/v1/conversations/"+conv, "alice", nil).wantError(t, http.StatusUnauthorized)
			// Probes and metrics need no token.
			for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
				e.do("GET", p, "", nil).want(t, http.StatusOK)
			}
			// Nothing of a token ever reaches the log.
			logs := e.log.String()
			for _, tok := range e.tokens {
				if strings.Contains(logs, tok) || strings.Contains(logs, tok[len(TokenPrefix):len(TokenPrefix)+20]) {
					t.Fatalf("a token is in the log:\n%s", logs)
				}
			}
		})
	}
}

func TestAuthNone(t *testing.T) {
	e := newEnv(t, memstore.New(memstore.Options{}), Options{Auth: AuthNone}, nil)
	conv := e.newConv("")
	var s session
	e.do("GET", "/api/v1/sessions/"+conv, "", nil).want(t, http.StatusOK).decode(t, &s)
	if s.User != DefaultUser {
		t.Fatalf("session %+v, want user %q", s, DefaultUser)
	}
	// A token is not needed, and not looked at.
	e.do("GET", "/api/v1/sessions/"+conv, "bob", nil).want(t, http.StatusOK)
}

// failingStore fails every call, as a store whose database is down.
type failingStore struct{ recall.Store }

var errDown = errors.New("connection refused")

func (failingStore) Stat(context.Context, recall.Key) (recall.Meta, error) {
	return recall.Meta{}, errDown
}

func TestProbes(t *testing.T) {
	e := newEnv(t, memstore.New(memstore.Options{}), Options{}, nil)
	r := e.do("GET", "/healthz", "", nil).want(t, http.StatusOK)
	if string(r.body) != "{\"status\":\"ok\"}\n" {
		t.Fatalf("healthz: %s", r.body)
	}
	e.do("GET", "/readyz", "", nil).want(t, http.StatusOK)
	e.do("POST", "/healthz", "", nil).wantError(t, http.StatusMethodNotAllowed)

	// A store that does not answer: /readyz is 503, /healthz still 200,
	// and a request that needs its token checked is a 500 (not a 401).
	down, err := New(context.Background(), failingStore{memstore.New(memstore.Options{})}, Options{Logger: e.srv.log})
	if err != nil {
		t.Fatal(err)
	}
	e2 := &env{t: t, srv: down, tokens: e.tokens, log: e.log}
	e2.ts = newTestListener(t, down)
	e2.do("GET", "/readyz", "", nil).wantError(t, http.StatusServiceUnavailable)
	e2.do("GET", "/healthz", "", nil).want(t, http.StatusOK)
	e2.do("GET", "/api/v1/me", "alice", nil).wantError(t, http.StatusInternalServerError)
}

func TestRouteErrors(t *testing.T) {
	e := newEnv(t, memstore.New(memstore.Options{}), Options{}, nil)
	for _, c := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"GET", "/nowhere", http.StatusNotFound, ""},
		{"GET", "/v1/responses", http.StatusNotFound, ""},
		{"GET", "/api/v1/sessions/x/nothing", http.StatusNotFound, ""},
		{"PUT", "/v1/conversations", http.StatusMethodNotAllowed, "POST"},
		{"GET", "/v1/conversations", http.StatusMethodNotAllowed, "POST"},
		{"PUT", "/api/v1/sessions/x", http.StatusMethodNotAllowed, "DELETE, GET, HEAD, PATCH"},
		{"DELETE", "/api/v1/sessions", http.StatusMethodNotAllowed, "GET, HEAD"},
	} {
		r := e.do(c.method, c.path, "alice", nil)
		ae := r.wantError(t, c.status)
		if got := r.Header.Get("Allow"); got != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
		}
		if !strings.Contains(ae.Error.Message, c.path) {
			t.Errorf("%s %s: message %q does not name the path", c.method, c.path, ae.Error.Message)
		}
	}
}

func TestRequestIDAndLog(t *testing.T) {
	e := newEnv(t, memstore.New(memstore.Options{}), Options{}, nil)
	conv := e.newConv("alice", msg("user", "a secret of alice"))
	r := e.do("GET", "/v1/conversations/"+conv+"/items?limit=5", "alice", nil, "X-Request-Id", "trace-42").want(t, http.StatusOK)
	if got := r.Header.Get("X-Request-Id"); got != "trace-42" {
		t.Fatalf("X-Request-Id %q, want the client's", got)
	}
	r = e.do("GET", "/api/v1/me", "alice", nil, "X-Request-Id", "bad id\twith tab")
	id := r.Header.Get("X-Request-Id")
	if !strings.HasPrefix(id, "req_") || len(id) != 28 {
		t.Fatalf("X-Request-Id %q, want a new one", id)
	}

	var line map[string]any
	for l := range strings.SplitSeq(strings.TrimSpace(e.log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["request_id"] == "trace-42" {
			line = m
		}
	}
	if line == nil {
		t.Fatalf("no log line with the request id:\n%s", e.log.String())
	}
	want := map[string]any{"msg": "request", "user": "alice", "method": "GET",
		"route": "GET /v1/conversations/{conversation_id}/items", "status": float64(200)}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("log %s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
	if _, ok := line["duration"].(float64); !ok {
		t.Errorf("log line has no duration: %v", line)
	}
	if logs := e.log.String(); strings.Contains(logs, "secret") || strings.Contains(logs, conv+"/items?") {
		t.Fatalf("content or a query reached the log:\n%s", logs)
	}
}

func TestRecoverPanic(t *testing.T) {
	e := newEnv(t, memstore.New(memstore.Options{}), Options{}, func(s *Server) {
		s.mux.HandleFunc("GET /test/panic", func(http.ResponseWriter, *http.Request) { panic("boom") })
		s.mux.HandleFunc("GET /test/late-panic", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("half"))
			panic("late boom")
		})
	})
	r := e.do("GET", "/test/panic", "alice", nil, "X-Request-Id", "p-1")
	ae := r.wantError(t, http.StatusInternalServerError)
	if ae.Error.Type != "server_error" || strings.Contains(ae.Error.Message, "boom") {
		t.Fatalf("panic answer %s", r.body)
	}
	logs := e.log.String()
	if !strings.Contains(logs, `"panic":"boom"`) || !strings.Contains(logs, `"request_id":"p-1"`) || !strings.Contains(logs, "recoverPanic") {
		t.Fatalf("the panic is not logged with its request id and stack:\n%s", logs)
	}
	// A panic after the response began cuts the connection: the client
	// sees an error, not a short body that looks whole.
	req, _ := http.NewRequest("GET", e.ts.URL+"/test/late-panic", nil)
	req.Header.Set("Authorization", "Bearer "+e.tokens["alice"])
	res, err := e.ts.Client().Do(req)
	if err == nil {
		_, err = readAll(res)
	}
	if err == nil {
		t.Fatal("a panic after the headers went out ended the response cleanly")
	}
	// The server still serves.
	e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)
}

func TestRateLimit(t *testing.T) {
	e := newEnv(t, memstore.New(memstore.Options{}), Options{RateLimit: 0.5, Burst: 3}, nil)
	for range 3 {
		e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)
	}
	r := e.do("GET", "/api/v1/me", "alice", nil)
	ae := r.wantError(t, http.StatusTooManyRequests)
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || ra < 1 || ra > 2 {
		t.Fatalf("Retry-After %q, want 1 or 2 seconds", r.Header.Get("Retry-After"))
	}
	if ae.Error.Code != "rate_limit_exceeded" {
		t.Fatalf("429 body %s", r.body)
	}
	// Another user has a bucket of their own; probes are never limited.
	e.do("GET", "/api/v1/me", "bob", nil).want(t, http.StatusOK)
	for range 5 {
		e.do("GET", "/healthz", "", nil).want(t, http.StatusOK)
	}
	if !strings.Contains(e.log.String(), `"status":429`) {
		t.Fatal("the 429 is not logged")
	}
	// Off: a negative limit.
	off := newEnv(t, memstore.New(memstore.Options{}), Options{RateLimit: -1, Burst: 1}, nil)
	for range 20 {
		off.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)
	}
	_ = rate.Inf
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, memstore.New(memstore.Options{}), Options{Registerer: reg}, nil)
	conv := e.newConv("alice", msg("user", "hi"))
	e.do("GET", "/v1/conversations/"+conv, "alice", nil).want(t, http.StatusOK)
	e.do("GET", "/v1/conversations/conv_nope", "alice", nil).want(t, http.StatusNotFound)
	e.do("GET", "/nowhere", "alice", nil).want(t, http.StatusNotFound)
	e.do("GET", "/nowhere", "", nil).want(t, http.StatusUnauthorized)
	body := string(e.do("GET", "/metrics", "", nil).want(t, http.StatusOK).body)
	for _, want := range []string{
		`recall_http_requests_total{code="200",method="GET",route="GET /v1/conversations/{conversation_id}"} 1`,
		`recall_http_requests_total{code="404",method="GET",route="GET /v1/conversations/{conversation_id}"} 1`,
		`recall_http_requests_total{code="401",method="GET",route="unmatched"} 1`,
		`recall_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`recall_http_request_duration_seconds_bucket{route="GET /v1/conversations/{conversation_id}",le="+Inf"} 2`,
		`recall_store_operation_duration_seconds_count{op="stat",outcome="ok"}`,
		`recall_store_operation_duration_seconds_count{op="stat",outcome="not_found"}`,
		`recall_http_requests_in_flight 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Log(body)
	}
	// A method a client makes up is counted as "other": the labels are
	// not the client's to grow (each made-up method was a series).
	for i := range 20 {
		e.do(fmt.Sprintf("X%d%s", i, strings.Repeat("M", 4000)), "/v1/conversations/"+conv, "alice", nil)
	}
	e.do("GET", "/nowhere", "alice", nil)
	body = string(e.do("GET", "/metrics", "", nil).want(t, http.StatusOK).body)
	if strings.Contains(body, "MMMM") || !strings.Contains(body, `recall_http_requests_total{code="405",method="other",route="unmatched"} 20`) {
		t.Errorf("made-up methods in /metrics (%d bytes): %.600s", len(body), body)
	}
	// A second server on the same registry shares the collectors.
	if _, err := New(context.Background(), memstore.New(memstore.Options{}), Options{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	// The default: a registry of the server's own, with Go's collectors.
	own := newEnv(t, memstore.New(memstore.Options{}), Options{}, nil)
	if b := own.do("GET", "/metrics", "", nil).want(t, http.StatusOK).body; !strings.Contains(string(b), "go_goroutines") {
		t.Fatal("the server's own registry has no Go collector")
	}
}
