package recall_test

import (
	"context"
	"fmt"
	"log"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// Search finds items of every session, newest first: words in any order,
// "quoted phrases", case-insensitive, CJK text without spaces. A store
// with an index of its own (recall.Searcher) answers from it; any other is
// scanned.
func ExampleSearch() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()

	key := recall.Key{Project: "demo", Session: "chat-1"}
	if _, err := store.Append(ctx, key, recall.Guard{}, recall.ItemEntries(
		recall.Message("user", "Why does the Tokenizer split emoji?"),
		recall.Message("assistant", "It splits on bytes. 我叫张三，住在北京。"),
	)...); err != nil {
		log.Fatal(err)
	}
	for _, q := range []string{"tokenizer emoji", `"on bytes"`, "张三"} {
		page, err := recall.Search(ctx, store, recall.SearchOptions{Query: q})
		if err != nil {
			log.Fatal(err)
		}
		for _, h := range page.Hits {
			m := h.Matches[0]
			fmt.Printf("%s seq %d %s: %s [%s]\n", h.Key, h.Ref.Seq, h.Role, h.Snippet, h.Snippet[m.Start:m.End])
		}
	}
	// Output:
	// demo/chat-1 seq 1 user: Why does the Tokenizer split emoji? [Tokenizer]
	// demo/chat-1 seq 2 assistant: It splits on bytes. 我叫张三，住在北京。 [on bytes]
	// demo/chat-1 seq 2 assistant: It splits on bytes. 我叫张三，住在北京。 [张三]
}
