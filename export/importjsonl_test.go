package export_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// longSession writes a session of n items and a subagent record to st and
// returns its JSONL export.
func longSession(t *testing.T, st recall.Store, key recall.Key, n int) []byte {
	t.Helper()
	ctx := context.Background()
	items := make([]recall.Item, n)
	for i := range items {
		items[i] = recall.Message("user", fmt.Sprintf("item %d", i))
	}
	if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{Title: "long", Items: items}); err != nil {
		t.Fatal(err)
	}
	sub := key
	sub.Subpath = "subagents/a"
	if _, err := st.Append(ctx, sub, recall.Guard{}, recall.ItemEntries(recall.Message("assistant", "sub"))...); err != nil {
		t.Fatal(err)
	}
	s, err := export.Load(ctx, st, key)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := export.JSONL(&b, s); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// importAll imports a JSONL export with ImportJSONL and returns what it
// reported.
func importAll(t *testing.T, st recall.Store, file []byte, opts export.ImportOptions) []export.ImportResult {
	t.Helper()
	var results []export.ImportResult
	err := export.ImportJSONL(context.Background(), st, bytes.NewReader(file), opts, func(_ recall.Meta, r export.ImportResult) error {
		results = append(results, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return results
}

// TestImportJSONLInBatches: a log longer than a batch is written a batch
// at a time; a store that holds its start (an import cut short) gets the
// rest; one whose log matches the export's start, then differs, or goes on
// past it, keeps it, and the export goes under a new ID, whole.
func TestImportJSONLInBatches(t *testing.T) {
	ctx := context.Background()
	src := memstore.New(memstore.Options{})
	key := recall.Key{Project: "p", Session: "long"}
	file := longSession(t, src, key, 2500)
	want, _ := export.Load(ctx, src, key)
	n := len(want.Entries)

	dst := openFile(t)
	res := importAll(t, dst, file, export.ImportOptions{})
	if len(res) != 1 || res[0].Status != export.StatusNew || res[0].Entries != n || len(res[0].Subagents) != 1 {
		t.Fatalf("%+v", res)
	}
	got, _ := export.Load(ctx, dst, key)
	sameSession(t, want, got)

	// cut short: the store holds the first 1700 entries
	cut := memstore.New(memstore.Options{})
	if _, err := cut.Import(ctx, key, want.Entries[:1700]...); err != nil {
		t.Fatal(err)
	}
	res = importAll(t, cut, file, export.ImportOptions{})
	if res[0].Status != export.StatusUpdated || res[0].Entries != n-1700 || res[0].Key != key {
		t.Errorf("the rest of a cut import: %+v", res[0])
	}
	got, _ = export.Load(ctx, cut, key)
	sameSession(t, want, got)

	for name, theirs := range map[string][]recall.Entry{
		"differs after 1700": append(append([]recall.Entry{}, want.Entries[:1700]...), recall.Entry{Seq: 1701, Kind: recall.KindItem, Time: want.Entries[0].Time, Data: []byte(recall.Message("user", "mine"))}),
		"longer":             append(append([]recall.Entry{}, want.Entries...), recall.Entry{Seq: int64(n + 1), Kind: recall.KindItem, Time: want.Entries[0].Time, Data: []byte(recall.Message("user", "mine"))}),
	} {
		t.Run(name, func(t *testing.T) {
			st := memstore.New(memstore.Options{})
			if _, err := st.Import(ctx, key, theirs...); err != nil {
				t.Fatal(err)
			}
			res := importAll(t, st, file, export.ImportOptions{})
			if res[0].Status != export.StatusNew || res[0].Key == key || res[0].Entries != n {
				t.Fatalf("%+v", res[0])
			}
			got, _ := export.Load(ctx, st, res[0].Key)
			sameSession(t, want, got)
			if _, now, _ := st.Load(ctx, key); !sameLog(now, theirs) {
				t.Error("the log at the key changed")
			}
			if err := storekit.Verify(ctx, st); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestImportJSONLStopsAtABadLine: the sessions before a bad line are
// imported, and the bad line is reported, naming it.
func TestImportJSONLStopsAtABadLine(t *testing.T) {
	src := memstore.New(memstore.Options{})
	a := longSession(t, src, recall.Key{Project: "p", Session: "a"}, 3)
	b := longSession(t, src, recall.Key{Project: "p", Session: "b"}, 3)
	file := append(append(a, b...), "{torn"...)
	dst := memstore.New(memstore.Options{})
	var done []string
	err := export.ImportJSONL(context.Background(), dst, bytes.NewReader(file), export.ImportOptions{}, func(m recall.Meta, r export.ImportResult) error {
		done = append(done, fmt.Sprintf("%s %s %d", m.Key, r.Status, len(r.Subagents)))
		return nil
	})
	lines := strings.Count(string(file), "\n") + 1
	if !errors.Is(err, export.ErrInvalidLog) || !strings.Contains(err.Error(), fmt.Sprintf("line %d", lines)) {
		t.Errorf("err = %v", err)
	}
	if strings.Join(done, ", ") != "p/a new 1" {
		t.Errorf("done: %q", done)
	}
}
