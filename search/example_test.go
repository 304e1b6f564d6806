package search_test

import (
	"context"
	"fmt"
	"log"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/search"
)

// myStore is a store of your own without a search index: it searches by
// reading its logs with search.Scan, which is all recall.Search needs.
type myStore struct{ recall.Store }

func (s myStore) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	return search.Scan(ctx, s, opts)
}

// A store without an index implements recall.Searcher with search.Scan.
func ExampleScan() {
	ctx := context.Background()
	st := myStore{memstore.New(memstore.Options{})}
	defer st.Close()
	key := recall.Key{Project: "demo", Session: "s1"}
	items := []recall.Item{recall.Message("user", "Where did we put the invoice template?")}
	if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{Items: items}); err != nil {
		log.Fatal(err)
	}
	page, err := recall.Search(ctx, st, recall.SearchOptions{Query: "invoice"})
	if err != nil {
		log.Fatal(err)
	}
	for _, h := range page.Hits {
		fmt.Println(h.Key, h.Role, h.Snippet)
	}
	// Output: demo/s1 user Where did we put the invoice template?
}

// What a query means: every term, in any order, case and runs of white
// space aside; a "quoted phrase" as written.
func ExampleParse() {
	q, err := search.Parse(`Invoice   "due date"`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", q.Terms)
	fmt.Println(q.Match(search.Normalize("The DUE DATE of the invoice")))
	fmt.Println(q.Match(search.Normalize("the date due on the invoice")))
	// Output:
	// ["invoice" "due date"]
	// true
	// false
}
