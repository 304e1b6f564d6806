package main

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recallkit/recall/internal/testkit"
)

// TestServeLocalViewer: "recall serve --auth none" over a home serves the
// sessions "recall ls --all" shows, a Claude Code transcript imported and
// a chat of the CLI, under the same projects, through /api/v1, the web
// viewer and /mcp; --open hands the start line's URL to the system's
// opener; another Host name is refused.
func TestServeLocalViewer(t *testing.T) {
	e := newEnv(t)
	copyTree(t, claudeFixture, filepath.Join(e.home, "user", ".claude", "projects"))
	e.ok("", "import", "claude-code")
	e.ok("", "chat", "-p", "a question of the CLI")
	var want []string
	for _, m := range e.ls("--all") {
		want = append(want, m.Key.String())
	}
	slices.Sort(want)
	if len(want) != 2 {
		t.Fatalf("ls --all: %q, want the imported session and the chat", want)
	}
	projects := map[string]int{}
	for _, k := range want {
		projects[k[:strings.IndexByte(k, '/')]]++
	}

	// A fake opener records what it is asked to open.
	bin, opened := t.TempDir(), filepath.Join(t.TempDir(), "opened")
	script := "#!/bin/sh\nprintf '%s' \"$1\" > " + opened + ".tmp && mv " + opened + ".tmp " + opened + "\n"
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	e.vars = append(e.vars, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	s := e.serve("--auth", "none", "--open")
	contains(t, "the start line", s.log(), "url="+s.URL+"/ ")
	testkit.Eventually(t, 30*time.Second, "the opener was run", func() bool { _, err := os.Stat(opened); return err == nil })
	if b, _ := os.ReadFile(opened); string(b) != s.URL+"/" {
		t.Errorf("the opener got %q, want %q", b, s.URL+"/")
	}

	// /api/v1: the same sessions, the same projects.
	code, body := s.do("GET", "/api/v1/sessions", "", nil)
	var list struct {
		Data []struct{ ID, Project string } `json:"data"`
	}
	if err := json.Unmarshal(body, &list); code != 200 || err != nil {
		t.Fatalf("GET /api/v1/sessions: %d %s", code, body)
	}
	var got []string
	for _, d := range list.Data {
		got = append(got, d.Project+"/"+d.ID)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("/api/v1/sessions: %q, want those of ls --all, %q", got, want)
	}
	code, body = s.do("GET", "/api/v1/projects", "", nil)
	var ps struct {
		Data []struct {
			ID       string `json:"id"`
			Sessions int    `json:"sessions"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &ps); code != 200 || err != nil {
		t.Fatalf("GET /api/v1/projects: %d %s", code, body)
	}
	gotProjects := map[string]int{}
	for _, p := range ps.Data {
		gotProjects[p.ID] = p.Sessions
	}
	if !maps.Equal(gotProjects, projects) {
		t.Errorf("/api/v1/projects: %v, want %v", gotProjects, projects)
	}

	// The viewer: the list, with its project picker, and the session.
	code, body = s.do("GET", "/", "", nil)
	for _, w := range []string{"Go files tour", claudeSID, "-home-dev-app (1)</option>"} {
		if code != 200 || !strings.Contains(string(body), w) {
			t.Errorf("the viewer's list (%d) lacks %q", code, w)
		}
	}
	if code, body = s.do("GET", "/s/"+claudeSID, "", nil); code != 200 || !strings.Contains(string(body), "Ready to continue.") {
		t.Errorf("the viewer's session: %d", code)
	}

	// MCP over HTTP: the tools, and the imported session in a listing.
	tr := &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "list_sessions") || !slices.Contains(names, "read_session") || slices.Contains(names, "title_session") {
		t.Errorf("MCP tools: %q", names)
	}
	out, isErr := mcpCall(t, cs, "list_sessions", map[string]any{}, nil)
	if isErr || !strings.Contains(out, claudeSID) || !strings.Contains(out, "Go files tour") {
		t.Errorf("MCP list_sessions: error %t\n%s", isErr, out)
	}
	if out, isErr = mcpCall(t, cs, "read_session", map[string]any{"id": claudeSID}, nil); isErr || !strings.Contains(out, "Ready to continue.") {
		t.Errorf("MCP read_session: error %t\n%s", isErr, out)
	}

	// It answers no other Host name.
	req, _ := http.NewRequest("GET", s.URL+"/api/v1/sessions", nil)
	req.Host = "evil.example"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("Host evil.example: %d, want 403", res.StatusCode)
	}
}
