package recallmcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// userKey carries the fake service's authenticated user in a request.
type userKey struct{}

// fakeAuth is a stand-in for the service's token auth: "Bearer
// <name>-token" is user name; anything else is 401.
func fakeAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		name, ok2 := strings.CutSuffix(tok, "-token")
		if !ok || !ok2 || (name != "alice" && name != "bob") {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, name)))
	})
}

// bearer adds a token to every request of a client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

func connectHTTP(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// TestHTTPUsers mounts Handler behind an auth middleware on a real
// listener, as the service does, and checks that each of two users sees
// their own sessions and cannot reach the other's by any tool or resource.
func TestHTTPUsers(t *testing.T) {
	st := newStore(t)
	seed(t, st, "user.alice", "0199ffff-alice-1", "Alice's plan", "my secret is the blue door")
	seed(t, st, "user.bob", "0199ffff-bob-1", "Bob's plan", "my secret is the red door")
	seed(t, st, "user.bob", "0199ffff-bob-2", "", "bob only: ledger")

	mux := http.NewServeMux()
	mux.Handle("/mcp", fakeAuth(Handler(st, func(r *http.Request) (Options, bool) {
		name, ok := r.Context().Value(userKey{}).(string)
		return Options{Project: "user." + name, OnlyProject: true}, ok
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp"

	for _, token := range []string{"", "mallory-token"} {
		if _, err := connectHTTP(t, url, token); err == nil {
			t.Errorf("token %q: connected", token)
		}
	}

	alice, err := connectHTTP(t, url, "alice-token")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := connectHTTP(t, url, "bob-token")
	if err != nil {
		t.Fatal(err)
	}

	var search SearchOutput
	for _, project := range []string{"", "all", "user.alice"} {
		callOK(t, alice, "search_sessions", map[string]any{"query": "secret", "project": project}, &search)
		if len(search.Hits) != 1 || search.Hits[0].Session != "0199ffff-alice-1" {
			t.Errorf("alice searches %q: %+v", project, search.Hits)
		}
	}
	callOK(t, bob, "search_sessions", map[string]any{"query": "secret"}, &search)
	if len(search.Hits) != 1 || search.Hits[0].Session != "0199ffff-bob-1" {
		t.Errorf("bob searches: %+v", search.Hits)
	}
	callErr(t, alice, "search_sessions", map[string]any{"query": "secret", "project": "user.bob"}, "only")
	callErr(t, alice, "list_sessions", map[string]any{"project": "user.bob"}, "only")

	var list ListOutput
	for _, project := range []string{"", "all"} {
		callOK(t, alice, "list_sessions", map[string]any{"project": project}, &list)
		if len(list.Sessions) != 1 || list.Sessions[0].ID != "0199ffff-alice-1" {
			t.Errorf("alice lists %q: %+v", project, list.Sessions)
		}
	}
	callOK(t, bob, "list_sessions", nil, &list)
	if len(list.Sessions) != 2 {
		t.Errorf("bob lists %d sessions, want 2", len(list.Sessions))
	}

	// Bob's sessions by ID, project/ID, title and prefix: not found for
	// Alice, and a prefix both share is hers alone.
	for _, ref := range []string{"0199ffff-bob-1", "user.bob/0199ffff-bob-1", "Bob's plan", "0199ffff-bob"} {
		callErr(t, alice, "read_session", map[string]any{"id": ref}, "no session")
	}
	var read ReadOutput
	callOK(t, alice, "read_session", map[string]any{"id": "0199ffff"}, &read)
	if read.Session.ID != "0199ffff-alice-1" {
		t.Errorf("alice reads 0199ffff: %s", read.Session.ID)
	}
	callOK(t, bob, "read_session", map[string]any{"id": "0199ffff-bob-2"}, &read)
	if len(read.Items) != 1 || read.Items[0].Text != "bob only: ledger" {
		t.Errorf("bob reads his session: %+v", read.Items)
	}

	// Resources: Alice lists hers only and cannot read Bob's.
	ctx := context.Background()
	var uris []string
	for r, err := range alice.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if len(uris) != 1 || uris[0] != "recall://sessions/user.alice/0199ffff-alice-1" {
		t.Errorf("alice's resources: %v", uris)
	}
	if _, err := alice.ReadResource(ctx, &mcp.ReadResourceParams{URI: "recall://sessions/user.bob/0199ffff-bob-1"}); err == nil {
		t.Error("alice read bob's session as a resource")
	}
	rr, err := bob.ReadResource(ctx, &mcp.ReadResourceParams{URI: "recall://sessions/user.bob/0199ffff-bob-1"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "red door") {
		t.Errorf("bob reads his resource: %v", err)
	}

	// Users' servers are read-only unless the service allows writes.
	if _, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "title_session", Arguments: map[string]any{"id": "0199ffff-alice-1", "title": "x"}}); err == nil {
		t.Error("alice ran title_session on a read-only server")
	}
}
