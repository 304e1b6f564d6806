package openai

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
)

func TestChatMessagesGrouping(t *testing.T) {
	items := []recall.Item{
		recall.Message("user", "u"),
		agent.FunctionCallItem("c1", "f", "{}"), // no assistant text before it
		agent.FunctionCallOutput("c1", "o1"),
		recall.Message("assistant", "then"),
		agent.FunctionCallItem("c2", "g", `{"a":1}`),
		agent.FunctionCallOutput("c2", "o2"),
		agent.FunctionCallItem("c3", "h", "{}"), // after a tool message: a new assistant message
		agent.FunctionCallOutput("c3", "o3"),
		recall.Item(`{"type":"message","role":"critic","content":"unknown role"}`),
	}
	got, _ := json.Marshal(chatMessages("", items))
	want := `[{"role":"user","content":"u"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","content":"o1","tool_call_id":"c1"},` +
		`{"role":"assistant","content":"then","tool_calls":[{"id":"c2","type":"function","function":{"name":"g","arguments":"{\"a\":1}"}}]},` +
		`{"role":"tool","content":"o2","tool_call_id":"c2"},` +
		`{"role":"assistant","content":"","tool_calls":[{"id":"c3","type":"function","function":{"name":"h","arguments":"{}"}}]},` +
		`{"role":"tool","content":"o3","tool_call_id":"c3"}]`
	if string(got) != want {
		t.Errorf("messages:\n%s\nwant:\n%s", got, want)
	}
}

// TestChatLenientServer answers the way some local servers do: content
// as a list of parts, arguments as an object, no tool call id.
func TestChatLenientServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"tool_calls",` +
			`"message":{"role":"assistant","content":[{"type":"text","text":"hel"},{"type":"text","text":"lo"}],` +
			`"tool_calls":[{"type":"function","function":{"name":"f","arguments":{"path":"a.go"}}}]}}]}`))
	}))
	defer srv.Close()
	m, err := New(Config{BaseURL: srv.URL + "/v1", API: APIChat})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Respond(context.Background(), &agent.Request{Items: agent.UserText("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Items) != 2 || resp.Items[0].Text() != "hello" {
		t.Fatalf("items = %s", resp.Items)
	}
	call, ok := agent.ParseFunctionCall(resp.Items[1])
	if !ok || call.Name != "f" || call.Arguments != `{"path":"a.go"}` || !strings.HasPrefix(call.CallID, "call_") {
		t.Errorf("call = %+v from %s", call, resp.Items[1])
	}
	if !resp.Usage.IsZero() {
		t.Errorf("usage = %+v from a reply without usage", resp.Usage)
	}
}
