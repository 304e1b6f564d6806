package recallmcp

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProjectsOption: a server of Options.Projects sees the projects it
// accepts, all of them with "all", and nothing of any other: not in a
// listing, a search, a read by ID, prefix, title or "project/id", nor
// as a resource.
func TestProjectsOption(t *testing.T) {
	st := newStore(t)
	seed(t, st, "mine.a", "s-a", "note a", "the secret of a")
	seed(t, st, "mine.b", "s-b", "note b", "the secret of b")
	seed(t, st, "theirs", "s-theirs", "their note", "the secret of theirs")
	cs := connect(t, st, Options{Project: "mine.a", Projects: func(p string) bool { return strings.HasPrefix(p, "mine.") }})

	var l ListOutput
	callOK(t, cs, "list_sessions", map[string]any{}, &l)
	if len(l.Sessions) != 1 || l.Sessions[0].ID != "s-a" {
		t.Errorf("the default project's list: %+v", l.Sessions)
	}
	callOK(t, cs, "list_sessions", map[string]any{"project": AllProjects}, &l)
	if len(l.Sessions) != 2 || l.Scope != AllProjects {
		t.Errorf("every project's list: %+v", l)
	}
	var s SearchOutput
	callOK(t, cs, "search_sessions", map[string]any{"query": "secret", "project": AllProjects}, &s)
	if len(s.Hits) != 2 {
		t.Errorf("every project's search: %+v", s.Hits)
	}
	var r ReadOutput
	callOK(t, cs, "read_session", map[string]any{"id": "s-b"}, &r)
	callOK(t, cs, "read_session", map[string]any{"id": "mine.b/s-b"}, &r)

	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"list_sessions", map[string]any{"project": "theirs"}},
		{"search_sessions", map[string]any{"query": "secret", "project": "theirs"}},
		{"read_session", map[string]any{"id": "s-theirs"}},
		{"read_session", map[string]any{"id": "theirs/s-theirs"}},
		{"read_session", map[string]any{"id": "s-th"}},
		{"read_session", map[string]any{"id": "their note"}},
	} {
		if res := call(t, cs, c.tool, c.args); !res.IsError || strings.Contains(text(res), "secret of theirs") {
			t.Errorf("%s %v: error %t, %s", c.tool, c.args, res.IsError, text(res))
		}
	}
	ctx := context.Background()
	res, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Resources {
		if strings.Contains(r.URI, "theirs") {
			t.Errorf("resource %s listed", r.URI)
		}
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "recall://sessions/theirs/s-theirs"}); err == nil {
		t.Error("their session read as a resource")
	}
}
