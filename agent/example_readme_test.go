package agent_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/provider/openai"
	"github.com/recallkit/recall/title"
)

// Run loads the history, saves the input and each turn, and titles the
// session; here against a stand-in for an OpenAI-compatible server, named
// by the environment as a real one would be.
func ExampleRun() {
	ctx := context.Background()
	srv := fakeopenai.New()
	defer srv.Close()
	srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		if r.Instructions() == title.Prompt {
			return fakeopenai.Reply{Text: "Storage decision"}
		}
		return fakeopenai.Reply{Text: "We chose SQLite."}
	})
	for k, v := range map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "key", "RECALL_MODEL": "gpt-4o-mini", "RECALL_API": "responses"} {
		os.Setenv(k, v)
		defer os.Unsetenv(k)
	}
	store := memstore.New(memstore.Options{})
	defer store.Close()
	sess := recall.NewSession(store, recall.Key{Project: "demo", Session: "chat-1"})

	model, err := openai.New(openai.ConfigFromEnv()) // OPENAI_BASE_URL, OPENAI_API_KEY, RECALL_MODEL
	a := &agent.Agent{Name: "helper", Instructions: "Be brief.", Model: model}
	res, err := agent.Run(ctx, a, agent.UserText("What did we decide?"), agent.RunOptions{
		Session:      sess,
		HistoryLimit: 200,
		OnDelta:      func(s string) { fmt.Print(s) },                                     // streamed text
		OnPersist:    func(ctx context.Context, items []recall.Item) error { return nil }, // memory layer
		Titler:       &title.Generator{Model: model},                                      // auto title after the first run
	})

	if err != nil {
		log.Fatal(err)
	}
	fmt.Println()
	fmt.Printf("title %q, %d turn\n", res.Title, res.Turns)
	// Output:
	// We chose SQLite.
	// title "Storage decision", 1 turn
}
