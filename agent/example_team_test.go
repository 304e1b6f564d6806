package agent_test

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/provider/offline"
	"github.com/recallkit/recall/storekit"
)

// Teams, mode 1: a shared session. Several agents run concurrently
// against one session; each sees what the others stored. Run persists
// every turn as one batch, so the log stays well formed and no
// function_call is ever stored without its output. Use it when agents
// work on one problem and must see each other's work.
func Example_sharedSession() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	key := recall.Key{Project: "demo", Session: "war-room"}

	var wg sync.WaitGroup
	for _, name := range []string{"planner", "coder", "reviewer"} {
		a := &agent.Agent{Name: name, Model: offline.Model{}}
		wg.Go(func() {
			sess := recall.NewSession(store, key) // every agent, the same session
			if _, err := agent.Run(ctx, a, agent.UserText(name+" reporting"), agent.RunOptions{Session: sess}); err != nil {
				fmt.Println("error:", err)
			}
		})
	}
	wg.Wait()

	items, _ := recall.NewSession(store, key).GetItems(ctx, 0)
	fmt.Println(len(items), "items in the shared session")
	fmt.Println("well formed:", storekit.VerifySession(ctx, store, key) == nil)
	// Output:
	// 6 items in the shared session
	// well formed: true
}

// Teams, mode 2: one session per agent. Each long-lived specialist keeps
// its own history and sees only its own work; a coordinator passes them
// tasks (here by hand, or with SubagentTool and SubagentOptions.Session).
// Use it for specialists that work on across many tasks.
func Example_sessionPerAgent() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	specialists := map[string]*agent.Agent{
		"db":  {Name: "db", Model: offline.Model{}},
		"api": {Name: "api", Model: offline.Model{}},
	}
	for _, task := range []struct{ who, text string }{
		{"db", "add an index"}, {"api", "add an endpoint"}, {"db", "and a migration"},
	} {
		sess := recall.NewSession(store, recall.Key{Project: "demo", Session: "specialist-" + task.who})
		res, err := agent.Run(ctx, specialists[task.who], agent.UserText(task.text), agent.RunOptions{Session: sess})
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		_, said, _ := strings.Cut(res.Output, "canned. ") // the offline model's reply, without its preamble
		fmt.Println(task.who+":", said)
	}
	// Output:
	// db: I see 0 earlier items. You said: add an index
	// api: I see 0 earlier items. You said: add an endpoint
	// db: I see 2 earlier items. You said: and a migration
}

// manager is a model for the example below: it hands the user's message
// to the "researcher" tool, then repeats what came back. A real model
// decides this itself.
type manager struct{}

func (manager) Respond(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	last := req.Items[len(req.Items)-1]
	if last.Type() == "function_call_output" {
		return &agent.Response{Items: []recall.Item{recall.Message("assistant", "The researcher says: "+last.OutputText())}}, nil
	}
	args := fmt.Sprintf(`{"task":%q}`, "Find out: "+last.Text())
	return &agent.Response{Items: []recall.Item{agent.FunctionCallItem("call_1", "researcher", args)}}, nil
}

// An agent runs another agent as a tool. The subagent gets only the task
// the parent's model writes, never the parent's history; with Record, its
// transcript is kept under the parent session (Key.Subpath
// "subagents/researcher-1"), not listed as a main session, shown by
// `recall show ID --subagents`, and removed with the parent.
func ExampleSubagentTool() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	researcher := &agent.Agent{Name: "researcher", Model: offline.Model{}}
	lead := &agent.Agent{
		Name:  "lead",
		Model: manager{},
		Tools: []agent.Tool{agent.SubagentTool(researcher, agent.SubagentOptions{Record: true})},
	}
	key := recall.Key{Project: "demo", Session: "lead"}
	res, err := agent.Run(ctx, lead, agent.UserText("why is the sky blue?"), agent.RunOptions{Session: recall.NewSession(store, key)})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	_, said, _ := strings.Cut(res.Output, "canned. ") // the offline model's reply, without its preamble
	fmt.Println(said)

	subs, _ := store.List(ctx, "demo", recall.ListOptions{Parent: "lead"})
	for _, m := range subs.Sessions {
		fmt.Println("record:", m.Key.Subpath, m.ItemCount, "items")
	}
	// Output:
	// I see 0 earlier items. You said: Find out: why is the sky blue?
	// record: subagents/researcher-1 2 items
}
