package codex_test

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/codex"
	"github.com/recallkit/recall/memstore"
)

// Import Codex rollouts (plain and .jsonl.zst) into a store, first as a
// dry run that writes nothing.
func ExampleImport() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	paths := []string{"testdata/sessions", "testdata/archived_sessions"}

	dry, err := codex.Import(ctx, st, paths, importer.Options{DryRun: true})
	if err != nil {
		panic(err)
	}
	fmt.Printf("dry run: %+v, %d items\n", dry.Sessions, dry.Items)

	sum, err := codex.Import(ctx, st, paths, importer.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("import: %+v, %d items\n", sum.Sessions, sum.Items)
	page, _ := st.List(ctx, "", recall.ListOptions{})
	for _, m := range page.Sessions {
		fmt.Println(m.Key, m.ItemCount, "items,", m.Metadata[importer.MetaModel])
	}
	// Output:
	// dry run: {New:2 Updated:0 Unchanged:0}, 12 items
	// import: {New:2 Updated:0 Unchanged:0}, 12 items
	// -home-dev-service/0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b 3 items, gpt-5.1-codex
	// -home-dev-old/0199a000-1111-7222-8333-444455556666 2 items, o4-mini
}
