package importer_test

import (
	"context"
	"fmt"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
)

// Write a transcript an importer read, then the same transcript after it
// grew by one line: only the new line's entry is appended.
func ExampleWrite() {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()

	t := &importer.Transcript{Tool: "mytool", SessionID: "s-1", File: "s-1.log", Data: []byte("hello\n")}
	tg := &importer.Target{Key: recall.Key{Project: "demo", Session: "s-1"}, Created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	tg.Records = []importer.Record{{End: 6, Entry: recall.Entry{Kind: recall.KindItem, Time: tg.Created, Data: []byte(recall.Message("user", "hello"))}}}
	t.Targets = []*importer.Target{tg}

	res, _ := importer.Write(ctx, st, t, tg, false)
	fmt.Println(res.Outcome, res.Items)
	res, _ = importer.Write(ctx, st, t, tg, false)
	fmt.Println(res.Outcome, res.Items)

	t.Data = append(t.Data, "world\n"...)
	tg.Records = append(tg.Records, importer.Record{End: 12, Entry: recall.Entry{Kind: recall.KindItem, Time: tg.Created.Add(time.Second), Data: []byte(recall.Message("assistant", "world"))}})
	res, _ = importer.Write(ctx, st, t, tg, false)
	fmt.Println(res.Outcome, res.Items)

	m, _ := st.Stat(ctx, tg.Key)
	fmt.Println(m.ItemCount, m.Metadata[importer.MetaOffset])
	// Output:
	// new 1
	// unchanged 0
	// updated 1
	// 2 12
}

// Tell the sessions an import wrote from those recall wrote itself.
func ExampleSource() {
	imported := recall.Meta{Metadata: map[string]string{importer.MetaSource: "codex", importer.MetaSession: "0199a1b2"}}
	own := recall.Meta{Metadata: map[string]string{importer.MetaCwd: "/home/me/app"}}
	fmt.Println(importer.Source(imported), importer.Source(own))
	// Output: codex recall
}
