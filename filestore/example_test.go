package filestore_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

// An agent keeps one conversation in a file store: it appends each turn's
// items, reloads the history on the next run, and lists its sessions.
func Example() {
	home, err := os.MkdirTemp("", "recall-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)

	// Options{} would use $RECALL_HOME or ~/.recall.
	store, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	ctx := context.Background()
	key := recall.Key{Project: "my-project", Session: "demo"}
	sess := recall.NewSession(store, key)
	if err := sess.AddItems(ctx,
		recall.Message("user", "What is 2+2?"),
		recall.Message("assistant", "4."),
	); err != nil {
		log.Fatal(err)
	}
	if err := sess.AddItems(ctx, recall.Message("user", "And 3+3?")); err != nil {
		log.Fatal(err)
	}

	history, err := sess.GetItems(ctx, 0)
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range history {
		fmt.Printf("%s: %s\n", it.Role(), it.Text())
	}

	last, err := sess.PopItem(ctx) // take the question back
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("popped:", last.Text())

	page, err := store.List(ctx, "my-project", recall.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range page.Sessions {
		fmt.Printf("session %s: %d items, last seq %d\n", m.Key.Session, m.ItemCount, m.LastSeq)
	}
	// Output:
	// user: What is 2+2?
	// assistant: 4.
	// user: And 3+3?
	// popped: And 3+3?
	// session demo: 2 items, last seq 4
}

// Each session is one JSONL file under the project's directory; subagent
// records live in a directory named after their session.
func ExampleStore_ProjectDir() {
	home, err := os.MkdirTemp("", "recall-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	store, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	ctx := context.Background()
	main := recall.Key{Project: "my-project", Session: "demo"}
	sub := recall.Key{Project: "my-project", Session: "demo", Subpath: "subagents/researcher"}
	for _, k := range []recall.Key{main, sub} {
		if err := recall.NewSession(store, k).AddItems(ctx, recall.Message("user", "hi")); err != nil {
			log.Fatal(err)
		}
	}

	dir, err := store.ProjectDir("my-project")
	if err != nil {
		log.Fatal(err)
	}
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && filepath.Ext(path) == ".jsonl" {
			rel, _ := filepath.Rel(home, path)
			fmt.Println(filepath.ToSlash(rel))
		}
		return nil
	})
	// Output:
	// projects/my-project/demo/subagents/researcher.jsonl
	// projects/my-project/demo.jsonl
}
