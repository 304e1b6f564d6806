package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/provider/openai"
)

// newModel starts a fake server and a model of the given API pointed at it.
func newModel(t *testing.T, api openai.API, mod func(*openai.Config)) (*openai.Model, *fakeopenai.Server) {
	t.Helper()
	srv := fakeopenai.New()
	t.Cleanup(srv.Close)
	srv.SetAPIKey("sk-test")
	cfg := openai.Config{BaseURL: srv.URL(), APIKey: "sk-test", Model: "fake-model", API: api}
	if mod != nil {
		mod(&cfg)
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m, srv
}

func jsonEqual(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %s: %v", got, err)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want invalid JSON %s: %v", want, err)
	}
	return reflect.DeepEqual(g, w)
}

var apis = []openai.API{openai.APIResponses, openai.APIChat}

// streamModes runs f without and with streaming.
func streamModes(t *testing.T, f func(t *testing.T, stream bool)) {
	for _, stream := range []bool{false, true} {
		name := "json"
		if stream {
			name = "sse"
		}
		t.Run(name, func(t *testing.T) { f(t, stream) })
	}
}

// respond calls m, streaming into deltas when stream is set.
func respond(t *testing.T, m *openai.Model, req *agent.Request, stream bool) (*agent.Response, []string, error) {
	t.Helper()
	var deltas []string
	if stream {
		req.OnDelta = func(s string) { deltas = append(deltas, s) }
	}
	resp, err := m.Respond(context.Background(), req)
	return resp, deltas, err
}

func TestTextReply(t *testing.T) {
	for _, api := range apis {
		t.Run(string(api), func(t *testing.T) {
			streamModes(t, func(t *testing.T, stream bool) {
				m, srv := newModel(t, api, nil)
				text := "Hello there, this is a longer reply so that it streams in several pieces. 你好世界，这是一个测试。"
				srv.Enqueue(fakeopenai.Reply{Text: text, Usage: fakeopenai.Usage{Input: 12, Output: 34}})
				resp, deltas, err := respond(t, m, &agent.Request{Items: agent.UserText("hi")}, stream)
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.Items) != 1 || resp.Items[0].Type() != "message" || resp.Items[0].Role() != "assistant" {
					t.Fatalf("items = %s", resp.Items)
				}
				if got := resp.Items[0].Text(); got != text {
					t.Errorf("text = %q, want %q", got, text)
				}
				if want := (recall.Usage{InputTokens: 12, OutputTokens: 34, TotalTokens: 46}); resp.Usage != want {
					t.Errorf("usage = %+v, want %+v", resp.Usage, want)
				}
				if stream {
					if len(deltas) < 3 || strings.Join(deltas, "") != text {
						t.Errorf("deltas = %q, want several joining to the text", deltas)
					}
				} else if deltas != nil {
					t.Errorf("deltas without streaming: %q", deltas)
				}
				reqs := srv.Requests()
				if len(reqs) != 1 || reqs[0].Stream != stream || reqs[0].Model != "fake-model" {
					t.Fatalf("requests = %+v", reqs)
				}
				if got := reqs[0].Header.Get("Authorization"); got != "Bearer sk-test" {
					t.Errorf("Authorization = %q", got)
				}
			})
		})
	}
}

func TestResponsesItemsVerbatim(t *testing.T) {
	streamModes(t, func(t *testing.T, stream bool) {
		m, srv := newModel(t, openai.APIResponses, nil)
		reasoning := json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"abc","x_vendor":{"k":[1,2]}}`)
		srv.Enqueue(fakeopenai.Reply{Text: "ok", Extra: []json.RawMessage{reasoning},
			ToolCalls: []fakeopenai.ToolCall{{ID: "call_9", Name: "read_file", Arguments: `{"path":"a <b> & c.go"}`}}})
		history := []recall.Item{
			recall.Item(`{"type":"message","role":"user","content":[{"type":"input_text","text":"<b>bold</b> & \"q\""}],"x_unknown":{"nested":true}}`),
			recall.Item(`{"type":"some_future_item","payload":[1,"two",{"3":null}]}`),
			agent.FunctionCallItem("call_1", "list_files", `{}`),
			agent.FunctionCallOutput("call_1", "a.go\nb.go"),
			recall.Message("user", "next"),
		}
		tools := []agent.Tool{agent.Func("read_file", "Read a file.", json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`), nil)}
		temp := 0.25
		resp, _, err := respond(t, m, &agent.Request{Instructions: "Be brief.", Items: history, Tools: tools, Temperature: &temp}, stream)
		if err != nil {
			t.Fatal(err)
		}
		// What the server received: every item, unknown fields and types
		// included, and the instructions, tools and temperature.
		r := srv.Requests()[0]
		in := r.Input()
		if len(in) != len(history) {
			t.Fatalf("server got %d items, want %d", len(in), len(history))
		}
		for i := range history {
			if !jsonEqual(t, in[i], history[i]) {
				t.Errorf("item %d: server got %s, sent %s", i, in[i], history[i])
			}
		}
		if r.Instructions() != "Be brief." {
			t.Errorf("instructions = %q", r.Instructions())
		}
		if got := r.Temperature(); got == nil || *got != 0.25 {
			t.Errorf("temperature = %v", got)
		}
		var sentTools []json.RawMessage
		r.Field("tools", &sentTools)
		if len(sentTools) != 1 || !jsonEqual(t, sentTools[0], []byte(`{"type":"function","name":"read_file","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"strict":false}`)) {
			t.Errorf("tools = %s", sentTools)
		}
		// What came back: the server's output items verbatim.
		if len(resp.Items) != 3 {
			t.Fatalf("items = %s", resp.Items)
		}
		if string(resp.Items[0]) != string(reasoning) {
			t.Errorf("reasoning item = %s, want verbatim %s", resp.Items[0], reasoning)
		}
		call, ok := agent.ParseFunctionCall(resp.Items[2])
		if !ok || call != (agent.FunctionCall{CallID: "call_9", Name: "read_file", Arguments: `{"path":"a <b> & c.go"}`}) {
			t.Errorf("call = %+v %v from %s", call, ok, resp.Items[2])
		}
		if !strings.Contains(string(resp.Items[2]), `"id":"fc_1_1"`) {
			t.Errorf("function_call lost its id: %s", resp.Items[2])
		}
	})
}

func TestChatConversion(t *testing.T) {
	streamModes(t, func(t *testing.T, stream bool) {
		m, srv := newModel(t, openai.APIChat, nil)
		srv.Enqueue(fakeopenai.Reply{Text: "Let me look.", Usage: fakeopenai.Usage{Input: 5, Output: 7},
			ToolCalls: []fakeopenai.ToolCall{
				{ID: "call_a", Name: "read_file", Arguments: `{"path":"main.go"}`},
				{ID: "call_b", Name: "list_files", Arguments: `{"path":"."}`},
			}})
		history := []recall.Item{
			recall.Message("developer", "dev note"),
			recall.Item(`{"role":"user","content":"plain string content"}`), // typeless easy message
			recall.Item(`{"type":"reasoning","id":"rs_1","summary":[]}`),    // chat cannot carry it
			recall.Message("assistant", "Checking."),
			agent.FunctionCallItem("call_1", "list_files", `{}`),
			agent.FunctionCallItem("call_2", "read_file", `{"path":"x"}`),
			agent.FunctionCallOutput("call_1", "x"),
			recall.Item(`{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"part1"},{"type":"input_text","text":"part2"}]}`),
			recall.Message("user", "and now?"),
		}
		tools := []agent.Tool{agent.Func("read_file", "Read.", nil, nil)}
		temp := 0.3
		resp, deltas, err := respond(t, m, &agent.Request{Instructions: "sys", Items: history, Tools: tools, Temperature: &temp}, stream)
		if err != nil {
			t.Fatal(err)
		}
		r := srv.Requests()[0]
		want := `[
			{"role":"system","content":"sys"},
			{"role":"system","content":"dev note"},
			{"role":"user","content":"plain string content"},
			{"role":"assistant","content":"Checking.","tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"list_files","arguments":"{}"}},
				{"id":"call_2","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"x\"}"}}]},
			{"role":"tool","tool_call_id":"call_1","content":"x"},
			{"role":"tool","tool_call_id":"call_2","content":"part1part2"},
			{"role":"user","content":"and now?"}]`
		got, _ := json.Marshal(r.Input())
		if !jsonEqual(t, got, []byte(want)) {
			t.Errorf("messages sent:\n%s\nwant:\n%s", got, want)
		}
		if tn := r.ToolNames(); !reflect.DeepEqual(tn, []string{"read_file"}) {
			t.Errorf("tools = %v", tn)
		}
		if tp := r.Temperature(); tp == nil || *tp != 0.3 {
			t.Errorf("temperature = %v", tp)
		}
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if r.Field("stream_options", &so) != stream || so.IncludeUsage != stream {
			t.Errorf("stream_options = %+v, want include_usage only when streaming", so)
		}
		// The reply comes back as Responses items.
		if len(resp.Items) != 3 {
			t.Fatalf("items = %s", resp.Items)
		}
		if resp.Items[0].Text() != "Let me look." || resp.Items[0].Role() != "assistant" {
			t.Errorf("message = %s", resp.Items[0])
		}
		for i, want := range []agent.FunctionCall{
			{CallID: "call_a", Name: "read_file", Arguments: `{"path":"main.go"}`},
			{CallID: "call_b", Name: "list_files", Arguments: `{"path":"."}`},
		} {
			if c, ok := agent.ParseFunctionCall(resp.Items[i+1]); !ok || c != want {
				t.Errorf("call %d = %+v, want %+v", i, c, want)
			}
		}
		if want := (recall.Usage{InputTokens: 5, OutputTokens: 7, TotalTokens: 12}); resp.Usage != want {
			t.Errorf("usage = %+v, want %+v", resp.Usage, want)
		}
		if stream && strings.Join(deltas, "") != "Let me look." {
			t.Errorf("deltas = %q", deltas)
		}
	})
}

func TestRetry(t *testing.T) {
	for _, api := range apis {
		t.Run(string(api), func(t *testing.T) {
			streamModes(t, func(t *testing.T, stream bool) {
				m, srv := newModel(t, api, nil)
				srv.Enqueue(
					fakeopenai.Reply{Status: 429, Error: "Rate limit reached", RetryAfter: time.Millisecond},
					fakeopenai.Reply{Status: 500, Error: "boom", RetryAfter: time.Millisecond},
					fakeopenai.Reply{Text: "finally"},
				)
				resp, _, err := respond(t, m, &agent.Request{Items: agent.UserText("hi")}, stream)
				if err != nil {
					t.Fatal(err)
				}
				if resp.Items[0].Text() != "finally" {
					t.Errorf("reply = %s", resp.Items[0])
				}
				reqs := srv.Requests()
				if len(reqs) != 3 {
					t.Fatalf("server saw %d requests, want 3", len(reqs))
				}
				for i, r := range reqs {
					if got := r.Header.Get("X-Stainless-Retry-Count"); got != string(rune('0'+i)) {
						t.Errorf("request %d: retry count header %q", i, got)
					}
					if string(r.Body) != string(reqs[0].Body) {
						t.Errorf("request %d: body differs from the first", i)
					}
				}
			})
		})
	}
}

// TestRetryBackoff retries without a Retry-After header, so the client's
// own exponential backoff decides the wait.
func TestRetryBackoff(t *testing.T) {
	m, srv := newModel(t, openai.APIChat, nil)
	srv.Enqueue(fakeopenai.Reply{Status: 503}, fakeopenai.Reply{Text: "ok"})
	start := time.Now()
	if _, err := m.Respond(context.Background(), &agent.Request{Items: agent.UserText("hi")}); err != nil {
		t.Fatal(err)
	}
	// The first backoff is 0.5s less up to 25% jitter.
	if d := time.Since(start); d < 350*time.Millisecond {
		t.Errorf("retried after %v, want a backoff of about 0.5s", d)
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("requests = %d, want 2", n)
	}
}

func TestRetriesExhausted(t *testing.T) {
	for _, api := range apis {
		t.Run(string(api), func(t *testing.T) {
			m, srv := newModel(t, api, nil) // DefaultMaxRetries
			for range 4 {
				srv.Enqueue(fakeopenai.Reply{Status: 500, Error: "down", RetryAfter: time.Millisecond})
			}
			_, err := m.Respond(context.Background(), &agent.Request{Items: agent.UserText("hi")})
			var apiErr *oai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 {
				t.Fatalf("err = %v, want a 500 *openai.Error", err)
			}
			if n := len(srv.Requests()); n != 1+openai.DefaultMaxRetries {
				t.Errorf("requests = %d, want %d", n, 1+openai.DefaultMaxRetries)
			}
		})
	}
}

func TestNoRetries(t *testing.T) {
	m, srv := newModel(t, openai.APIResponses, func(c *openai.Config) { c.MaxRetries = -1 })
	srv.Enqueue(fakeopenai.Reply{Status: 429, Error: "slow down", RetryAfter: time.Millisecond}, fakeopenai.Reply{Text: "never"})
	_, err := m.Respond(context.Background(), &agent.Request{Items: agent.UserText("hi")})
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || !strings.Contains(err.Error(), "slow down") {
		t.Fatalf("err = %v, want the 429", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

func TestBadAPIKey(t *testing.T) {
	m, srv := newModel(t, openai.APIChat, func(c *openai.Config) { c.APIKey = "wrong" })
	_, err := m.Respond(context.Background(), &agent.Request{Items: agent.UserText("hi")})
	var apiErr *oai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("err = %v, want a 401", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("requests = %d; a 401 is not retried", n)
	}
}

func TestStreamError(t *testing.T) {
	for _, api := range apis {
		t.Run(string(api), func(t *testing.T) {
			m, srv := newModel(t, api, nil)
			srv.Enqueue(fakeopenai.Reply{Text: "partial reply here", StreamError: true, Error: "overloaded mid-stream"})
			_, deltas, err := respond(t, m, &agent.Request{Items: agent.UserText("hi")}, true)
			if err == nil || !strings.Contains(err.Error(), "overloaded mid-stream") {
				t.Fatalf("err = %v, want the stream error", err)
			}
			if len(deltas) != 1 {
				t.Errorf("deltas = %q, want the one sent before the error", deltas)
			}
		})
	}
}

func TestStreamCutOff(t *testing.T) {
	for _, api := range apis {
		t.Run(string(api), func(t *testing.T) {
			m, srv := newModel(t, api, func(c *openai.Config) { c.MaxRetries = -1 })
			// A server that ends the stream early, without a final event.
			srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply { return fakeopenai.Reply{Text: "cut", CutStream: true} })
			_, _, err := respond(t, m, &agent.Request{Items: agent.UserText("hi")}, true)
			if err == nil {
				t.Fatal("a cut-off stream was taken as a complete reply")
			}
		})
	}
}

func TestTemperatureRejected(t *testing.T) {
	for _, api := range apis {
		t.Run(string(api), func(t *testing.T) {
			m, srv := newModel(t, api, nil)
			srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
				if r.Temperature() != nil {
					return fakeopenai.Reply{Status: 400, Error: "Unsupported parameter: 'temperature' is not supported with this model."}
				}
				return fakeopenai.Reply{Text: "A Title"}
			})
			temp := 0.3
			resp, err := m.Respond(context.Background(), &agent.Request{Items: agent.UserText("hi"), Temperature: &temp})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Items[0].Text() != "A Title" {
				t.Errorf("reply = %s", resp.Items[0])
			}
			reqs := srv.Requests()
			if len(reqs) != 2 || reqs[0].Temperature() == nil || reqs[1].Temperature() != nil {
				t.Errorf("want one request with a temperature, then one without; got %d", len(reqs))
			}
		})
	}
}

func TestConfig(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
	t.Setenv("OPENAI_API_KEY", "ollama")
	t.Setenv("RECALL_MODEL", "qwen3")
	t.Setenv("RECALL_TITLE_MODEL", "")
	t.Setenv("RECALL_API", "")
	cfg := openai.ConfigFromEnv()
	if cfg != (openai.Config{BaseURL: "http://localhost:11434/v1", APIKey: "ollama", Model: "qwen3"}) {
		t.Fatalf("ConfigFromEnv = %+v", cfg)
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if m.API() != openai.APIChat || m.Name() != "qwen3" {
		t.Errorf("ollama: api %q model %q, want chat qwen3", m.API(), m.Name())
	}
	tm, err := openai.NewTitleModel(cfg)
	if err != nil || tm.Name() != "qwen3" {
		t.Errorf("title model = %v %v, want the chat model by default", tm, err)
	}
	cfg.TitleModel = "tiny"
	if tm, _ := openai.NewTitleModel(cfg); tm.Name() != "tiny" {
		t.Errorf("title model = %q, want tiny", tm.Name())
	}

	m, _ = openai.New(openai.Config{})
	if m.API() != openai.APIResponses || m.Name() != openai.DefaultModel {
		t.Errorf("zero config: api %q model %q", m.API(), m.Name())
	}
	t.Setenv("RECALL_API", "Responses")
	if m, _ := openai.New(openai.ConfigFromEnv()); m.API() != openai.APIResponses {
		t.Errorf("RECALL_API=Responses gave %q", m.API())
	}
	for _, bad := range []openai.Config{{API: "soap"}, {BaseURL: "localhost:8080"}, {BaseURL: "ftp://x/v1"}} {
		if _, err := openai.New(bad); err == nil {
			t.Errorf("New(%+v) accepted a bad config", bad)
		}
	}
}

// TestEnvDoesNotOverride checks that an explicit Config wins over the
// OPENAI_* variables openai-go reads by itself.
func TestEnvDoesNotOverride(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	m, srv := newModel(t, openai.APIResponses, nil)
	if _, err := m.Respond(context.Background(), &agent.Request{Items: agent.UserText("hi")}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q", got)
	}
}
