package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
)

// TestUserProjectNames: every (user, project) pair gets its own store
// project, which ProjectOwner reads back; no user's projects reach
// another's, however their names hold dots and digits; a name that does
// not fit is refused.
func TestUserProjectNames(t *testing.T) {
	users := []string{"a", "a.1", "a.1.b", "1", "users", "user.a", "b.a", "ab", "a-1", strings.Repeat("z", 128)}
	projects := []string{"", "x", "1.a.x", "a.x", "-home-a", ".", "1", "users.1.a.x"}
	owner := map[string][2]string{}
	for _, u := range users {
		for _, p := range projects {
			sp, err := server.UserProject(u, p)
			if err != nil {
				t.Fatalf("UserProject(%q, %q): %v", u, p, err)
			}
			if err := (recall.Key{Project: sp, Session: "s"}).Validate(); err != nil {
				t.Fatalf("UserProject(%q, %q) = %q, not a project key: %v", u, p, sp, err)
			}
			if prev, dup := owner[sp]; dup {
				t.Fatalf("UserProject(%q, %q) = %q, as for %q", u, p, sp, prev)
			}
			owner[sp] = [2]string{u, p}
			if gu, gp, ok := server.ProjectOwner(sp); !ok || gu != u || gp != p {
				t.Errorf("ProjectOwner(%q) = %q, %q, %t; want %q, %q", sp, gu, gp, ok, u, p)
			}
		}
	}
	if sp, _ := server.UserProject("alice", ""); sp != "user.alice" {
		t.Errorf("alice's default project is %q, want user.alice (where the server kept her sessions)", sp)
	}
	for _, bad := range [][2]string{{"", "x"}, {"a/b", "x"}, {"..", "x"}, {"a", "x/y"}, {"a", strings.Repeat("p", 250)}} {
		if sp, err := server.UserProject(bad[0], bad[1]); !errors.Is(err, recall.ErrInvalidKey) {
			t.Errorf("UserProject(%q, %q) = %q, %v; want an error of ErrInvalidKey", bad[0], bad[1], sp, err)
		}
	}
	for _, p := range []string{"_server.tokens", "-home-a", "users.01.a.x", "users.1.a", "users.1.a.", "users.5.a.x", "users.0..x", "users.x.a.y", "users.1.ax", "user.", "user.a/b"} {
		if u, pr, ok := server.ProjectOwner(p); ok {
			t.Errorf("ProjectOwner(%q) = %q, %q: the project is no user's", p, u, pr)
		}
	}
}

// projectsEnv is a token server over st with alice's sessions in three
// projects, bob's in two (one named as one of alice's), and those of a
// user whose name starts with alice's.
type projectsEnv struct {
	ts     *httptest.Server
	st     recall.Store
	tokens map[string]string
	keys   map[string]recall.Key // by label
}

func newProjectsEnv(t *testing.T, st recall.Store) *projectsEnv {
	t.Helper()
	ctx := context.Background()
	srv := serve(t, st, server.Options{Auth: server.AuthToken})
	e := &projectsEnv{ts: srv, st: st, tokens: map[string]string{}, keys: map[string]recall.Key{}}
	for _, u := range []string{"alice", "bob", "alice.x"} {
		tok, _, err := server.CreateToken(ctx, st, u, false)
		if err != nil {
			t.Fatal(err)
		}
		e.tokens[u] = tok
	}
	for _, s := range []struct{ label, user, project, text string }{
		{"alice-default", "alice", "", "alice's secret in the default project"},
		{"alice-src", "alice", "-home-alice-src", "alice's secret in src"},
		{"alice-shared", "alice", "-home-shared", "alice's secret in shared"},
		{"bob-default", "bob", "", "bob's secret in the default project"},
		{"bob-shared", "bob", "-home-shared", "bob's secret in shared"},
		{"alicex-src", "alice.x", "-home-alice-src", "alice.x's secret"},
	} {
		p, err := server.UserProject(s.user, s.project)
		if err != nil {
			t.Fatal(err)
		}
		key := recall.Key{Project: p, Session: "s-" + s.label}
		if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{Title: s.label,
			Items: []recall.Item{recall.Message("user", s.text)}}); err != nil {
			t.Fatal(err)
		}
		e.keys[s.label] = key
	}
	return e
}

// get sends a GET as user and returns the status and body.
func (e *projectsEnv) get(t *testing.T, user, path string) (int, string) {
	t.Helper()
	return e.send(t, user, "GET", path, "")
}

// send sends a request as user ("": no token) and returns the status
// and body.
func (e *projectsEnv) send(t *testing.T, user, method, path, body string) (int, string) {
	t.Helper()
	var h []string
	if tok := e.tokens[user]; tok != "" {
		h = []string{"Authorization", "Bearer " + tok}
	}
	status, _, b := raw(t, e.ts, method, path, body, h...)
	return status, b
}

// ids decodes a list's data and returns its ids with their projects
// ("project/id"), sorted.
func ids(t *testing.T, body string) []string {
	t.Helper()
	var l struct {
		Data []struct {
			ID        string `json:"id"`
			SessionID string `json:"session_id"`
			Project   string `json:"project"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var out []string
	for _, d := range l.Data {
		out = append(out, d.Project+"/"+d.ID+d.SessionID)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func keyStrings(e *projectsEnv, labels ...string) []string {
	var out []string
	for _, l := range labels {
		out = append(out, e.keys[l].String())
	}
	slices.Sort(out)
	return out
}

// TestProjectsIsolation: a user lists, searches and reads the sessions of
// every project of theirs, and of none of another user's, through
// /api/v1, the viewer and /mcp, even where the other user has a project
// of the same name or a name that starts with theirs.
func TestProjectsIsolation(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) recall.Store{
		"memstore":  func(t *testing.T) recall.Store { return memstore.New(memstore.Options{}) },
		"filestore": func(t *testing.T) recall.Store { return openFileStore(t, t.TempDir()) },
	} {
		t.Run(name, func(t *testing.T) { testProjectsIsolation(t, open(t)) })
	}
}

func testProjectsIsolation(t *testing.T, st recall.Store) {
	e := newProjectsEnv(t, st)
	mine := keyStrings(e, "alice-default", "alice-src", "alice-shared")

	// The projects, with their counts.
	status, body := e.get(t, "alice", "/api/v1/projects")
	var ps struct {
		Data []struct {
			Object, ID, Name string
			Default          bool
			Sessions         int
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(body), &ps); status != 200 || err != nil {
		t.Fatalf("GET /api/v1/projects: %d %s", status, body)
	}
	var got []string
	for _, p := range ps.Data {
		got = append(got, p.ID+"|"+p.Name+"|"+map[bool]string{true: "default"}[p.Default])
		if p.Sessions != 1 || p.Object != "project" {
			t.Errorf("project %+v: want 1 session", p)
		}
	}
	want := []string{"user.alice||default", "users.5.alice.-home-alice-src|-home-alice-src|", "users.5.alice.-home-shared|-home-shared|"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("alice's projects: %q, want %q", got, want)
	}

	// Listing and searching: every project of hers, or one.
	if status, body = e.get(t, "alice", "/api/v1/sessions"); status != 200 || !slices.Equal(ids(t, body), mine) {
		t.Errorf("alice's list: %d %q, want %q", status, ids(t, body), mine)
	}
	for _, path := range []string{"/api/v1/sessions?q=secret", "/api/v1/search?q=secret"} {
		if status, body = e.get(t, "alice", path); status != 200 || !slices.Equal(ids(t, body), mine) {
			t.Errorf("GET %s: %d %q, want %q", path, status, ids(t, body), mine)
		}
	}
	src := e.keys["alice-src"]
	for _, path := range []string{"/api/v1/sessions?project=" + src.Project, "/api/v1/search?q=secret&project=" + src.Project} {
		if status, body = e.get(t, "alice", path); status != 200 || !slices.Equal(ids(t, body), []string{src.String()}) {
			t.Errorf("GET %s: %d %q, want only %s", path, status, ids(t, body), src)
		}
	}
	// A session of another project than the default, by its id alone.
	if status, body = e.get(t, "alice", "/api/v1/sessions/"+src.Session); status != 200 || !strings.Contains(body, `"project":"`+src.Project+`"`) {
		t.Errorf("alice's session in src by id: %d %s", status, body)
	}

	// Nothing of bob's, nor of alice.x's, nor of the server's own.
	for _, other := range []recall.Key{e.keys["bob-default"], e.keys["bob-shared"], e.keys["alicex-src"]} {
		for _, path := range []string{
			"/api/v1/sessions?project=" + other.Project,
			"/api/v1/search?q=secret&project=" + other.Project,
			"/api/v1/sessions/" + other.Session,
			"/api/v1/sessions/" + other.Session + "?project=" + other.Project,
			"/api/v1/sessions/" + other.Session + "/entries?project=" + other.Project,
			"/api/v1/sessions/" + other.Session + "/export?project=" + other.Project,
		} {
			if status, body = e.get(t, "alice", path); status != 404 || strings.Contains(body, "secret") {
				t.Errorf("alice GET %s: %d %s, want 404", path, status, body)
			}
		}
		status, body = e.send(t, "alice", "PATCH", "/api/v1/sessions/"+other.Session+"?project="+other.Project, `{"title":"pwned"}`)
		if status != 404 {
			t.Errorf("alice renames %s: %d %s", other, status, body)
		}
		status, body = e.send(t, "alice", "DELETE", "/api/v1/sessions/"+other.Session+"?project="+other.Project+"&force=true", "")
		if status != 404 {
			t.Errorf("alice deletes %s: %d %s", other, status, body)
		}
	}
	if status, _ = e.get(t, "alice", "/api/v1/sessions?project="+server.TokenProject); status != 404 {
		t.Errorf("alice lists the server's tokens: %d", status)
	}
	// bob sees his own, both, and his projects only.
	if status, body = e.get(t, "bob", "/api/v1/sessions"); !slices.Equal(ids(t, body), keyStrings(e, "bob-default", "bob-shared")) {
		t.Errorf("bob's list: %d %q", status, ids(t, body))
	}
	if status, body = e.get(t, "bob", "/api/v1/projects"); strings.Contains(body, "alice") {
		t.Errorf("bob's projects: %d %s", status, body)
	}
	// Nothing was renamed or removed.
	for _, k := range e.keys {
		if m, err := e.st.Stat(context.Background(), k); err != nil || m.Title == "pwned" {
			t.Errorf("%s after alice's tries: %+v, %v", k, m, err)
		}
	}

	// The viewer: her sessions of every project, a picker of hers.
	c := webClient(t, e.ts, e.tokens["alice"])
	res, page := getBody(t, c, e.ts.URL+"/")
	if res.StatusCode != 200 {
		t.Fatalf("GET /: %d", res.StatusCode)
	}
	for _, l := range []string{"alice-default", "alice-src", "alice-shared"} {
		if !strings.Contains(page, l) {
			t.Errorf("the viewer's list lacks %s", l)
		}
	}
	for _, l := range []string{"bob-default", "bob-shared", "alicex-src", "users.3.bob"} {
		if strings.Contains(page, l) {
			t.Errorf("the viewer's list shows %s", l)
		}
	}
	if !strings.Contains(page, `<option value="users.5.alice.-home-alice-src">alice: -home-alice-src (1)</option>`) {
		t.Errorf("the picker does not offer alice's src project with its count")
	}
	if _, page = getBody(t, c, e.ts.URL+"/?project="+e.keys["bob-shared"].Project); strings.Contains(page, "bob-shared") {
		t.Errorf("the viewer lists bob's project for alice")
	}
	if _, page = getBody(t, c, e.ts.URL+"/?q=secret"); !strings.Contains(page, `href="/s/s-alice-src`) || !strings.Contains(page, `href="/s/s-alice-default`) ||
		strings.Contains(page, "bob") || strings.Contains(page, "alicex") {
		t.Errorf("the viewer's search: not alice's own of every project")
	}

	// MCP: every project of hers with "all", none of bob's.
	alice, err := connectMCP(t, e.ts.URL+"/mcp", e.tokens["alice"])
	if err != nil {
		t.Fatal(err)
	}
	call := func(tool string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		j, _ := json.Marshal(res)
		return string(j), res.IsError
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{{"list_sessions", map[string]any{"project": "all"}}, {"search_sessions", map[string]any{"query": "secret", "project": "all"}}} {
		out, isErr := call(c.tool, c.args)
		if isErr || strings.Contains(out, "bob") || strings.Contains(out, "alicex") {
			t.Errorf("%s: error %t, %s", c.tool, isErr, out)
		}
		for _, l := range []string{"alice-default", "alice-src", "alice-shared"} {
			if !strings.Contains(out, "s-"+l) {
				t.Errorf("%s lacks %s: %s", c.tool, l, out)
			}
		}
	}
	if out, isErr := call("read_session", map[string]any{"id": src.String()}); isErr || !strings.Contains(out, "alice's secret in src") {
		t.Errorf("alice reads her src session: error %t, %s", isErr, out)
	}
	for _, other := range []recall.Key{e.keys["bob-shared"], e.keys["alicex-src"]} {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"list_sessions", map[string]any{"project": other.Project}},
			{"search_sessions", map[string]any{"query": "secret", "project": other.Project}},
			{"read_session", map[string]any{"id": other.Session}},
			{"read_session", map[string]any{"id": other.String()}},
		} {
			if out, isErr := call(c.tool, c.args); !isErr || strings.Contains(out, "secret") {
				t.Errorf("alice's %s %v: error %t, %s", c.tool, c.args, isErr, out)
			}
		}
	}
}

// TestLocalUserOwnsTheHome: under --auth none the one local user sees
// every project of the store, as the home names them, beside the
// Conversations API's; never the server's own projects.
func TestLocalUserOwnsTheHome(t *testing.T) {
	ctx := context.Background()
	st := openFileStore(t, t.TempDir())
	if _, _, err := server.CreateToken(ctx, st, "alice", false); err != nil { // a session of _server.tokens
		t.Fatal(err)
	}
	var homes []string
	for _, k := range []recall.Key{{Project: "-home-me-app", Session: "claude-1"}, {Project: "-home-me-lib", Session: "codex-1"}} {
		if _, err := recall.NewSession(st, k).Create(ctx, recall.CreateOptions{Title: k.Session,
			Items: []recall.Item{recall.Message("user", "the home's "+k.Session)}}); err != nil {
			t.Fatal(err)
		}
		homes = append(homes, k.String())
	}
	srv := serve(t, st)
	conv := newConversation(t, srv)
	want := append(homes, "user.local/"+conv)
	slices.Sort(want)

	e := &projectsEnv{ts: srv, st: st}
	if status, body := e.get(t, "", "/api/v1/sessions"); status != 200 || !slices.Equal(ids(t, body), want) {
		t.Errorf("the local list: %d %q, want %q", status, ids(t, body), want)
	}
	status, body := e.get(t, "", "/api/v1/projects")
	if status != 200 || strings.Contains(body, "_server") || !strings.Contains(body, `"id":"-home-me-app","name":"-home-me-app","default":false,"sessions":1`) ||
		!strings.Contains(body, `"id":"user.local","name":"user.local","default":true,"sessions":1`) {
		t.Errorf("the local projects: %d %s", status, body)
	}
	tokens, err := st.List(ctx, server.TokenProject, recall.ListOptions{})
	if err != nil || len(tokens.Sessions) != 1 {
		t.Fatalf("tokens: %v, %v", tokens, err)
	}
	tok := tokens.Sessions[0].Key
	for _, path := range []string{"/api/v1/sessions?project=" + tok.Project, "/api/v1/sessions/" + tok.Session,
		"/api/v1/sessions/" + tok.Session + "?project=" + tok.Project, "/api/v1/search?q=alice&project=" + tok.Project} {
		if status, body := e.get(t, "", path); status != 404 {
			t.Errorf("GET %s: %d %s, want 404", path, status, body)
		}
	}
	if status, body := e.get(t, "", "/api/v1/sessions/claude-1"); status != 200 || !strings.Contains(body, `"project":"-home-me-app"`) {
		t.Errorf("a home session by id: %d %s", status, body)
	}
	// The trash spans the home's projects too: a session deleted there is
	// listed with its project, and restored by its id.
	if status, body := e.send(t, "", "DELETE", "/api/v1/sessions/codex-1?project=-home-me-lib", ""); status != 200 {
		t.Fatalf("DELETE a home session: %d %s", status, body)
	}
	if status, body := e.get(t, "", "/api/v1/trash"); status != 200 || !slices.Equal(ids(t, body), []string{"-home-me-lib/codex-1"}) {
		t.Errorf("the trash: %d %s", status, body)
	}
	if status, body := e.send(t, "", "POST", "/api/v1/sessions/codex-1/restore", ""); status != 200 || !strings.Contains(body, `"project":"-home-me-lib"`) {
		t.Errorf("restore: %d %s", status, body)
	}
	_, page := getBody(t, srv.Client(), srv.URL+"/")
	if !strings.Contains(page, "claude-1") || !strings.Contains(page, "codex-1") || !strings.Contains(page, "-home-me-lib (1)</option>") {
		t.Errorf("the viewer does not show the home's sessions and projects")
	}
	cs, err := connectMCP(t, srv.URL+"/mcp", "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(res)
	if res.IsError || !strings.Contains(string(j), "claude-1") || !strings.Contains(string(j), conv) || strings.Contains(string(j), tok.Session) {
		t.Errorf("MCP's list: %s", j)
	}
}

// TestStoreBeforeProjectsServedUnchanged serves a file store that the
// server wrote before users had projects (testdata/before-projects: two
// conversations of alice's, one of bob's, and their tokens, made through
// the APIs of that server) and finds every answer that server gave, with
// the token it made (sessions may have gained fields since, such as their
// project): the user's sessions are their default project, read in place.
func TestStoreBeforeProjectsServedUnchanged(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "before-projects", "home"))); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "before-projects", "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Token     string                     `json:"token"`
		Responses map[string]json.RawMessage `json:"responses"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.Open(filestore.Options{Dir: dir, Sync: filestore.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv := serve(t, st, server.Options{Auth: server.AuthToken})
	e := &projectsEnv{ts: srv, st: st, tokens: map[string]string{"alice": golden.Token}}
	for path, want := range golden.Responses {
		status, body := e.get(t, "alice", path)
		if status != 200 {
			t.Errorf("GET %s: %d %s", path, status, body)
			continue
		}
		var w, g any
		_ = json.Unmarshal(want, &w)
		_ = json.Unmarshal([]byte(body), &g)
		if !holds(g, w) {
			t.Errorf("GET %s:\n got %s\nwant %s", path, body, want)
		}
	}
	status, body := e.get(t, "alice", "/api/v1/projects")
	if status != 200 || !strings.Contains(body, `"id":"user.alice","name":"","default":true,"sessions":2`) || strings.Contains(body, "bob") {
		t.Errorf("alice's projects: %d %s", status, body)
	}
}

// holds reports whether got holds want: the same values, and in objects
// every member of want's (an object may have gained members since, such
// as a session's project).
func holds(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			if gv, ok := g[k]; !ok || !holds(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !holds(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(got, want)
}
