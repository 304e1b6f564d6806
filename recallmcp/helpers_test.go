package recallmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// connect starts a server over st with opts and returns a client session
// of the official SDK's client connected to it in memory.
func connect(t *testing.T, st recall.Store, opts Options) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, srvT := mcp.NewInMemoryTransports()
	ss, err := New(st, opts).Connect(ctx, srvT, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol error %v", name, args, err)
	}
	return res
}

// callOK calls a tool, fails the test unless it succeeds, and decodes its
// structured output into out; it returns the result's text.
func callOK(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s %v: tool error %s", name, args, text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	reflect.ValueOf(out).Elem().SetZero() // a reused output keeps no stale field
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: structured output %s: %v", name, b, err)
	}
	return text(res)
}

// callErr calls a tool and fails the test unless it is a tool error whose
// text contains want; it returns the text.
func callErr(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, want string) string {
	t.Helper()
	res := call(t, cs, name, args)
	if !res.IsError {
		t.Fatalf("%s %v: no tool error; got %s", name, args, text(res))
	}
	if got := text(res); !strings.Contains(got, want) {
		t.Fatalf("%s %v: error %q does not say %q", name, args, got, want)
	}
	return text(res)
}

// text is the text of a result's content.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// seed writes a session with the given title and messages, alternating
// user and assistant from a user message.
func seed(t *testing.T, st recall.Store, project, id, title string, texts ...string) recall.Key {
	t.Helper()
	key := recall.Key{Project: project, Session: id}
	var items []recall.Item
	for i, s := range texts {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		items = append(items, recall.Message(role, s))
	}
	if _, err := recall.NewSession(st, key).Create(context.Background(), recall.CreateOptions{Title: title, Items: items}); err != nil {
		t.Fatal(err)
	}
	return key
}

// seedLong writes a session of n messages in one Append.
func seedLong(t testing.TB, st recall.Store, project, id string, n int) recall.Key {
	t.Helper()
	key := recall.Key{Project: project, Session: id}
	items := make([]recall.Item, n)
	for i := range items {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		items[i] = recall.Message(role, fmt.Sprintf("message %05d of the long session", i+1))
	}
	if _, err := st.Append(context.Background(), key, recall.Guard{}, recall.ItemEntries(items...)...); err != nil {
		t.Fatal(err)
	}
	return key
}

func newStore(t testing.TB) recall.Store {
	st := memstore.New(memstore.Options{})
	t.Cleanup(func() { st.Close() })
	return st
}
