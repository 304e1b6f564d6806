package agent_test

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/provider/offline"
)

// Example gives an agent a session: every Run loads the history, and
// persists the input and each turn as it completes. With a real model,
// use openai.New(openai.ConfigFromEnv()) and filestore.Open instead.
func Example() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	sess := recall.NewSession(store, recall.Key{Project: "demo", Session: recall.NewSessionID()})
	a := &agent.Agent{Name: "demo", Model: offline.Model{}}

	for _, text := range []string{"Hi, I'm Ann.", "What's my name?"} {
		res, err := agent.Run(ctx, a, agent.UserText(text), agent.RunOptions{Session: sess})
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(res.Output)
	}
	items, _ := sess.GetItems(ctx, 0)
	fmt.Println(len(items), "items stored")
	// Output:
	// [offline] No model is configured (set OPENAI_API_KEY), so this reply is canned. I see 0 earlier items. You said: Hi, I'm Ann.
	// [offline] No model is configured (set OPENAI_API_KEY), so this reply is canned. I see 2 earlier items. You said: What's my name?
	// 4 items stored
}
