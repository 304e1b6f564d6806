package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallkit/recall/server"
)

// TestSearchUsesTheIndex checks that every search the service answers,
// /api/v1/search, /api/v1/sessions?q=, the web viewer's and MCP's
// search_sessions, is the store's own search, and that none reads a
// session's items to answer.
func TestSearchUsesTheIndex(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: openFileStore(t, t.TempDir())}
	srv := serve(t, st, server.Options{Auth: server.AuthNone})
	c := client(srv, "")
	var ids []string // the two about the tokenizer, then the other
	for _, text := range []string{"the tokenizer was rewritten", "a second tokenizer bug", "nothing to see"} {
		conv, err := c.Conversations.New(ctx, conversations.ConversationNewParams{
			Items: []responses.ResponseInputItemUnionParam{userMessage(text)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, conv.ID)
	}
	mcpSession, err := connectMCP(t, srv.URL+"/mcp", "")
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v\n%s", path, res.StatusCode, err, body)
		}
		return string(body)
	}
	for _, route := range []struct {
		name   string
		search func() string
	}{
		{"/api/v1/search", func() string { return get("/api/v1/search?q=tokenizer") }},
		{"/api/v1/sessions?q=", func() string { return get("/api/v1/sessions?q=tokenizer") }},
		{"web search", func() string { return get("/?q=tokenizer") }},
		{"MCP search_sessions", func() string {
			res, err := mcpSession.CallTool(ctx, &mcp.CallToolParams{Name: "search_sessions", Arguments: map[string]any{"query": "tokenizer"}})
			if err != nil || res.IsError {
				t.Fatalf("search_sessions: %v %+v", err, res)
			}
			var sb strings.Builder
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					sb.WriteString(tc.Text)
				}
			}
			return sb.String()
		}},
	} {
		searches, reads := st.searches.Load(), st.reads.Load()
		out := route.search()
		if !strings.Contains(out, ids[0]) || !strings.Contains(out, ids[1]) || strings.Contains(out, ids[2]) {
			t.Errorf("%s did not find the two sessions, and only them:\n%s", route.name, out)
		}
		if st.searches.Load() == searches {
			t.Errorf("%s did not call the store's Search", route.name)
		}
		if n := st.reads.Load() - reads; n != 0 {
			t.Errorf("%s read a session's items %d times", route.name, n)
		}
	}
}
