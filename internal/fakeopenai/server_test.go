package fakeopenai

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, s *Server, path, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(s.URL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type sseEvent struct {
	name string
	data string
}

func readSSE(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var evs []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			evs = append(evs, cur)
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("bad SSE line %q", line)
		}
	}
	return evs
}

func TestResponsesSSEFraming(t *testing.T) {
	s := New()
	defer s.Close()
	s.Enqueue(Reply{Text: "hello world", ToolCalls: []ToolCall{{Name: "f", Arguments: `{"a":1}`}}})
	evs := readSSE(t, post(t, s, "/responses", `{"model":"m","stream":true,"input":[{"role":"user","content":"hi"}]}`))
	var deltas strings.Builder
	for i, ev := range evs {
		var d struct {
			Type string `json:"type"`
			Seq  int    `json:"sequence_number"`
			Delt string `json:"delta"`
		}
		if err := json.Unmarshal([]byte(ev.data), &d); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if d.Type != ev.name || d.Seq != i {
			t.Errorf("event %d: name %q type %q seq %d", i, ev.name, d.Type, d.Seq)
		}
		if d.Type == "response.output_text.delta" {
			deltas.WriteString(d.Delt)
		}
	}
	if deltas.String() != "hello world" {
		t.Errorf("deltas = %q", deltas.String())
	}
	last := evs[len(evs)-1]
	var done struct {
		Response struct {
			Output []map[string]any `json:"output"`
			Usage  map[string]any   `json:"usage"`
		} `json:"response"`
	}
	json.Unmarshal([]byte(last.data), &done)
	if last.name != "response.completed" || len(done.Response.Output) != 2 || done.Response.Usage == nil {
		t.Errorf("last event = %s", last.data)
	}
	if id := done.Response.Output[1]["call_id"]; id != "call_1_1" {
		t.Errorf("default call id = %v", id)
	}
}

func TestChatSSEFraming(t *testing.T) {
	s := New()
	defer s.Close()
	for _, usage := range []bool{false, true} {
		body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		if usage {
			body = `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
		}
		evs := readSSE(t, post(t, s, "/chat/completions", body))
		if evs[len(evs)-1].data != "[DONE]" {
			t.Errorf("last data = %q, want [DONE]", evs[len(evs)-1].data)
		}
		var sawUsage bool
		var text strings.Builder
		for _, ev := range evs[:len(evs)-1] {
			if ev.name != "" {
				t.Errorf("chat chunks carry no event name, got %q", ev.name)
			}
			var c struct {
				Object  string `json:"object"`
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
				Usage *struct{ TotalTokens int } `json:"usage"`
			}
			if err := json.Unmarshal([]byte(ev.data), &c); err != nil || c.Object != "chat.completion.chunk" {
				t.Fatalf("chunk %s: %v", ev.data, err)
			}
			if c.Usage != nil {
				sawUsage = len(c.Choices) == 0
			}
			for _, ch := range c.Choices {
				text.WriteString(ch.Delta.Content)
			}
		}
		if sawUsage != usage {
			t.Errorf("include_usage=%v: usage chunk seen %v", usage, sawUsage)
		}
		if text.String() != "echo: hi" {
			t.Errorf("text = %q", text.String())
		}
	}
}

func TestErrorsAndRecording(t *testing.T) {
	s := New()
	defer s.Close()
	if resp := post(t, s, "/models", `{}`); resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
	if resp := post(t, s, "/responses", `{not json`); resp.StatusCode != 400 {
		t.Errorf("bad JSON: %d", resp.StatusCode)
	}
	s.Enqueue(Reply{Status: 429, Error: "slow", RetryAfter: 20 * time.Millisecond})
	resp := post(t, s, "/chat/completions", `{"model":"m","messages":[]}`)
	var body struct {
		Error struct{ Message, Type, Code string }
	}
	json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 429 || resp.Header.Get("retry-after-ms") != "20" || body.Error.Message != "slow" || body.Error.Code != "rate_limit_exceeded" {
		t.Errorf("429 reply: %d %v %+v", resp.StatusCode, resp.Header, body)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].API != "chat" || reqs[0].N != 1 {
		t.Errorf("requests = %+v", reqs)
	}
}
