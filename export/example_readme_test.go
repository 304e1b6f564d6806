package export_test

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/memstore"
)

// A session leaves one store as a page and as a JSONL backup, and the
// backup is read into another store.
func ExampleLoad() {
	ctx := context.Background()
	store, other := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	defer store.Close()
	defer other.Close()
	key := recall.Key{Project: "demo", Session: "chat-1"}
	if _, err := recall.NewSession(store, key).Create(ctx, recall.CreateOptions{Title: "Parser", Items: []recall.Item{recall.Message("user", "Fix the parser.")}}); err != nil {
		log.Fatal(err)
	}
	w, backup := new(strings.Builder), new(bytes.Buffer)

	s, err := export.Load(ctx, store, key) // metadata, whole log, subagent records
	err = export.HTML(w, s)                // or Markdown, JSON, Write(w, format, s)
	err = export.JSONL(backup, s)          // recall's own log, lossless
	// read back into another store: any number of sessions, a batch at a time
	err = export.ImportJSONL(ctx, other, backup, export.ImportOptions{}, nil)

	if err != nil {
		log.Fatal(err)
	}
	m, _ := other.Stat(ctx, key)
	fmt.Println(strings.HasPrefix(w.String(), "<!DOCTYPE html>"), m.Key, m.Title, m.ItemCount)
	// Output:
	// true demo/chat-1 Parser 1
}
