package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/provider/openai"
)

// The crash tests run agent.Run in a child process (this test binary,
// re-executed) on a file store, and SIGKILL it at a chosen instant of the
// run. The parent then reopens the store and checks that exactly the
// completed steps survived.
const (
	crashChildEnv = "RECALL_AGENT_CRASH_CHILD"
	crashDirEnv   = "RECALL_AGENT_CRASH_DIR"
	crashURLEnv   = "RECALL_AGENT_CRASH_URL"
	crashKeyEnv   = "RECALL_AGENT_CRASH_SESSION"
)

var crashKey = func(id string) recall.Key { return recall.Key{Project: "crash", Session: id} }

// TestCrashChild is the child's body; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	if os.Getenv(crashChildEnv) != "1" {
		t.Skip("runs only as the child of a crash test")
	}
	dir := os.Getenv(crashDirEnv)
	store, err := filestore.Open(filestore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m, err := openai.New(openai.Config{BaseURL: os.Getenv(crashURLEnv), APIKey: "k", Model: "fake", API: openai.APIResponses, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	// hang blocks until the process is killed, after saying it runs.
	hang := agent.Func("hang", "", nil, func(ctx context.Context, _ json.RawMessage) (string, error) {
		os.WriteFile(filepath.Join(dir, "tool-running"), nil, 0o644)
		select {}
	})
	a := &agent.Agent{Model: m, Tools: []agent.Tool{readTool, hang}}
	sess := recall.NewSession(store, crashKey(os.Getenv(crashKeyEnv)))
	_, err = agent.Run(context.Background(), a, agent.UserText("crash test"), agent.RunOptions{Session: sess})
	t.Fatalf("the run was not killed: %v", err)
}

// startChild runs the child and returns a func that SIGKILLs it and
// waits for it to die.
func startChild(t *testing.T, dir, url, id string) (kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"=1", crashDirEnv+"="+dir, crashURLEnv+"="+url, crashKeyEnv+"="+id)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	return func() {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("child exited before the kill: %v\n%s", err, out.String())
		default:
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		err := <-done
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("child did not die of SIGKILL: %v\n%s", err, out.String())
		}
	}
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

func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s never appeared", path)
}

func TestCrashBetweenTurns(t *testing.T) {
	if testing.Short() {
		t.Skip("crash tests start processes")
	}
	cases := []struct {
		name string
		// reply answers request n of the child.
		reply func(n int) fakeopenai.Reply
		// crash waits for the instant to kill.
		crash func(t *testing.T, ch <-chan fakeopenai.Request, dir string)
		// survived is what the store must hold afterwards.
		survived string
		usage    int64
	}{{
		name: "during turn 1",
		reply: func(n int) fakeopenai.Reply {
			return fakeopenai.Reply{Hang: true}
		},
		crash:    func(t *testing.T, ch <-chan fakeopenai.Request, _ string) { waitRequest(t, ch, 1) },
		survived: "user",
	}, {
		name: "during turn 2",
		reply: func(n int) fakeopenai.Reply {
			if n == 1 {
				return fakeopenai.Reply{Text: "Reading.", ToolCalls: []fakeopenai.ToolCall{{Name: "read_note"}}, Usage: fakeopenai.Usage{Input: 10, Output: 3}}
			}
			return fakeopenai.Reply{Hang: true}
		},
		crash:    func(t *testing.T, ch <-chan fakeopenai.Request, _ string) { waitRequest(t, ch, 2) },
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
		crash: func(t *testing.T, _ <-chan fakeopenai.Request, dir string) {
			waitFile(t, filepath.Join(dir, "tool-running"))
		},
		survived: "user,function_call,function_call_output",
		usage:    13,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			srv := fakeopenai.New()
			defer srv.Close()
			srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply { return c.reply(r.N) })
			ch := srv.Notify()
			id := recall.NewSessionID()

			kill := startChild(t, dir, srv.URL(), id)
			c.crash(t, ch, dir)
			kill()

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
			if err := recall.VerifySession(ctx, store, crashKey(id)); err != nil {
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
