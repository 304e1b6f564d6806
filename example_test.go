package recall_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// An agent loop keeps its conversation in a Session: load the history,
// append each turn, pop an item to retry a turn.
func ExampleNewSession() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()

	sess := recall.NewSession(store, recall.Key{Project: "demo", Session: "chat-1"})
	if err := sess.AddItems(ctx, recall.Message("user", "What is the capital of France?")); err != nil {
		log.Fatal(err)
	}
	// One turn's items are one atomic batch.
	if err := sess.AddItems(ctx,
		recall.Message("assistant", "Paris."),
		recall.Message("user", "And of Italy?"),
	); err != nil {
		log.Fatal(err)
	}

	history, err := sess.GetItems(ctx, 0) // 0: every item, oldest first
	if err != nil {
		log.Fatal(err)
	}
	for _, it := range history {
		fmt.Printf("%s: %s\n", it.Role(), it.Text())
	}

	window, _ := sess.GetItems(ctx, 2) // the newest two, oldest first
	fmt.Println("window:", window[0].Text(), "/", window[1].Text())

	last, _ := sess.PopItem(ctx) // take back the newest item
	fmt.Println("popped:", last.Text())
	history, _ = sess.GetItems(ctx, 0)
	fmt.Println("items left:", len(history))

	// Output:
	// user: What is the capital of France?
	// assistant: Paris.
	// user: And of Italy?
	// window: Paris. / And of Italy?
	// popped: And of Italy?
	// items left: 2
}

// List pages through sessions newest-updated first with a cursor.
func ExampleStore_List() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()

	day := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 5; i++ {
		key := recall.Key{Project: "demo", Session: fmt.Sprintf("chat-%d", i)}
		e := recall.Message("user", "hello").Entry()
		// Stores stamp entries with the current time when Time is zero;
		// this example fixes the times so that its output is stable.
		e.Time = day.Add(time.Duration(i) * time.Hour)
		if _, err := store.Append(ctx, key, recall.Guard{}, e); err != nil {
			log.Fatal(err)
		}
	}

	opts := recall.ListOptions{Limit: 2}
	for page := 1; ; page++ {
		p, err := store.List(ctx, "demo", opts)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print("page ", page, ":")
		for _, m := range p.Sessions {
			fmt.Printf(" %s (%d item, %s)", m.Key.Session, m.ItemCount, m.Updated.Format("15:04"))
		}
		fmt.Println()
		if p.Next == "" {
			break
		}
		opts.Cursor = p.Next
	}

	// Output:
	// page 1: chat-5 (1 item, 05:00) chat-4 (1 item, 04:00)
	// page 2: chat-3 (1 item, 03:00) chat-2 (1 item, 02:00)
	// page 3: chat-1 (1 item, 01:00)
}

// Fork copies a conversation as it stood at a seq into a new session; the
// original is untouched.
func ExampleStoreSession_Fork() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()

	orig := recall.Key{Project: "demo", Session: "chat-1"}
	sess := recall.NewSession(store, orig)
	_ = sess.AddItems(ctx, recall.Message("user", "Plan a trip."))      // seq 1
	_ = sess.AddItems(ctx, recall.Message("assistant", "To Rome?"))     // seq 2
	_ = sess.AddItems(ctx, recall.Message("user", "No, to the coast.")) // seq 3

	alt := recall.Key{Project: "demo", Session: "chat-1-alt"}
	m, err := recall.NewSession(store, orig).Fork(ctx, 2, alt)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("forked from %s at seq %d, %d items\n", m.ForkedFrom.Key, m.ForkedFrom.Seq, m.ItemCount)

	_ = recall.NewSession(store, alt).AddItems(ctx, recall.Message("user", "Yes, Rome."))
	for _, key := range []recall.Key{orig, alt} {
		items, _ := recall.NewSession(store, key).GetItems(ctx, 0)
		fmt.Printf("%s: %q\n", key.Session, items[len(items)-1].Text())
	}

	// Output:
	// forked from demo/chat-1 at seq 2, 2 items
	// chat-1: "No, to the coast."
	// chat-1-alt: "Yes, Rome."
}

// A title set by the user wins over generated ones.
func ExampleStoreSession_SetTitle() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()

	key := recall.Key{Project: "demo", Session: "chat-1"}
	_ = recall.NewSession(store, key).AddItems(ctx, recall.Message("user", "hi"))

	show := func(m recall.Meta, err error) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%q (%s)\n", m.Title, m.TitleSource)
	}
	show(recall.NewSession(store, key).SetTitle(ctx, "Greeting", recall.TitleAuto))
	show(recall.NewSession(store, key).SetTitle(ctx, "My first\nchat", recall.TitleUser))
	show(recall.NewSession(store, key).SetTitle(ctx, "Generated later", recall.TitleAuto))

	// Output:
	// "Greeting" (auto)
	// "My first chat" (user)
	// "My first chat" (user)
}

func ExampleProjectKey() {
	project, err := recall.ProjectKey("/home/ada/my project")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(project)
	// Output: -home-ada-my-project
}

func ExampleNewSessionID() {
	a, b := recall.NewSessionID(), recall.NewSessionID()
	// The first 8 characters differ, even for IDs made in the same
	// millisecond: they are random.
	fmt.Println(len(a), recall.ValidateID(a) == nil, a[:8] != b[:8])
	// Output: 36 true true
}

// Create makes a session before it has items, as the OpenAI Conversations
// API does; it is listed at once. Creating it again is a conflict.
func ExampleStoreSession_Create() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()

	key := recall.Key{Project: "demo", Session: "conv-1"}
	m, err := recall.NewSession(store, key).Create(ctx, recall.CreateOptions{
		Title:    "Support ticket 4711",
		Metadata: map[string]string{"customer": "acme", "tier": "gold"},
	})

	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %q, %d items, metadata %v\n", m.Key.Session, m.Title, m.ItemCount, m.Metadata)

	_, err = recall.NewSession(store, key).Create(ctx, recall.CreateOptions{})
	fmt.Println("again:", errors.Is(err, recall.ErrConflict))

	m, _ = recall.NewSession(store, key).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{"tier": nil, "status": ptr("open")}})
	fmt.Println("merged:", m.Metadata)

	// Output:
	// conv-1: "Support ticket 4711", 0 items, metadata map[customer:acme tier:gold]
	// again: true
	// merged: map[customer:acme status:open]
}

func ptr(s string) *string { return &s }

// RemoveItem removes any one item of the view by its reference; the log
// keeps it.
func ExampleStoreSession_RemoveItem() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()

	key := recall.Key{Project: "demo", Session: "chat-1"}
	_ = recall.NewSession(store, key).AddItems(ctx,
		recall.Message("user", "one"), recall.Message("user", "two"), recall.Message("user", "three"))

	live, _, _ := store.Items(ctx, key, 0)
	removed, err := recall.NewSession(store, key).RemoveItem(ctx, live[1].Ref)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("removed:", removed.Text())

	items, _ := recall.NewSession(store, key).GetItems(ctx, 0)
	for _, it := range items {
		fmt.Println("left:", it.Text())
	}
	_, err = recall.NewSession(store, key).RemoveItem(ctx, live[1].Ref)
	fmt.Println("again:", errors.Is(err, recall.ErrNotFound))

	// Output:
	// removed: two
	// left: one
	// left: three
	// again: true
}

func ExampleStoreSession_Rewind() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()

	sess := recall.NewSession(store, recall.Key{Project: "demo", Session: "chat-1"})
	_ = sess.AddItems(ctx, recall.Message("user", "one"), recall.Message("assistant", "two"), recall.Message("user", "three"))

	live, _, _ := store.Items(ctx, sess.Key(), 0)
	n, err := sess.Rewind(ctx, live[0].Ref) // back to just after "one"
	if err != nil {
		log.Fatal(err)
	}
	items, _ := sess.GetItems(ctx, 0)
	fmt.Println("rewound", n, "items; view:", len(items), "item,", items[0].Text())

	n, _ = sess.Redo(ctx)
	items, _ = sess.GetItems(ctx, 0)
	fmt.Println("redid", n, "items; view:", len(items), "items, the newest", items[2].Text())

	_, err = sess.Redo(ctx)
	fmt.Println("again:", errors.Is(err, recall.ErrNothingToRedo))

	// Output:
	// rewound 2 items; view: 1 item, one
	// redid 2 items; view: 3 items, the newest three
	// again: true
}
