package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/storekit"
)

// The crash tests run agent.Run in a child process (this test binary,
// re-executed by testkit) on a file store, and SIGKILL it at a chosen
// instant of the run. The parent then reopens the store and checks that
// exactly the completed steps survived.
const (
	crashDirEnv = "RECALL_AGENT_CRASH_DIR"
	crashURLEnv = "RECALL_AGENT_CRASH_URL"
	crashKeyEnv = "RECALL_AGENT_CRASH_SESSION"
)

var crashKey = func(id string) recall.Key { return recall.Key{Project: "crash", Session: id} }

func TestMain(m *testing.M) {
	testkit.Main(m, map[string]func() error{"crash": crashChild})
}

// crashChild is the child's body: a run that the parent kills. Its hang
// tool prints "tool running" and blocks until then.
func crashChild() error {
	dir := os.Getenv(crashDirEnv)
	store, err := filestore.Open(filestore.Options{Dir: dir})
	if err != nil {
		return err
	}
	m, err := openai.New(openai.Config{BaseURL: os.Getenv(crashURLEnv), APIKey: "k", Model: "fake", API: openai.APIResponses, MaxRetries: -1})
	if err != nil {
		return err
	}
	hang := agent.Func("hang", "", nil, func(ctx context.Context, _ json.RawMessage) (string, error) {
		fmt.Println("tool running")
		select {}
	})
	a := &agent.Agent{Model: m, Tools: []agent.Tool{readTool, hang}}
	sess := recall.NewSession(store, crashKey(os.Getenv(crashKeyEnv)))
	_, err = agent.Run(context.Background(), a, agent.UserText("crash test"), agent.RunOptions{Session: sess})
	return fmt.Errorf("the run was not killed: %v", err)
}

// waitRequest waits for the server's request number n.
func waitRequest(t *testing.T, ch <-chan fakeopenai.Request, n int) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case r := <-ch:
			if r.N == n {
				return
			}
		case <-timeout:
			t.Fatalf("request %d never came", n)
		}
	}
}

func TestCrashBetweenTurns(t *testing.T) {
	cases := []struct {
		name string
		// reply answers request n of the child.
		reply func(n int) fakeopenai.Reply
		// crash waits for the instant to kill.
		crash func(t *testing.T, ch <-chan fakeopenai.Request, child *testkit.Child)
		// survived is what the store must hold afterwards.
		survived string
		usage    int64
	}{{
		name: "during turn 1",
		reply: func(n int) fakeopenai.Reply {
			return fakeopenai.Reply{Hang: true}
		},
		crash:    func(t *testing.T, ch <-chan fakeopenai.Request, _ *testkit.Child) { waitRequest(t, ch, 1) },
		survived: "user",
	}, {
		name: "during turn 2",
		reply: func(n int) fakeopenai.Reply {
			if n == 1 {
				return fakeopenai.Reply{Text: "Reading.", ToolCalls: []fakeopenai.ToolCall{{Name: "read_note"}}, Usage: fakeopenai.Usage{Input: 10, Output: 3}}
			}
			return fakeopenai.Reply{Hang: true}
		},
		crash:    func(t *testing.T, ch <-chan fakeopenai.Request, _ *testkit.Child) { waitRequest(t, ch, 2) },
		survived: "user,assistant,function_call,function_call_output",
		usage:    13,
	}, {
		name: "inside a tool call of turn 2",
		reply: func(n int) fakeopenai.Reply {
			if n == 1 {
				return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "read_note"}}, Usage: fakeopenai.Usage{Input: 10, Output: 3}}
			}
			return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "read_note"}, {Name: "hang"}}}
		},
		crash: func(t *testing.T, _ <-chan fakeopenai.Request, child *testkit.Child) {
			if !child.WaitLines(1, 30*time.Second) {
				t.Fatalf("the hang tool never ran\n%s", child.Stderr())
			}
		},
		survived: "user,function_call,function_call_output",
		usage:    13,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			srv := fakeopenai.New()
			defer srv.Close()
			srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply { return c.reply(r.N) })
			ch := srv.Notify()
			id := recall.NewSessionID()

			child := testkit.Start(t, testkit.Command("crash", crashDirEnv+"="+dir, crashURLEnv+"="+srv.URL(), crashKeyEnv+"="+id))
			c.crash(t, ch, child)
			child.Kill()

			store, err := filestore.Open(filestore.Options{Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			sess := recall.NewSession(store, crashKey(id))
			stored, err := sess.GetItems(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := types(stored); got != c.survived {
				t.Fatalf("after the kill the session holds %s, want %s", got, c.survived)
			}
			if err := storekit.VerifySession(ctx, store, crashKey(id)); err != nil {
				t.Errorf("verify: %v", err)
			}
			if m, err := store.Stat(ctx, crashKey(id)); err != nil || m.Usage.TotalTokens != c.usage {
				t.Errorf("usage = %+v, %v; want total %d", m.Usage, err, c.usage)
			}

			// The next run carries on from what survived.
			srv.SetResponder(nil)
			m, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "k", Model: "fake", API: openai.APIResponses})
			if err != nil {
				t.Fatal(err)
			}
			before := len(srv.Requests())
			if _, err := agent.Run(ctx, &agent.Agent{Model: m}, agent.UserText("again"), agent.RunOptions{Session: sess}); err != nil {
				t.Fatal(err)
			}
			sameItems(t, "resumed input", srv.Requests()[before].Input(), append(stored, agent.UserText("again")...))
		})
	}
}
