package compact_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/memstore"
)

// summarizer stands in for a real model in the example: it "summarizes"
// by counting the lines it was given.
type summarizer struct{}

func (summarizer) Respond(ctx context.Context, req *agent.Request) (*agent.Response, error) {
	n := strings.Count(req.Items[0].Text(), "\n\n")
	return &agent.Response{Items: []recall.Item{recall.Message("assistant", fmt.Sprintf("%d earlier items about greetings", n))}}, nil
}

// A compacting session: older items are replaced by a summary, the newest
// kept verbatim; the log keeps everything.
func ExampleNewSession() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	key := recall.Key{Project: "demo", Session: "long"}
	// With a real model: compact.Fallback(compact.Server(m), &compact.Summarizer{Model: m}).
	sess := compact.NewSession(store, key, &compact.Summarizer{Model: summarizer{}}, compact.Options{KeepLast: 2})
	for i := range 3 {
		sess.AddItems(ctx, recall.Message("user", fmt.Sprint("hello ", i)), recall.Message("assistant", fmt.Sprint("hi ", i)))
	}

	res, err := sess.RunCompaction(ctx, agent.CompactionArgs{})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Printf("%d items -> %d: %d summarized, %d kept\n", res.Before, res.After, res.Summarized, res.Kept)
	items, _ := sess.GetItems(ctx, 0)
	for _, it := range items {
		fmt.Printf("%s: %s\n", it.Role(), strings.TrimPrefix(it.Text(), compact.SummaryPrefix))
	}
	_, log, _ := store.Load(ctx, key)
	fmt.Println(len(log), "entries in the log")
	// Output:
	// 6 items -> 3: 4 summarized, 2 kept
	// user: 4 earlier items about greetings
	// user: hello 2
	// assistant: hi 2
	// 7 entries in the log
}
