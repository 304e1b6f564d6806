package memory_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/memory"
	"github.com/recallkit/recall/memstore"
)

// noteTaker stands in for a cheap model in the example: every exchange
// gives it one note.
type noteTaker struct{}

func (noteTaker) Respond(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	return &agent.Response{Items: []recall.Item{recall.Message("assistant", "- The project uses tabs.")}}, nil
}

// replier is the agent's model in the example.
type replier struct{}

func (replier) Respond(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	return &agent.Response{Items: []recall.Item{recall.Message("assistant", "Noted.")}}, nil
}

// The memory hook takes notes after every exchange; a new session starts
// with them in its system prompt.
func ExampleNotes() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "memory-example")
	defer os.RemoveAll(dir)
	store := memstore.New(memstore.Options{})
	file := memory.ForProject(filepath.Join(dir, "projects", "demo")) // filestore: store.ProjectDir("demo")
	notes := &memory.Notes{Model: noteTaker{}, File: file}

	a := &agent.Agent{Name: "demo", Instructions: "You help.", Model: replier{}}
	sess := recall.NewSession(store, recall.Key{Project: "demo", Session: "one"})
	if _, err := agent.Run(ctx, a, agent.UserText("We indent with tabs."), agent.RunOptions{Session: sess, OnPersist: memory.Hook(notes, nil)}); err != nil {
		fmt.Println("error:", err)
		return
	}
	list, _ := file.Notes()
	fmt.Println(list)

	// The next session starts with the notes.
	a.Instructions, _ = file.Instructions("You help.")
	fmt.Println(a.Instructions)
	// Output:
	// [The project uses tabs.]
	// You help.
	//
	// ## Project memory
	//
	// Notes kept from earlier sessions in this project: decisions, rules and pitfalls. Follow them unless the user says otherwise.
	//
	// - The project uses tabs.
}
