package gemini_test

import (
	"context"
	"fmt"
	"log"

	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/gemini"
	"github.com/recallkit/recall/importer/opencode"
	"github.com/recallkit/recall/memstore"
)

// Import Gemini CLI's sessions, then opencode's.
func Example_tools() {
	ctx := context.Background()
	store := memstore.New(memstore.Options{})
	defer store.Close()
	tmp, data := "testdata/home/.gemini/tmp", []string{"../opencode/testdata/data"}

	sum, err := gemini.Import(ctx, store, tmp, importer.Options{})   // tmp: gemini.DefaultPath(), ~/.gemini/tmp
	sum, err = opencode.Import(ctx, store, data, importer.Options{}) // data: opencode.DefaultPaths(), ~/.local/share/opencode
	fmt.Println(sum.Sessions.New, len(sum.Failures), sum.Items, sum.Skipped)

	if err != nil {
		log.Fatal(err)
	}
	// Output:
	// 1 1 4 map[malformed:1 unfinished:1]
}
