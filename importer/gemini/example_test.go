package gemini_test

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/gemini"
	"github.com/recallkit/recall/memstore"
)

// Import Gemini CLI's folder into a store, then again: the second import
// finds nothing new.
func ExampleImport() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	tmp := "testdata/home/.gemini/tmp" // gemini.DefaultPath(): ~/.gemini/tmp

	sum, err := gemini.Import(ctx, st, tmp, importer.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("sessions %+v, subagent records %+v, %d items\n", sum.Sessions, sum.Subagents, sum.Items)

	m, _ := st.Stat(ctx, recall.Key{Project: "-home-dev-app", Session: "7d9c2f6e-4a1b-4c3d-8e5f-0a1b2c3d4e5f"})
	fmt.Printf("%q in %s, model %s\n", m.Title, m.Metadata[importer.MetaCwd], m.Metadata[importer.MetaModel])

	again, _ := gemini.Import(ctx, st, tmp, importer.Options{})
	fmt.Printf("again: %+v\n", again.Sessions)
	// Output:
	// sessions {New:6 Updated:0 Unchanged:0}, subagent records {New:1 Updated:0 Unchanged:0}, 37 items
	// "Go files tour" in /home/dev/app, model gemini-2.5-pro
	// again: {New:0 Updated:0 Unchanged:6}
}
