package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/sqlstore"
	"github.com/recallkit/recall/storekit"
)

const (
	fixtureID   = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	fixtureFile = "testdata/sessions/2025/10/02/rollout-2025-10-02T08-00-00-" + fixtureID + ".jsonl"
	archivedID  = "0199a000-1111-7222-8333-444455556666"
)

var fixtureKey = recall.Key{Project: "-home-dev-service", Session: fixtureID}

// payloads returns the payload bytes of the fixture's response_item
// lines, exactly as the file holds them (found by hand, not by the
// importer's decoder).
func payloads(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		const pre = `"type":"response_item","payload":`
		i := strings.Index(line, pre)
		if i < 0 || !strings.HasSuffix(line, "}}") {
			continue // not one, or the torn last line
		}
		out = append(out, line[i+len(pre):len(line)-1])
	}
	return out
}

func TestImportFixture(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"mem", "file", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			st := openStore(t, kind)
			sum, err := Import(ctx, st, []string{"testdata/sessions", "testdata/archived_sessions", "testdata/missing"}, importer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Files != 2 || sum.Read != 2 || sum.Sessions != (importer.Counts{New: 2}) || len(sum.Failures) != 0 {
				t.Fatalf("summary %+v", sum)
			}
			wantSkipped := map[string]int{
				"event_msg:user_message":  1,
				"event_msg:agent_message": 1,
				"event_msg:token_count":   1, // the repeated one; the first gave the usage
				"unknown:world_state":     1,
				"malformed":               1,
				"torn":                    1,
			}
			if !reflect.DeepEqual(sum.Skipped, wantSkipped) {
				t.Errorf("skipped %v\nwant    %v", sum.Skipped, wantSkipped)
			}
			checkFixture(t, ctx, st)

			// the archived, compressed rollout
			m, err := st.Stat(ctx, recall.Key{Project: "-home-dev-old", Session: archivedID})
			if err != nil {
				t.Fatal(err)
			}
			if m.ItemCount != 2 || m.Metadata[importer.MetaModel] != "o4-mini" {
				t.Errorf("archived session %+v", m)
			}
			again, err := Import(ctx, st, []string{"testdata/sessions", "testdata/archived_sessions"}, importer.Options{})
			if err != nil || again.Sessions != (importer.Counts{Unchanged: 2}) || again.Entries != 0 {
				t.Fatalf("second import: %+v, %v", again, err)
			}
			if err := storekit.Verify(ctx, st); err != nil {
				t.Error(err)
			}
		})
	}
}

func checkFixture(t *testing.T, ctx context.Context, st recall.Store) {
	t.Helper()
	m, entries, err := st.Load(ctx, fixtureKey)
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	var comps []recall.Compaction
	for _, e := range entries {
		switch e.Kind {
		case recall.KindItem:
			items = append(items, string(e.Data))
		case recall.KindCompaction:
			var c recall.Compaction
			if err := json.Unmarshal(e.Data, &c); err != nil {
				t.Fatal(err)
			}
			if c.Through != e.Seq-1 {
				t.Errorf("compaction at %d reads through %d", e.Seq, c.Through)
			}
			comps = append(comps, c)
		}
	}
	// response items verbatim: bytes in, bytes out
	if want := payloads(t, fixtureFile); !reflect.DeepEqual(items, want) {
		t.Errorf("items:\n%s\nwant:\n%s", strings.Join(items, "\n"), strings.Join(want, "\n"))
	}
	if len(comps) != 2 {
		t.Fatalf("%d compactions", len(comps))
	}
	if comps[0].Replaced != 8 || len(comps[0].Items) != 1 || comps[0].Items[0].Role() != "assistant" ||
		!strings.Contains(comps[0].Items[0].Text(), "foo was undefined") {
		t.Errorf("first compaction %+v", comps[0])
	}
	if comps[1].Replaced != 2 || len(comps[1].Items) != 2 || comps[1].Items[1].Type() != "compaction" {
		t.Errorf("second compaction %+v", comps[1])
	}
	live, _, _ := st.Items(ctx, fixtureKey, 0)
	if len(live) != 3 || live[2].Item.Text() != "All tests pass." {
		t.Errorf("view %v", live)
	}
	if m.Metadata[importer.MetaModel] != "gpt-5.1-codex" || m.Metadata[importer.MetaSource] != Tool || m.Metadata[importer.MetaSession] != fixtureID ||
		m.Metadata[importer.MetaCwd] != "/home/dev/service" {
		t.Errorf("metadata %v", m.Metadata)
	}
	if want := (recall.Usage{InputTokens: 2000, OutputTokens: 80, TotalTokens: 2080}); m.Usage != want {
		t.Errorf("usage %+v, want %+v", m.Usage, want)
	}
	if got := m.Created.Format("2006-01-02T15:04:05.000Z"); got != "2025-10-02T07:59:59.500Z" {
		t.Errorf("created %s", got)
	}
}

// TestCompressedIsUnchanged checks that a rollout Codex compressed after it
// was imported is the same transcript, and one that grew while compressed
// adds its new lines.
func TestCompressedIsUnchanged(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	dir := t.TempDir()
	plain := filepath.Join(dir, filepath.Base(fixtureFile))
	data, _ := os.ReadFile(fixtureFile)
	os.WriteFile(plain, data, 0o644)
	if _, err := Import(ctx, st, []string{dir}, importer.Options{}); err != nil {
		t.Fatal(err)
	}
	before, _ := st.Stat(ctx, fixtureKey)
	os.Remove(plain)
	writeZstd(t, plain+".zst", data)
	sum, err := Import(ctx, st, []string{dir}, importer.Options{})
	if err != nil || sum.Sessions != (importer.Counts{Unchanged: 1}) {
		t.Fatalf("compressed: %+v, %v", sum, err)
	}
	grown := append(bytes.Clone(data), []byte(`ssage","role":"user","content":[{"type":"input_text","text":"more"}]}}`+"\n")...)
	writeZstd(t, plain+".zst", grown)
	sum, err = Import(ctx, st, []string{dir}, importer.Options{})
	if err != nil || sum.Sessions != (importer.Counts{Updated: 1}) || sum.Items != 1 {
		t.Fatalf("grown: %+v, %v", sum, err)
	}
	after, _ := st.Stat(ctx, fixtureKey)
	if after.ItemCount != before.ItemCount+1 {
		t.Errorf("items %d -> %d", before.ItemCount, after.ItemCount)
	}
}

func writeZstd(t *testing.T, path string, data []byte) {
	t.Helper()
	enc, _ := zstd.NewWriter(nil)
	if err := os.WriteFile(path, enc.EncodeAll(data, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDryRun(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	dry, err := Import(ctx, st, []string{"testdata/sessions"}, importer.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if page, _ := st.List(ctx, "", recall.ListOptions{}); len(page.Sessions) != 0 {
		t.Fatal("a dry run wrote sessions")
	}
	real, err := Import(ctx, st, []string{"testdata/sessions"}, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Sessions != real.Sessions || dry.Items != real.Items || dry.Entries != real.Entries || !dry.DryRun {
		t.Errorf("dry run %+v\nreal run %+v", dry, real)
	}
}

func TestProjectOverride(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	if _, err := Import(ctx, st, []string{fixtureFile}, importer.Options{Project: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Stat(ctx, recall.Key{Project: "elsewhere", Session: fixtureID})
	if err != nil {
		t.Fatal(err)
	}
	// The rollout's folder is not the project's: it is not recorded.
	if cwd, ok := m.Metadata[importer.MetaCwd]; ok {
		t.Errorf("an import into another project records the folder %q", cwd)
	}
}

func TestNothingToRead(t *testing.T) {
	st := memstore.New(memstore.Options{})
	_, err := Import(context.Background(), st, []string{"testdata/none"}, importer.Options{})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing path: %v", err)
	}
	_, err = Import(context.Background(), st, []string{t.TempDir()}, importer.Options{})
	if !errors.Is(err, ErrNoRollouts) {
		t.Errorf("empty folder: %v", err)
	}
}

// openStore opens a fresh store of the given kind, closed by the test's end.
func openStore(t *testing.T, kind string) recall.Store {
	t.Helper()
	var (
		st  recall.Store
		err error
	)
	switch kind {
	case "mem":
		st = memstore.New(memstore.Options{})
	case "file":
		st, err = filestore.Open(filestore.Options{Dir: t.TempDir()})
	case "sqlite":
		st, err = sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "recall.db"), sqlstore.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestUsageAfterCompactionAtBatchEnd: a batch is full at the item before a
// compaction, and the token_count that gives the item its usage comes
// after the compaction: the batch takes the compaction, so the item is
// not yet written when its usage arrives.
func TestUsageAfterCompactionAtBatchEnd(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	var b strings.Builder
	line := func(typ, payload string) {
		b.WriteString(`{"timestamp":"2025-10-02T08:00:00Z","type":"` + typ + `","payload":` + payload + "}\n")
	}
	line("session_meta", `{"id":"`+fixtureID+`","cwd":"/home/dev/service"}`)
	const n = 2000 // a batch
	for i := range n + 2 {
		line("response_item", fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":"item %d"}]}`, i))
		if i == n-1 {
			line("compacted", `{"message":"summary"}`)
			line("event_msg", `{"type":"token_count","info":{"last_token_usage":{"input_tokens":7,"output_tokens":3}}}`)
		}
	}
	path := filepath.Join(t.TempDir(), filepath.Base(fixtureFile))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := Import(ctx, st, []string{path}, importer.Options{})
	if err != nil || sum.Items != n+2 || len(sum.Skipped) != 0 {
		t.Fatalf("%+v, %v", sum, err)
	}
	m, entries, _ := st.Load(ctx, fixtureKey)
	if m.Usage != (recall.Usage{InputTokens: 7, OutputTokens: 3, TotalTokens: 10}) {
		t.Errorf("usage %+v", m.Usage)
	}
	for i, e := range entries {
		if e.Kind == recall.KindCompaction && (entries[i-1].Kind != recall.KindItem || entries[i-1].Usage == nil) {
			t.Errorf("the entry before the compaction: %+v", entries[i-1])
		}
	}
}

// TestDamagedZstd: a compressed rollout cut short is reported, and the
// batches its whole lines gave are kept: importing the whole file later
// adds only the rest.
func TestDamagedZstd(t *testing.T) {
	ctx := context.Background()
	var b strings.Builder
	b.WriteString(`{"timestamp":"2025-10-02T08:00:00Z","type":"session_meta","payload":{"id":"` + fixtureID + `","cwd":"/home/dev/service"}}` + "\n")
	for i := range 6000 {
		fmt.Fprintf(&b, `{"timestamp":"2025-10-02T08:30:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"item %d %x"}]}}`+"\n", i, i*7919)
	}
	data := []byte(b.String())
	path := filepath.Join(t.TempDir(), filepath.Base(fixtureFile)+".zst")
	enc, _ := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithWindowSize(1<<16))
	z := enc.EncodeAll(data, nil)
	if err := os.WriteFile(path, z[:len(z)*3/4], 0o644); err != nil {
		t.Fatal(err)
	}
	st := memstore.New(memstore.Options{})
	sum, err := Import(ctx, st, []string{path}, importer.Options{})
	if err != nil || len(sum.Failures) != 1 || sum.Failures[0].Key != "" || sum.Read != 0 || sum.Items < 2000 {
		t.Fatalf("a cut .zst: %+v, %v", sum, err)
	}
	if err := os.WriteFile(path, z, 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := Import(ctx, st, []string{path}, importer.Options{})
	if err != nil || len(again.Failures) != 0 || again.Sessions != (importer.Counts{Updated: 1}) {
		t.Fatalf("the whole .zst: %+v, %v", again, err)
	}
	if m, _ := st.Stat(ctx, fixtureKey); sum.Items+again.Items != 6000 || m.ItemCount != 6000 {
		t.Errorf("%d + %d items written, %d in the session, want 6000", sum.Items, again.Items, m.ItemCount)
	}
}
