package filestore_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// TestIndexSearch checks that IndexSearch brings the index up to date
// with every project's sessions, reporting each one it indexes, and then
// has nothing left to do: the next Search finds the index current.
func TestIndexSearch(t *testing.T) {
	ctx := context.Background()
	s := openSearchStore(t, t.TempDir())
	a := recall.Key{Project: "p", Session: "a"}
	appendItems(t, s, a, recall.Message("user", "the tokenizer"))
	appendItems(t, s, recall.Key{Project: "p", Session: "b"}, recall.Message("user", "a lexer"))
	appendItems(t, s, recall.Key{Project: "q", Session: "c"}, recall.Message("user", "a parser"))

	ix, ok := recall.As[search.Indexer](s)
	if !ok {
		t.Fatal("filestore is not a search.Indexer")
	}
	index := func() []string {
		t.Helper()
		var calls []string
		if err := ix.IndexSearch(ctx, func(done, total int) { calls = append(calls, fmt.Sprintf("%d/%d", done, total)) }); err != nil {
			t.Fatal(err)
		}
		return calls
	}
	if got, want := index(), []string{"0/3", "1/3", "2/3", "3/3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("first IndexSearch reported %v, want %v", got, want)
	}
	if got := index(); got != nil {
		t.Errorf("IndexSearch of a current index reported %v", got)
	}
	appendItems(t, s, a, recall.Message("assistant", "tokenizer fixed"))
	if got, want := index(), []string{"0/1", "1/1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("IndexSearch after an append reported %v, want %v", got, want)
	}
	if got, want := keysOf(checkSearch(t, s, recall.SearchOptions{Query: "tokenizer"})), []string{"p/a@2.0/assistant", "p/a@1.0/user"}; !reflect.DeepEqual(got, want) {
		t.Errorf("search: %v, want %v", got, want)
	}
	if err := ix.IndexSearch(ctx, nil); err != nil {
		t.Errorf("IndexSearch without progress: %v", err)
	}
}
