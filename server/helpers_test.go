package server_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
	"github.com/recallkit/recall/sqlstore"
)

// backend opens a fresh, empty store of one kind for a test.
type backend struct {
	name string
	open func(t *testing.T) recall.Store
}

// backends are the stores the API tests run over: memory, files in a
// temp dir, and PostgreSQL in a schema of its own (skipped, or failed
// under RECALL_REQUIRE_SERVICES=1, when PostgreSQL is not running).
func backends() []backend {
	return []backend{
		{"memstore", func(t *testing.T) recall.Store {
			st := memstore.New(memstore.Options{})
			t.Cleanup(func() { st.Close() })
			return st
		}},
		{"filestore", func(t *testing.T) recall.Store { return openFileStore(t, t.TempDir()) }},
		{"postgres", openPostgres},
	}
}

func openFileStore(t *testing.T, dir string) recall.Store {
	t.Helper()
	st, err := filestore.Open(filestore.Options{Dir: dir, Sync: filestore.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func openPostgres(t *testing.T) recall.Store {
	t.Helper()
	dsn, schema := testsvc.PostgresSchema(t)
	st, err := sqlstore.OpenPostgres(context.Background(), dsn, sqlstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// eachBackend runs fn once per backend, as a subtest.
func eachBackend(t *testing.T, fn func(t *testing.T, st recall.Store)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t)) })
	}
}

// serve starts a real listener serving st; with no options it serves every
// request as server.DefaultUser (server.AuthNone).
func serve(t *testing.T, st recall.Store, opts ...server.Options) *httptest.Server {
	t.Helper()
	o := server.Options{Auth: server.AuthNone}
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	o.RateLimit = -1
	h, err := server.New(context.Background(), st, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() }) // after the listener's, below
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// client returns the official OpenAI client pointed at srv. It does not
// retry unless opts say so, so a test sees each response.
func client(srv *httptest.Server, token string, opts ...option.RequestOption) openai.Client {
	if token == "" {
		token = "unused"
	}
	base := []option.RequestOption{
		option.WithBaseURL(srv.URL + "/v1/"),
		option.WithAPIKey(token),
		option.WithMaxRetries(0),
	}
	return openai.NewClient(append(base, opts...)...)
}

// apiError returns err as the SDK's *openai.Error, failing the test when
// it is not one.
func apiError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("want an *openai.Error, got %T: %v", err, err)
	}
	return ae
}

// wantAPIError checks that err is an OpenAI-shaped error with status, type
// invalid_request_error (server_error for 5xx), the param given ("" for
// none), and a message holding msg.
func wantAPIError(t *testing.T, err error, status int, param, msg string) *openai.Error {
	t.Helper()
	ae := apiError(t, err)
	if ae.StatusCode != status {
		t.Errorf("status %d, want %d (%s)", ae.StatusCode, status, ae.RawJSON())
	}
	wantType := "invalid_request_error"
	if status >= 500 {
		wantType = "server_error"
	}
	if ae.Type != wantType {
		t.Errorf("type %q, want %q (%s)", ae.Type, wantType, ae.RawJSON())
	}
	if ae.Param != param {
		t.Errorf("param %q, want %q (%s)", ae.Param, param, ae.RawJSON())
	}
	if !strings.Contains(ae.Message, msg) {
		t.Errorf("message %q does not hold %q", ae.Message, msg)
	}
	return ae
}

// raw sends one request to srv with a JSON content type and the headers
// given (name, value pairs: "Host" sets the request's Host, an empty value
// removes the header) and returns the status, the headers and the body.
func raw(t *testing.T, srv *httptest.Server, method, path, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		switch name, value := header[i], header[i+1]; {
		case name == "Host":
			req.Host = value
		case value == "":
			req.Header.Del(name)
		default:
			req.Header.Set(name, value)
		}
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(b)
}

// localKey is the store key of a conversation of server.DefaultUser.
func localKey(id string) recall.Key {
	return recall.Key{Project: server.User{Name: server.DefaultUser}.Project(), Session: id}
}

// serverOptions are the test server's options with a body limit.
func serverOptions(maxBody int64) server.Options {
	return server.Options{Auth: server.AuthNone, MaxBodyBytes: maxBody}
}

// countingStore counts the calls that read a session (Items, with the
// items they return, Load and Entries), the searches of the store it
// wraps, and what List reads. Its Search is the wrapped store's (a scan of
// that store, not counted, when it has no index).
type countingStore struct {
	recall.Store
	calls, items atomic.Int64 // Items and ReadItems
	reads        atomic.Int64 // Items, ReadItems, Load and Entries
	entries      atomic.Int64 // the entries Entries returned
	searches     atomic.Int64
	unlimited    atomic.Int64 // List calls with a negative Limit
	listed       atomic.Int64 // the sessions List returned
	projects     atomic.Int64 // Projects calls
}

// Projects answers from the store's own aggregate, as every store of
// recall's has one (the server's timedStore passes it on), and counts
// the calls.
func (s *countingStore) Projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	s.projects.Add(1)
	return recall.Projects(ctx, s.Store)
}

// List counts the unlimited listings and the sessions returned.
func (s *countingStore) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	if opts.Limit < 0 {
		s.unlimited.Add(1)
	}
	p, err := s.Store.List(ctx, project, opts)
	s.listed.Add(int64(len(p.Sessions)))
	return p, err
}

// ReadItems counts the items of the page the store read.
func (s *countingStore) ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	page, err := recall.NewSession(s.Store, key).ReadItems(ctx, opts)
	s.calls.Add(1)
	s.reads.Add(1)
	s.items.Add(int64(len(page.Items)))
	return page, err
}

func (s *countingStore) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	live, last, err := s.Store.Items(ctx, key, limit)
	s.calls.Add(1)
	s.reads.Add(1)
	s.items.Add(int64(len(live)))
	return live, last, err
}

func (s *countingStore) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	s.reads.Add(1)
	return s.Store.Load(ctx, key)
}

func (s *countingStore) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	es, err := s.Store.Entries(ctx, key, after, limit)
	s.reads.Add(1)
	s.entries.Add(int64(len(es)))
	return es, err
}

func (s *countingStore) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	s.searches.Add(1)
	return recall.Search(ctx, s.Store, opts)
}
