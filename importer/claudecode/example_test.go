package claudecode_test

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/claudecode"
	"github.com/recallkit/recall/memstore"
)

// Import a folder of Claude Code transcripts into a store, then again: the
// second import finds nothing new.
func ExampleImport() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()

	sum, err := claudecode.Import(ctx, st, "testdata/projects", importer.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Printf("sessions %+v, subagent records %+v, %d items\n", sum.Sessions, sum.Subagents, sum.Items)
	fmt.Println("torn lines skipped:", sum.Skipped["torn"])

	page, _ := st.List(ctx, "", recall.ListOptions{})
	m := page.Sessions[0]
	fmt.Printf("%s %q from %s\n", m.Key, m.Title, m.Metadata[importer.MetaSource])

	again, _ := claudecode.Import(ctx, st, "testdata/projects", importer.Options{})
	fmt.Printf("again: %+v\n", again.Sessions)
	// Output:
	// sessions {New:1 Updated:0 Unchanged:0}, subagent records {New:2 Updated:0 Unchanged:0}, 16 items
	// torn lines skipped: 1
	// -home-dev-app/5b4a1c52-0d2e-4c6e-9a53-2f1d3e4b5a61 "Go files tour" from claude-code
	// again: {New:0 Updated:0 Unchanged:1}
}

// See what importing one transcript would write, without writing: its
// session, and the subagent record its sidechain lines fill.
func ExampleImport_dryRun() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()

	sum, err := claudecode.Import(ctx, st, "testdata/projects/-home-dev-app/5b4a1c52-0d2e-4c6e-9a53-2f1d3e4b5a61.jsonl", importer.Options{DryRun: true})
	if err != nil {
		panic(err)
	}
	fmt.Printf("sessions %+v, subagent records %+v\n", sum.Sessions, sum.Subagents)
	fmt.Printf("%d items in %d entries, from %d lines\n", sum.Items, sum.Entries, sum.Lines)
	// Output:
	// sessions {New:1 Updated:0 Unchanged:0}, subagent records {New:1 Updated:0 Unchanged:0}
	// 14 items in 22 entries, from 26 lines
}
