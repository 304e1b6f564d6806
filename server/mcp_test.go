package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server"
)

// bearer adds a token to every request of an MCP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

func connectMCP(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// TestMCPRoute drives /mcp of a token-authenticated server with the
// official MCP client: no token is refused; each user searches, lists and
// reads only their own conversations, made through the Conversations API's
// store layout; an admin reads no one else's; nothing can be written.
func TestMCPRoute(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	srv := serve(t, st, server.Options{Auth: server.AuthToken})
	tokens := map[string]string{}
	for _, u := range []struct {
		name  string
		admin bool
	}{{"alice", false}, {"bob", false}, {"root", true}} {
		tok, _, err := server.CreateToken(ctx, st, u.name, u.admin)
		if err != nil {
			t.Fatal(err)
		}
		tokens[u.name] = tok
	}
	c := client(srv, tokens["alice"])
	conv, err := c.Conversations.New(ctx, conversations.ConversationNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("my secret is the blue door 我叫张三")}})
	if err != nil {
		t.Fatal(err)
	}
	b := client(srv, tokens["bob"])
	bconv, err := b.Conversations.New(ctx, conversations.ConversationNewParams{Items: []responses.ResponseInputItemUnionParam{userMessage("my secret is the red door")}})
	if err != nil {
		t.Fatal(err)
	}

	if _, err := connectMCP(t, srv.URL+"/mcp", ""); err == nil {
		t.Fatal("MCP without a token connected")
	}
	if _, err := connectMCP(t, srv.URL+"/mcp", "rk_wrong"); err == nil {
		t.Fatal("MCP with a wrong token connected")
	}

	text := func(cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		var sb strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				sb.WriteString(tc.Text)
			}
		}
		if res.StructuredContent != nil {
			j, _ := json.Marshal(res.StructuredContent)
			sb.Write(j)
		}
		return sb.String(), res.IsError
	}

	alice, err := connectMCP(t, srv.URL+"/mcp", tokens["alice"])
	if err != nil {
		t.Fatal(err)
	}
	out, isErr := text(alice, "search_sessions", map[string]any{"query": "secret"})
	if isErr || !strings.Contains(out, "blue door") || strings.Contains(out, "red door") {
		t.Fatalf("alice's search: error %v, %s", isErr, out)
	}
	out, isErr = text(alice, "search_sessions", map[string]any{"query": "张三"})
	if isErr || !strings.Contains(out, conv.ID) {
		t.Fatalf("alice's CJK search: error %v, %s", isErr, out)
	}
	out, isErr = text(alice, "list_sessions", map[string]any{})
	if isErr || !strings.Contains(out, conv.ID) || strings.Contains(out, bconv.ID) {
		t.Fatalf("alice's list: error %v, %s", isErr, out)
	}
	out, isErr = text(alice, "read_session", map[string]any{"id": conv.ID})
	if isErr || !strings.Contains(out, "blue door") {
		t.Fatalf("alice reads her own: error %v, %s", isErr, out)
	}
	if out, isErr = text(alice, "read_session", map[string]any{"id": bconv.ID}); !isErr || strings.Contains(out, "red door") {
		t.Fatalf("alice read bob's conversation: error %v, %s", isErr, out)
	}
	if _, err := alice.CallTool(ctx, &mcp.CallToolParams{Name: "title_session", Arguments: map[string]any{"id": conv.ID, "title": "x"}}); err == nil {
		t.Fatal("a write tool is offered on /mcp")
	}

	root, err := connectMCP(t, srv.URL+"/mcp", tokens["root"])
	if err != nil {
		t.Fatal(err)
	}
	if out, isErr := text(root, "search_sessions", map[string]any{"query": "secret", "all": true}); strings.Contains(out, "door") {
		t.Fatalf("an admin read users' items over MCP: error %v, %s", isErr, out)
	}
	if out, isErr := text(root, "read_session", map[string]any{"id": conv.ID}); !isErr || strings.Contains(out, "blue door") {
		t.Fatalf("an admin read alice's conversation: error %v, %s", isErr, out)
	}
	if m, err := st.Stat(ctx, recall.Key{Project: "user.alice", Session: conv.ID}); err != nil || m.Title != "" {
		t.Fatalf("alice's conversation after MCP: %+v, %v", m, err)
	}
}

// TestMCPBodyLimit: POST /mcp takes bodies up to the server's body limit
// (Options.MaxBodyBytes, --max-body), as every route does, whether it is
// lower or higher than the MCP SDK's own 4 MiB, and refuses a larger one
// with the API's 413.
func TestMCPBodyLimit(t *testing.T) {
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	call := func(pad int) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"pad":"` + strings.Repeat("x", pad) + `"}}}`
	}
	mcpHeaders := []string{"Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2025-06-18"}
	for _, c := range []struct {
		limit int64
		pad   int
		want  int
	}{
		{64 << 10, 100 << 10, http.StatusRequestEntityTooLarge},
		{64 << 10, 10 << 10, http.StatusOK},
		{8 << 20, 5 << 20, http.StatusOK},
		{8 << 20, 9 << 20, http.StatusRequestEntityTooLarge},
	} {
		srv := serve(t, st, server.Options{Auth: server.AuthNone, MaxBodyBytes: c.limit})
		code, h, body := raw(t, srv, "POST", "/mcp", call(c.pad), mcpHeaders...)
		if code != c.want {
			t.Errorf("limit %d, body of %d: %d %.300s; want %d", c.limit, c.pad, code, body, c.want)
			continue
		}
		if code == http.StatusOK {
			if !strings.Contains(body, `"search_sessions"`) {
				t.Errorf("limit %d, body of %d: %.300s; want the tools", c.limit, c.pad, body)
			}
			continue
		}
		var e struct {
			Error struct{ Message, Type, Code string }
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || h.Get("Content-Type") != "application/json" ||
			e.Error.Code != "request_too_large" || !strings.Contains(e.Error.Message, strconv.FormatInt(c.limit, 10)) {
			t.Errorf("limit %d, body of %d: %s %q; want the API's 413", c.limit, c.pad, h.Get("Content-Type"), body)
		}
	}
}
