package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/title"
)

// fakeServer starts a fake OpenAI-compatible server that answers chat
// requests with an echo and title requests (the ones without tools) with
// a fixed title, and points e at it.
func fakeServer(t *testing.T, e *env, api string) *fakeopenai.Server {
	t.Helper()
	srv := fakeopenai.New()
	t.Cleanup(srv.Close)
	srv.SetAPIKey("sk-test") // a request without the key gets a 401
	srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		if isTitleRequest(r) {
			return fakeopenai.Reply{Text: `Title: "Greeting the model".`}
		}
		return fakeopenai.Echo(r)
	})
	e.vars = []string{
		"OPENAI_BASE_URL=" + srv.URL(),
		"OPENAI_API_KEY=sk-test",
		"RECALL_API=" + api,
		"RECALL_MODEL=chat-model",
		"RECALL_TITLE_MODEL=title-model",
	}
	return srv
}

func isTitleRequest(r fakeopenai.Request) bool { return r.Instructions() == title.Prompt }

// chatRequests returns the requests that were not for a title.
func chatRequests(srv *fakeopenai.Server) []fakeopenai.Request {
	var out []fakeopenai.Request
	for _, r := range srv.Requests() {
		if !isTitleRequest(r) {
			out = append(out, r)
		}
	}
	return out
}

func TestChatWithOpenAICompatibleServer(t *testing.T) {
	t.Parallel()
	for _, api := range []string{"responses", "chat"} {
		t.Run(api, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			srv := fakeServer(t, e, api)

			r := e.ok("", "chat", "-p", "hello model")
			if r.stdout != "echo: hello model\n" {
				t.Fatalf("run 1 stdout %q", r.stdout)
			}
			contains(t, "stderr", r.stderr, "chat-model at 127.0.0.1:")
			contains(t, "stderr", r.stderr, api+" API")
			reqs := srv.Requests()
			if len(reqs) != 2 || reqs[0].API != api || reqs[0].Model != "chat-model" || !reqs[0].Stream || !isTitleRequest(reqs[1]) || reqs[1].Model != "title-model" {
				t.Fatalf("requests: %+v", reqs)
			}
			if auth := reqs[0].Header.Get("Authorization"); auth != "Bearer sk-test" {
				t.Errorf("Authorization header %q, want the key from OPENAI_API_KEY", auth)
			}
			if tools := reqs[0].ToolNames(); !slices.Equal(tools, []string{"list_files", "read_file", "write_file"}) {
				t.Errorf("tools offered: %v", tools)
			}
			ms := e.ls()
			if len(ms) != 1 || ms[0].Title != "Greeting the model" || ms[0].TitleSource != recall.TitleAuto || ms[0].Usage.TotalTokens == 0 {
				t.Fatalf("after run 1: %+v", ms)
			}

			// Run 2 continues: the history goes to the server before the
			// new message, and the session is not titled again.
			r = e.ok("", "chat", "-c", "-p", "second message")
			if r.stdout != "echo: second message\n" {
				t.Fatalf("run 2 stdout %q", r.stdout)
			}
			chats := chatRequests(srv)
			if len(chats) != 2 || len(srv.Requests()) != 3 {
				t.Fatalf("after run 2: %d chat requests of %d; want 2 of 3 (one title)", len(chats), len(srv.Requests()))
			}
			var got []string
			for _, m := range chats[1].Messages() {
				if m.Role != "system" && m.Role != "developer" {
					got = append(got, m.Role+": "+m.Text)
				}
			}
			want := []string{"user: hello model", "assistant: echo: hello model", "user: second message"}
			if !slices.Equal(got, want) {
				t.Errorf("run 2 sent %q, want %q", got, want)
			}
			if m, _ := e.show(ms[0].Key.Session); m.ItemCount != 4 || m.Usage.TotalTokens <= ms[0].Usage.TotalTokens {
				t.Errorf("after run 2: %d items, usage %+v (was %+v)", m.ItemCount, m.Usage, ms[0].Usage)
			}
		})
	}
}

func TestChatToolsStayInTheProject(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := fakeServer(t, e, "responses")
	outside := filepath.Join(filepath.Dir(e.dir), filepath.Base(e.dir)+"-secret.txt")
	if err := os.WriteFile(outside, []byte("top secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	rel, _ := filepath.Rel(e.dir, outside)
	srv.Enqueue(
		fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "write_file", Arguments: `{"path":"notes/todo.txt","content":"buy milk"}`}}},
		fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "read_file", Arguments: `{"path":"` + rel + `"}`}}},
		fakeopenai.Reply{Text: "done"},
	)
	r := e.ok("", "chat", "-p", "take a note")
	if r.stdout != "done\n" {
		t.Errorf("stdout %q", r.stdout)
	}
	contains(t, "stderr", r.stderr, "[tool] write_file")
	contains(t, "stderr", r.stderr, "[tool] read_file")
	if b, err := os.ReadFile(filepath.Join(e.dir, "notes", "todo.txt")); err != nil || string(b) != "buy milk" {
		t.Errorf("write_file in the project: %q, %v", b, err)
	}
	_, items := e.show(e.ls()[0].Key.Session)
	var types []string
	for _, it := range items {
		types = append(types, it.Type())
		if strings.Contains(string(it), "top secret") {
			t.Errorf("a file outside the project reached the session: %s", it)
		}
	}
	want := []string{"message", "function_call", "function_call_output", "function_call", "function_call_output", "message"}
	if !slices.Equal(types, want) {
		t.Errorf("stored item types %v, want %v", types, want)
	}
}

func TestChatModelErrorIsOneLineAndKeepsTheInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := fakeServer(t, e, "chat")
	srv.Enqueue(fakeopenai.Reply{Status: 401, Error: "Incorrect API key provided."})
	r := e.run("", "chat", "-p", "are you there")
	checkFailure(t, r, 1, "401", []string{"chat", "-p"})
	contains(t, "stderr", r.stderr, "check OPENAI_API_KEY")
	// The message was saved before the model was called.
	if ms := e.ls(); len(ms) != 1 || ms[0].ItemCount != 1 {
		t.Fatalf("after a failed call: %+v", ms)
	}
	// A bad configuration is a usage error.
	e.vars = append(e.vars, "RECALL_API=telepathy")
	e.fails(2, `unknown wire API "telepathy"`, "chat", "-p", "x")
}
