package recall_test

// The README's library snippets, each run as written (readme_test.go
// checks that every Go snippet of the README stands in an example).

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
)

// A Session over the file store: load the history, add items, pop one.
func ExampleNewSession_fileStore() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "recall-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := filestore.Open(filestore.Options{Dir: dir}) // Dir "": ~/.recall, or $RECALL_HOME
	project, _ := recall.ProjectKey(".")
	sess := recall.NewSession(store, recall.Key{Project: project, Session: recall.NewSessionID()})

	history, _ := sess.GetItems(ctx, 50)                    // newest 50 items, oldest first
	_ = sess.AddItems(ctx, recall.Message("user", "hello")) // one atomic batch
	last, _ := sess.PopItem(ctx)                            // undo

	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	fmt.Println(len(history), "items before; popped:", last.Text())
	// Output:
	// 0 items before; popped: hello
}

// The lifecycle methods of a session handle work on any store.
func ExampleStoreSession_Create_lifecycle() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()
	key := recall.Key{Project: "demo", Session: "ticket-4711"}
	newKey := recall.Key{Project: "demo", Session: "ticket-4711-retry"}
	cutoff := time.Now().AddDate(0, 0, -30)

	sess := recall.NewSession(store, key)            // a handle: nothing is read or written yet
	m, err := sess.Create(ctx, recall.CreateOptions{ // listed at once; ErrConflict if it exists
		Title: "Ticket 4711", Metadata: map[string]string{"tier": "gold"}, // 16 pairs, 64-byte keys, 512-byte values
		Items: []recall.Item{recall.Message("user", "My order is late."), recall.Message("assistant", "Let me check.")}})
	m, err = sess.ChangeMeta(ctx, recall.MetaChange{ // one change, one entry:
		Pinned: new(true), Metadata: map[string]*string{"tier": nil}}) // nil removes a pair
	live, lastSeq, err := store.Items(ctx, key, 0)           // the view and the seq it was read at
	page, err := sess.ReadItems(ctx, recall.ItemPageOptions{ // one page by position:
		Limit: 20, Oldest: true, After: live[0].Ref}) // O(page) on every store here
	fork, err := sess.Fork(ctx, lastSeq, newKey)                                     // the view as of a seq, as a new session
	removed, err := sess.RemoveItem(ctx, live[1].Ref)                                // any one item; the log keeps it
	rep, err := recall.Cleanup(ctx, store, recall.CleanupOptions{OlderThan: cutoff}) // to the trash: untouched since the cutoff, unpinned

	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q pinned %v %v, %d items read at seq %d\n", m.Title, m.Pinned, m.Metadata, len(live), lastSeq)
	fmt.Printf("the page after the first item: %q\n", page.Items[0].Item.Text())
	fmt.Printf("fork: %d items; removed %q; cleanup removed %d\n", fork.ItemCount, removed.Text(), len(rep.Removed))
	// Output:
	// "Ticket 4711" pinned true map[], 2 items read at seq 6
	// the page after the first item: "Let me check."
	// fork: 2 items; removed "Let me check."; cleanup removed 0
}

// A delete moves a session to the trash, from where it comes back as it
// was; only EmptyTrash (or Store.Remove) deletes bytes.
func ExampleStoreSession_Trash() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()
	sess := recall.NewSession(store, recall.Key{Project: "demo", Session: "ticket-4711"})
	if err := sess.AddItems(ctx, recall.Message("user", "My order is late.")); err != nil {
		log.Fatal(err)
	}

	m, err := sess.Trash(ctx)                                                          // out of every List and Search; Meta.Trashed is set
	trash, err := store.List(ctx, "demo", recall.ListOptions{Trashed: true})           // the trash, paged like any List
	m, err = sess.Restore(ctx)                                                         // back as it was: items, title, pins, labels
	_, err = sess.Trash(ctx)                                                           // and again
	grace := time.Now().Add(-recall.DefaultTrashGrace)                                 // 30 days
	rep, err := recall.EmptyTrash(ctx, store, recall.CleanupOptions{OlderThan: grace}) // deletes for good what was trashed before

	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d in the trash; restored with %d item; emptying now deletes %d\n", len(trash.Sessions), m.ItemCount, len(rep.Removed))
	// Output:
	// 1 in the trash; restored with 1 item; emptying now deletes 0
}

// Search pages through hits with a cursor.
func ExampleSearch_pages() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()
	for i, text := range []string{"The tokenizer makes an emoji split in two.", "Why does the tokenizer emoji split?"} {
		sess := recall.NewSession(store, recall.Key{Project: "demo", Session: fmt.Sprint("chat-", i)})
		if err := sess.AddItems(ctx, recall.Message("user", text)); err != nil {
			log.Fatal(err)
		}
	}

	opts := recall.SearchOptions{Query: `tokenizer "emoji split"`, Limit: 1}
	page, err := recall.Search(ctx, store, opts)
	for _, h := range page.Hits { // h.Key, h.Title, h.Ref (the item), h.Role, h.Time, h.Snippet, h.Matches
		fmt.Println(h.Key, h.Snippet)
	}
	opts.Cursor = page.Next // "" on the last page
	next, err := recall.Search(ctx, store, opts)

	if err != nil {
		log.Fatal(err)
	}
	for _, h := range next.Hits {
		fmt.Println(h.Key, h.Snippet)
	}
	// Output:
	// demo/chat-1 Why does the tokenizer emoji split?
	// demo/chat-0 The tokenizer makes an emoji split in two.
}
