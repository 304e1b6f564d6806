package compact_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memory"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/provider/openai"
)

// agent.Run on a compacting session, with the memory hook: the session is
// compacted once its history passes the budget (not yet here), and a
// cheap model keeps notes after every exchange.
func ExampleNewSession_agentRun() {
	ctx := context.Background()
	srv := fakeopenai.New() // a stand-in for an OpenAI-compatible server
	defer srv.Close()
	srv.Enqueue(fakeopenai.Reply{Text: "Noted: SQLite it is."}, fakeopenai.Reply{Text: "- Sessions are stored in SQLite."})
	model, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "key", Model: "gpt-4o", API: openai.APIResponses})
	if err != nil {
		log.Fatal(err)
	}
	cheap := model
	dir, err := os.MkdirTemp("", "compact-example") // the project's folder
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store := memstore.New(memstore.Options{})
	defer store.Close()
	key := recall.Key{Project: "demo", Session: "chat-1"}
	a := &agent.Agent{Name: "helper", Model: model}
	text := "We store sessions in SQLite."

	sess := compact.NewSession(store, key,
		compact.Fallback(compact.Server(model), &compact.Summarizer{Model: model}), compact.Options{})
	res, err := agent.Run(ctx, a, agent.UserText(text), agent.RunOptions{
		Session:       sess,
		CompactTokens: 60_000, // estimated as 1 token per 4 bytes of item JSON
		OnPersist:     memory.Hook(&memory.Notes{Model: cheap, File: memory.ForProject(dir)}, nil),
	})

	if err != nil {
		log.Fatal(err)
	}
	notes, err := memory.ForProject(dir).Notes()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Output)
	fmt.Println("compacted:", res.Compaction != nil)
	fmt.Println("notes:", notes)
	// Output:
	// Noted: SQLite it is.
	// compacted: false
	// notes: [Sessions are stored in SQLite.]
}
