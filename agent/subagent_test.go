package agent_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/storekit"
)

// taskArgs is the JSON arguments of a subagent call.
func taskArgs(task string) string {
	b, _ := json.Marshal(map[string]string{"task": task})
	return string(b)
}

// The subagent sees the task and nothing of the parent's conversation;
// its transcript is recorded under the parent, numbered per call; the
// records are not main sessions and go with the parent.
func TestSubagentRecords(t *testing.T) {
	ctx := context.Background()
	for name, store := range map[string]recall.Store{
		"memstore":  memstore.New(memstore.Options{}),
		"filestore": mustFilestore(t),
	} {
		t.Run(name, func(t *testing.T) {
			srv := fakeopenai.New()
			t.Cleanup(srv.Close)
			m, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "k", Model: "fake", API: openai.APIResponses, MaxRetries: -1})
			if err != nil {
				t.Fatal(err)
			}
			researcher := &agent.Agent{Name: "researcher", Instructions: "You research.", Model: m}
			parent := &agent.Agent{Name: "lead", Instructions: "You lead.", Model: m,
				Tools: []agent.Tool{agent.SubagentTool(researcher, agent.SubagentOptions{Record: true})}}
			key := recall.Key{Project: "p", Session: "parent"}
			sess := recall.NewSession(store, key)
			srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
				switch {
				case r.Instructions() == "You research.":
					return fakeopenai.Reply{Text: "found: " + r.LastUserText()}
				case len(r.Input()) > 0 && strings.Contains(string(r.Input()[len(r.Input())-1]), "function_call_output"):
					return fakeopenai.Reply{Text: "done"}
				}
				return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "researcher", Arguments: taskArgs("look up " + r.LastUserText())}}}
			})
			if _, err := agent.Run(ctx, parent, agent.UserText("secret parent context"), agent.RunOptions{Session: sess}); err != nil {
				t.Fatal(err)
			}
			if _, err := agent.Run(ctx, parent, agent.UserText("second"), agent.RunOptions{Session: sess}); err != nil {
				t.Fatal(err)
			}
			for _, r := range srv.Requests() {
				if r.Instructions() != "You research." {
					continue
				}
				if len(r.Input()) != 1 || strings.Contains(r.LastUserText(), "parent") && r.LastUserText() != "look up secret parent context" {
					t.Errorf("the subagent was sent %s", r.Body)
				}
			}
			// the parent saw the subagent's answer as the tool output
			items, _ := sess.GetItems(ctx, 0)
			if out := items[2].OutputText(); out != "found: look up secret parent context" {
				t.Errorf("tool output %q", out)
			}
			page, err := store.List(ctx, "p", recall.ListOptions{})
			if err != nil || len(page.Sessions) != 1 {
				t.Fatalf("List = %+v, %v; want only the parent", page.Sessions, err)
			}
			subs, err := store.List(ctx, "p", recall.ListOptions{Parent: "parent", Limit: -1})
			if err != nil || len(subs.Sessions) != 2 {
				t.Fatalf("subagent records %+v, %v", subs.Sessions, err)
			}
			for i, want := range []string{"look up secret parent context", "look up second"} {
				k := recall.Key{Project: "p", Session: "parent", Subpath: "subagents/researcher-" + string(rune('1'+i))}
				rec, err := recall.NewSession(store, k).GetItems(ctx, 0)
				if err != nil || len(rec) != 2 || rec[0].Text() != want || rec[1].Text() != "found: "+want {
					t.Errorf("record %s = %s, %v", k, rec, err)
				}
			}
			if err := storekit.Verify(ctx, store); err != nil {
				t.Error(err)
			}
			// a new tool (a new process) numbers on from the records there
			parent.Tools = []agent.Tool{agent.SubagentTool(researcher, agent.SubagentOptions{Record: true})}
			if _, err := agent.Run(ctx, parent, agent.UserText("third"), agent.RunOptions{Session: sess}); err != nil {
				t.Fatal(err)
			}
			if _, err := store.Stat(ctx, recall.Key{Project: "p", Session: "parent", Subpath: "subagents/researcher-3"}); err != nil {
				t.Errorf("third record: %v", err)
			}
			if err := store.Remove(ctx, key); err != nil {
				t.Fatal(err)
			}
			subs, err = store.List(ctx, "p", recall.ListOptions{Parent: "parent", Limit: -1})
			if err != nil || len(subs.Sessions) != 0 {
				t.Errorf("records after removing the parent: %+v, %v", subs.Sessions, err)
			}
		})
	}
}

func mustFilestore(t *testing.T) *filestore.Store {
	t.Helper()
	s, err := filestore.Open(filestore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// scripted is a model that answers from a function, for tests and
// examples that need tool calls without a server.
type scripted func(req *agent.Request) []recall.Item

func (s scripted) Respond(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	return &agent.Response{Items: s(req)}, nil
}

// lastOutput returns the output of the newest item when it is a tool
// output.
func lastOutput(items []recall.Item) (string, bool) {
	if n := len(items); n > 0 && items[n-1].Type() == "function_call_output" {
		return items[n-1].OutputText(), true
	}
	return "", false
}

// delegate is a parent model: it hands each user message to tool, then
// answers with what came back.
func delegate(tool string) scripted {
	return func(req *agent.Request) []recall.Item {
		if out, ok := lastOutput(req.Items); ok {
			return []recall.Item{recall.Message("assistant", "subagent says: "+out)}
		}
		last := req.Items[len(req.Items)-1].Text()
		return []recall.Item{agent.FunctionCallItem("call_"+last, tool, taskArgs(last))}
	}
}

// Without Record the subagent runs without a session; with Session it
// keeps its own history across calls; a nested subagent is recorded under
// its parent's record.
func TestSubagentSessions(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	// counts what it has seen: its own history, never the parent's
	counter := scripted(func(req *agent.Request) []recall.Item {
		return []recall.Item{recall.Message("assistant", "seen "+string(rune('0'+len(req.Items))))}
	})
	specialist := recall.NewSession(store, recall.Key{Project: "p", Session: "specialist"})
	for _, c := range []struct {
		opts agent.SubagentOptions
		want []string
	}{
		{agent.SubagentOptions{Name: "fresh"}, []string{"seen 1", "seen 1"}},
		{agent.SubagentOptions{Name: "kept", Session: specialist}, []string{"seen 1", "seen 3"}},
	} {
		tool := agent.SubagentTool(&agent.Agent{Model: counter}, c.opts)
		parent := &agent.Agent{Name: "lead", Model: delegate(tool.Name()), Tools: []agent.Tool{tool}}
		sess := recall.NewSession(store, recall.Key{Project: "p", Session: "lead-" + c.opts.Name})
		for i, want := range c.want {
			res, err := agent.Run(ctx, parent, agent.UserText("task"), agent.RunOptions{Session: sess})
			if err != nil || res.Output != "subagent says: "+want {
				t.Errorf("%s call %d: %q, %v; want %q", c.opts.Name, i, res.Output, err, want)
			}
		}
	}
	if subs, _ := store.List(ctx, "p", recall.ListOptions{Parent: "lead-fresh", Limit: -1}); len(subs.Sessions) != 0 {
		t.Errorf("a subagent without Record left records: %+v", subs.Sessions)
	}

	// nested: lead -> mid -> leaf, all recorded
	leaf := &agent.Agent{Name: "leaf", Model: counter}
	mid := &agent.Agent{Name: "mid", Model: delegate("leaf"), Tools: []agent.Tool{agent.SubagentTool(leaf, agent.SubagentOptions{Record: true})}}
	lead := &agent.Agent{Name: "lead", Model: delegate("mid"), Tools: []agent.Tool{agent.SubagentTool(mid, agent.SubagentOptions{Record: true})}}
	key := recall.Key{Project: "p", Session: "nested"}
	res, err := agent.Run(ctx, lead, agent.UserText("deep"), agent.RunOptions{Session: recall.NewSession(store, key)})
	if err != nil || res.Output != "subagent says: subagent says: seen 1" {
		t.Fatalf("nested = %q, %v", res.Output, err)
	}
	subs, _ := store.List(ctx, "p", recall.ListOptions{Parent: "nested", Limit: -1})
	var paths []string
	for _, m := range subs.Sessions {
		paths = append(paths, m.Key.Subpath)
	}
	if len(paths) != 2 || !strings.Contains(strings.Join(paths, " "), "subagents/mid-1/subagents/leaf-1") {
		t.Errorf("nested records %v", paths)
	}
}

func TestSubagentBadTask(t *testing.T) {
	tool := agent.SubagentTool(&agent.Agent{Model: scripted(func(*agent.Request) []recall.Item { return nil })}, agent.SubagentOptions{Name: "a b/c"})
	if tool.Name() != "a-b-c" {
		t.Errorf("tool name %q", tool.Name())
	}
	for _, args := range []string{`{}`, `{"task":"  "}`, `[`} {
		if _, err := tool.Call(context.Background(), json.RawMessage(args)); err == nil {
			t.Errorf("Call(%s) succeeded", args)
		}
	}
	if _, err := agent.SubagentTool(nil, agent.SubagentOptions{}).Call(context.Background(), json.RawMessage(`{"task":"x"}`)); err == nil {
		t.Error("a subagent without a model ran")
	}

}
