package export_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/memstore"
)

// exampleStore returns a store holding one short session, written at
// fixed times so the examples print the same every run.
func exampleStore(ctx context.Context) (recall.Store, recall.Key) {
	st := memstore.New(memstore.Options{})
	key := recall.Key{Project: "demo", Session: "s1"}
	entries := append([]recall.Entry{
		{Kind: recall.KindCreate},
		recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "List the files", Source: recall.TitleUser}),
	}, recall.ItemEntries(
		recall.Message("user", "Which files are here?"),
		recall.Item(`{"type":"function_call","call_id":"c1","name":"ls","arguments":"{\"dir\":\".\"}"}`),
		recall.Item(`{"type":"function_call_output","call_id":"c1","output":"a.go\nb.go"}`),
		recall.Message("assistant", "Two: a.go and b.go."),
	)...)
	start := time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)
	for i := range entries {
		entries[i].Time = start.Add(time.Duration(i) * time.Second)
	}
	if _, err := st.Append(ctx, key, recall.IfNew(), entries...); err != nil {
		log.Fatal(err)
	}
	return st, key
}

// Export a session as Markdown, for a pull request.
func ExampleMarkdown() {
	ctx := context.Background()
	st, key := exampleStore(ctx)
	s, err := export.Load(ctx, st, key)
	if err != nil {
		log.Fatal(err)
	}
	if err := export.Markdown(os.Stdout, s); err != nil {
		log.Fatal(err)
	}
	// Output:
	// # List the files
	//
	// - **Session:** `s1` in project `demo`
	// - **Created:** 2025-06-01 10:00:00 UTC · **Updated:** 2025-06-01 10:00:05 UTC
	// - **Items:** 4
	//
	// ## Turn 1 · 2025-06-01 10:00:02 UTC
	//
	// **User**
	//
	// Which files are here?
	//
	// **Tool call `ls` · `c1`**
	//
	// ```json
	// {
	//   "dir": "."
	// }
	// ```
	//
	// **Tool output · `c1`**
	//
	// ```
	// a.go
	// b.go
	// ```
	//
	// **Assistant**
	//
	// Two: a.go and b.go.
}

// Export a session as the OpenAI Conversations item list.
func ExampleJSON() {
	ctx := context.Background()
	st, key := exampleStore(ctx)
	s, err := export.Load(ctx, st, key)
	if err != nil {
		log.Fatal(err)
	}
	if err := export.JSON(os.Stdout, s); err != nil {
		log.Fatal(err)
	}
	// Output:
	// {"object":"list","data":[
	// {"id":"recall-3","type":"message","role":"user","content":[{"type":"input_text","text":"Which files are here?"}]},
	// {"id":"recall-4","type":"function_call","call_id":"c1","name":"ls","arguments":"{\"dir\":\".\"}"},
	// {"id":"recall-5","type":"function_call_output","call_id":"c1","output":"a.go\nb.go"},
	// {"id":"recall-6","type":"message","role":"assistant","content":[{"type":"output_text","text":"Two: a.go and b.go."}]}
	// ],"first_id":"recall-3","last_id":"recall-6","has_more":false}
}

// Serve a session as it is read, a page of its log at a time: what a web
// handler does, so a long session costs it no more memory than a short one.
func ExampleStream() {
	ctx := context.Background()
	st, key := exampleStore(ctx)
	if err := export.Stream(ctx, os.Stdout, export.FormatJSON, st, key); err != nil {
		log.Fatal(err) // a missing session fails before anything is written
	}
	// Output:
	// {"object":"list","data":[
	// {"id":"recall-3","type":"message","role":"user","content":[{"type":"input_text","text":"Which files are here?"}]},
	// {"id":"recall-4","type":"function_call","call_id":"c1","name":"ls","arguments":"{\"dir\":\".\"}"},
	// {"id":"recall-5","type":"function_call_output","call_id":"c1","output":"a.go\nb.go"},
	// {"id":"recall-6","type":"message","role":"assistant","content":[{"type":"output_text","text":"Two: a.go and b.go."}]}
	// ],"first_id":"recall-3","last_id":"recall-6","has_more":false}
}

// Copy a session from one store to another through recall's own log: the
// items arrive byte for byte.
func ExampleImport() {
	ctx := context.Background()
	src, key := exampleStore(ctx)
	s, err := export.Load(ctx, src, key)
	if err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer
	if err := export.JSONL(&file, s); err != nil {
		log.Fatal(err)
	}

	dst := memstore.New(memstore.Options{})
	sessions, err := export.ReadJSONL(&file)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range sessions {
		res, err := export.Import(ctx, dst, s, export.ImportOptions{})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Status, res.Key, res.Entries, "entries")
	}
	m, _ := dst.Stat(ctx, key)
	fmt.Println(m.Title, m.ItemCount, "items")

	// Importing the same file again changes nothing.
	res, _ := export.Import(ctx, dst, sessions[0], export.ImportOptions{})
	fmt.Println(res.Status)
	// Output:
	// new demo/s1 6 entries
	// List the files 4 items
	// unchanged
}
