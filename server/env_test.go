package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/memstore"
)

// env is a Server over a store behind a real listener, with tokens for
// the users alice and bob and the admin root, and its log captured.
type env struct {
	t      *testing.T
	st     recall.Store
	srv    *Server
	ts     *httptest.Server
	tokens map[string]string // user name → bearer token
	log    *testkit.SyncBuffer
}

// envStores are the stores the HTTP tests of this file's package run on.
func envStores() map[string]func(t *testing.T) recall.Store {
	return map[string]func(t *testing.T) recall.Store{
		"memstore": func(t *testing.T) recall.Store { return memstore.New(memstore.Options{}) },
		"filestore": func(t *testing.T) recall.Store {
			st, err := filestore.Open(filestore.Options{Dir: t.TempDir(), Sync: filestore.SyncNever})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
}

// newEnv starts a server over st with opts; a nil setup registers
// nothing more on its mux before it serves.
func newEnv(t *testing.T, st recall.Store, opts Options, setup func(*Server)) *env {
	t.Helper()
	e := &env{t: t, st: st, tokens: map[string]string{}, log: &testkit.SyncBuffer{}}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(e.log, nil))
	}
	ctx := context.Background()
	srv, err := New(ctx, st, opts)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(srv)
	}
	e.srv = srv
	t.Cleanup(func() { srv.Close() }) // after the listener's, below
	e.ts = httptest.NewServer(srv)
	t.Cleanup(e.ts.Close)
	for _, u := range []struct {
		name  string
		admin bool
	}{{"alice", false}, {"bob", false}, {"root", true}} {
		tok, _, err := CreateToken(ctx, st, u.name, u.admin)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens[u.name] = tok
	}
	return e
}

// resp is a response read whole.
type resp struct {
	*http.Response
	body []byte
}

// decode unmarshals the body into v, failing the test when it is not JSON.
func (r resp) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("%s %s: body %q: %v", r.Request.Method, r.Request.URL, r.body, err)
	}
}

// apiErr is OpenAI's error shape, as the tests read it.
type apiErr struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   any    `json:"param"`
		Code    any    `json:"code"`
	} `json:"error"`
}

// wantError checks that r is an error of status in OpenAI's shape and
// returns it.
func (r resp) wantError(t *testing.T, status int) apiErr {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d; body %s", r.Request.Method, r.Request.URL, r.StatusCode, status, r.body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: Content-Type %q, want application/json", r.Request.Method, r.Request.URL, ct)
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &raw); err != nil || len(raw) != 1 || raw["error"] == nil {
		t.Fatalf("%s %s: body %s is not {\"error\":{...}}", r.Request.Method, r.Request.URL, r.body)
	}
	for _, f := range []string{"message", "type", "param", "code"} {
		if _, ok := raw["error"][f]; !ok {
			t.Fatalf("%s %s: error %s lacks %q", r.Request.Method, r.Request.URL, r.body, f)
		}
	}
	var ae apiErr
	r.decode(t, &ae)
	if ae.Error.Message == "" || ae.Error.Type == "" {
		t.Fatalf("%s %s: error %s has no message or type", r.Request.Method, r.Request.URL, r.body)
	}
	return ae
}

// do sends a request as user ("" for none) with body (nil, a string
// sent as is, or a value sent as JSON) and extra headers (name, value
// pairs).
func (e *env) do(method, path, user string, body any, headers ...string) resp {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		tok, ok := e.tokens[user]
		if !ok {
			tok = user // a raw token
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp{res, b}
}

// want checks r's status, showing the body when it is not.
func (r resp) want(t *testing.T, status int) resp {
	t.Helper()
	if r.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d; body %s", r.Request.Method, r.Request.URL, r.StatusCode, status, r.body)
	}
	return r
}

// newConv creates a session for user in the store, as the
// Conversations API does, and returns its id.
func (e *env) newConv(user string, items ...string) string {
	e.t.Helper()
	if user == "" {
		user = DefaultUser
	}
	its := make([]recall.Item, len(items))
	for i, it := range items {
		its[i] = recall.Item(it)
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	id := "conv_" + hex.EncodeToString(b)
	if _, err := recall.NewSession(e.st, recall.Key{Project: User{Name: user}.Project(), Session: id}).Create(context.Background(),
		recall.CreateOptions{Items: its}); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// msg is an easy input message.
func msg(role, text string) string {
	b, _ := json.Marshal(map[string]string{"role": role, "content": text})
	return string(b)
}

// newTestListener serves h on a real listener until the test ends.
func newTestListener(t *testing.T, h http.Handler) *httptest.Server {
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

// readAll reads and closes a response body.
func readAll(res *http.Response) ([]byte, error) {
	defer res.Body.Close()
	return io.ReadAll(res.Body)
}
