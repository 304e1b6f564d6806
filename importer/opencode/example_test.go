package opencode_test

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/opencode"
	"github.com/recallkit/recall/memstore"
)

// Import the JSON files of an opencode before its database (its data
// folder holds opencode.db, read the same way, in newer versions); a
// damaged session file is reported, and the others go on.
func ExampleImport() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	paths := []string{"testdata/data"} // opencode.DefaultPaths(): ~/.local/share/opencode

	sum, err := opencode.Import(ctx, st, paths, importer.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("sessions %+v, %d items, %d failed\n", sum.Sessions, sum.Items, len(sum.Failures))
	m, _ := st.Stat(ctx, recall.Key{Project: "-home-dev-old", Session: "ses_00old"})
	fmt.Printf("%q in %s, %d items\n", m.Title, m.Metadata[importer.MetaCwd], m.ItemCount)
	// Output:
	// sessions {New:1 Updated:0 Unchanged:0}, 4 items, 1 failed
	// "Rename the config flag" in /home/dev/old, 4 items
}
