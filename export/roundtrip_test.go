package export_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/redisstore"
	"github.com/recallkit/recall/sqlstore"
	"github.com/recallkit/recall/storekit"
)

// oddItems are items whose bytes a careless exporter would change: blanks
// around and inside, line breaks (pretty-printed), escapes that mean the
// same as the characters, markup characters, huge numbers, duplicate keys.
var oddItems = []recall.Item{
	recall.Item(`{ "type" : "message", "role":"user", "content":"spaces around the colons" }`),
	recall.Item("{\n  \"type\": \"message\",\n  \"role\": \"assistant\",\n  \"content\": [{\"type\": \"output_text\", \"text\": \"line 1\\nline 2\"}]\n}"),
	recall.Item(`{"type":"message","role":"user","content":"\u003cb\u003e <b> & é 😀 \ud83d\ude00 \/ \u2028"}`),
	recall.Item(`{"type":"numbers","n":123456789012345678901234567890,"f":1.0E+10,"z":-0}`),
	recall.Item(`{"type":"dup","a":1,"a":2}`),
	recall.Item("\t {\"type\":\"blank around\"} \r\n"),
	recall.Item(`{"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a.go\"}"}`),
	recall.Item(`{"type":"function_call_output","call_id":"call_1","output":"package a\n"}`),
	recall.Item(`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"}]}`),
}

// buildRich writes a session that holds an entry of every kind recall
// writes, and a subagent record under it, and returns its key.
func buildRich(t *testing.T, st recall.Store, key recall.Key) {
	t.Helper()
	ctx := context.Background()
	if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{Title: "Rich <session>", Metadata: map[string]string{"source": "test", "gone": "soon"}}); err != nil {
		t.Fatal(err)
	}
	add := func(u *recall.Usage, items ...recall.Item) {
		t.Helper()
		es := recall.ItemEntries(items...)
		if u != nil {
			es[len(es)-1].Usage = u
		}
		if _, err := st.Append(ctx, key, recall.IfExists(), es...); err != nil {
			t.Fatal(err)
		}
	}
	add(&recall.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}, oddItems[:3]...)
	add(nil, oddItems[3:6]...)
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(recall.NewSession(st, key).SetTitle(ctx, "auto title, ignored", recall.TitleAuto))
	must(recall.NewSession(st, key).SetTitle(ctx, "Rich \"session\" <b>", recall.TitleUser))
	must(recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{Labels: []string{"export", "test"}, SetLabels: true}))
	must(recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}))
	must(recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}))
	gone := (*string)(nil)
	must(recall.NewSession(st, key).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{"gone": gone, "added": ptr("yes")}}))
	must(st.Pop(ctx, key))
	live, _, err := st.Items(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	must(recall.NewSession(st, key).RemoveItem(ctx, live[1].Ref))
	must(st.Append(ctx, key, recall.IfExists(), recall.Entry{Kind: recall.KindClear}))
	add(&recall.Usage{InputTokens: 100, OutputTokens: 7, TotalTokens: 107}, oddItems[6:]...)
	m, err := st.Stat(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{
		Through: m.LastSeq, Replaced: m.ItemCount, Strategy: "summary",
		Items: []recall.Item{recall.Message("user", "Summary: read a.go"), oddItems[8]},
	})
	comp.Usage = &recall.Usage{InputTokens: 50, OutputTokens: 20, TotalTokens: 70}
	must(st.Append(ctx, key, recall.IfLastSeq(m.LastSeq), comp))
	add(nil, recall.Message("assistant", "after the compaction"))
	must(st.Append(ctx, key, recall.IfExists(), recall.Entry{Kind: "future_kind", Data: json.RawMessage(`{"from":"a later recall"}`)}))
	sub := key
	sub.Subpath = "subagents/agent-1"
	must(st.Append(ctx, sub, recall.Guard{}, recall.ItemEntries(recall.Message("user", "subtask"), recall.Message("assistant", "done"))...))
}

func ptr(s string) *string { return &s }

// targets are the stores a round trip writes into: every backend.
var targets = []struct {
	name string
	open func(t *testing.T) recall.Store
}{
	{"memstore", func(t *testing.T) recall.Store { return memstore.New(memstore.Options{}) }},
	{"filestore", openFile},
	{"sqlite", func(t *testing.T) recall.Store {
		s, err := sqlstore.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}},
	{"postgres", openPostgres},
	{"redis", openRedis},
}

func openFile(t *testing.T) recall.Store {
	s, err := filestore.Open(filestore.Options{Dir: t.TempDir(), Sync: filestore.SyncNever})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openPostgres(t *testing.T) recall.Store {
	dsn, schema := testsvc.PostgresSchema(t)
	s, err := sqlstore.OpenPostgres(context.Background(), dsn, sqlstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openRedis(t *testing.T) recall.Store {
	url, prefix := testsvc.RedisPrefix(t)
	s, err := redisstore.Open(context.Background(), url, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// roundTrip exports key of src as JSONL and imports it into dst as the
// CLI does (ImportJSONL, a line at a time), returning the bytes and the
// result.
func roundTrip(t *testing.T, src, dst recall.Store, key recall.Key, opts export.ImportOptions) ([]byte, export.ImportResult) {
	t.Helper()
	ctx := context.Background()
	s, err := export.Load(ctx, src, key)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := export.JSONL(&b, s); err != nil {
		t.Fatal(err)
	}
	var results []export.ImportResult
	err = export.ImportJSONL(ctx, dst, bytes.NewReader(b.Bytes()), opts, func(m recall.Meta, r export.ImportResult) error {
		if m.Key != key {
			t.Errorf("the header reported is %s's, want %s's", m.Key, key)
		}
		results = append(results, r)
		return nil
	})
	if err != nil {
		t.Fatalf("ImportJSONL: %v\n%s", err, b.String())
	}
	if len(results) != 1 {
		t.Fatalf("ImportJSONL: %d sessions, want 1", len(results))
	}
	return b.Bytes(), results[0]
}

// metaJSON is m as JSON with its key left out, for comparing the metadata
// of two sessions.
func metaJSON(t *testing.T, m recall.Meta) string {
	t.Helper()
	m.Key = recall.Key{}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameSession fails t unless got is want imported: the same log (seq,
// kind, time, payload bytes, usage), items and metadata.
func sameSession(t *testing.T, want, got *export.Session) {
	t.Helper()
	if a, b := metaJSON(t, want.Meta), metaJSON(t, got.Meta); a != b {
		t.Errorf("meta of %s:\n got %s\nwant %s", got.Meta.Key, b, a)
	}
	if len(want.Entries) != len(got.Entries) {
		t.Fatalf("%s: %d entries, want %d", got.Meta.Key, len(got.Entries), len(want.Entries))
	}
	for i, w := range want.Entries {
		g := got.Entries[i]
		if g.Seq != w.Seq || g.Kind != w.Kind || !g.Time.Equal(w.Time) || !bytes.Equal(g.Data, w.Data) || fmt.Sprint(g.Usage) != fmt.Sprint(w.Usage) {
			t.Errorf("%s entry %d:\n got %d %s %s %s %v\nwant %d %s %s %s %v", got.Meta.Key, i,
				g.Seq, g.Kind, g.Time, g.Data, g.Usage, w.Seq, w.Kind, w.Time, w.Data, w.Usage)
		}
	}
	sameItems(t, want.Items(), got.Items())
	if len(want.Subagents) != len(got.Subagents) {
		t.Fatalf("%s: %d subagent records, want %d", got.Meta.Key, len(got.Subagents), len(want.Subagents))
	}
	for i := range want.Subagents {
		if want.Subagents[i].Meta.Key.Subpath != got.Subagents[i].Meta.Key.Subpath {
			t.Errorf("subagent %d is %s, want %s", i, got.Subagents[i].Meta.Key, want.Subagents[i].Meta.Key)
		}
		sameSession(t, want.Subagents[i], got.Subagents[i])
	}
}

func sameItems(t *testing.T, want, got []recall.LiveItem) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d items, want %d", len(got), len(want))
	}
	for i := range want {
		if want[i].Ref != got[i].Ref || !bytes.Equal(want[i].Item, got[i].Item) {
			t.Errorf("item %d: got %v %q, want %v %q", i, got[i].Ref, got[i].Item, want[i].Ref, want[i].Item)
		}
	}
}

// Every store gets back the very session it was exported from: the
// JSONL export of a session holding every entry kind, odd item bytes, a
// fork origin and a subagent record, imported into an empty store of each
// backend, has the same log, items and metadata; and exporting the copy
// gives the same file.
func TestJSONLRoundTripEveryStore(t *testing.T) {
	ctx := context.Background()
	src := openFile(t)
	key := recall.Key{Project: "-home-me-proj", Session: "0199a3f2-1b2c-7d4e-8f00-000000000001"}
	buildRich(t, src, key)
	forked := recall.Key{Project: key.Project, Session: "fork-of-rich"}
	if _, err := recall.NewSession(src, key).Fork(ctx, 5, forked); err != nil {
		t.Fatal(err)
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			dst := tg.open(t)
			for _, k := range []recall.Key{key, forked} {
				file, res := roundTrip(t, src, dst, k, export.ImportOptions{})
				if res.Key != k || res.Status != export.StatusNew || res.Damaged != 0 {
					t.Errorf("Import of %s = %+v", k, res)
				}
				want, _ := export.Load(ctx, src, k)
				got, err := export.Load(ctx, dst, k)
				if err != nil {
					t.Fatal(err)
				}
				sameSession(t, want, got)
				var again bytes.Buffer
				if err := export.JSONL(&again, got); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again.Bytes(), file) {
					t.Errorf("the export of the imported %s differs from the original export:\n%s\nwant\n%s", k, again.Bytes(), file)
				}
			}
			if err := storekit.Verify(ctx, dst); err != nil {
				t.Errorf("Verify after import: %v", err)
			}
		})
	}
}

// Importing is idempotent, and a session exported again after it grew
// gets only its new entries.
func TestJSONLImportAgain(t *testing.T) {
	ctx := context.Background()
	src, dst := memstore.New(memstore.Options{}), openFile(t)
	key := recall.Key{Project: "p", Session: "grows"}
	buildRich(t, src, key)
	roundTrip(t, src, dst, key, export.ImportOptions{})
	before, _ := dst.Stat(ctx, key)
	if _, res := roundTrip(t, src, dst, key, export.ImportOptions{}); res.Status != export.StatusUnchanged || res.Entries != 0 || res.Key != key {
		t.Errorf("second import = %+v, want unchanged", res)
	}
	if after, _ := dst.Stat(ctx, key); after.LastSeq != before.LastSeq {
		t.Errorf("second import moved LastSeq %d -> %d", before.LastSeq, after.LastSeq)
	}
	if _, err := src.Append(ctx, key, recall.IfExists(), recall.ItemEntries(recall.Message("user", "one more"), recall.Message("assistant", "ok"))...); err != nil {
		t.Fatal(err)
	}
	_, res := roundTrip(t, src, dst, key, export.ImportOptions{})
	if res.Status != export.StatusUpdated || res.Entries != 2 {
		t.Errorf("import of the grown session = %+v, want updated with 2 entries", res)
	}
	want, _ := export.Load(ctx, src, key)
	got, _ := export.Load(ctx, dst, key)
	sameSession(t, want, got)
}

// A session already at the key with another log is never touched: the
// import goes under a new ID, or fails when the caller named the ID.
func TestJSONLImportConflict(t *testing.T) {
	ctx := context.Background()
	src, dst := memstore.New(memstore.Options{}), memstore.New(memstore.Options{})
	key := recall.Key{Project: "p", Session: "taken"}
	buildRich(t, src, key)
	if _, err := recall.NewSession(dst, key).Create(ctx, recall.CreateOptions{Title: "someone else's", Items: []recall.Item{recall.Message("user", "mine")}}); err != nil {
		t.Fatal(err)
	}
	_, theirs, _ := dst.Load(ctx, key)

	_, res := roundTrip(t, src, dst, key, export.ImportOptions{})
	if res.Status != export.StatusNew || res.Key == key || res.Key.Project != key.Project || res.From != key {
		t.Fatalf("import onto a taken key = %+v, want a new session in the same project", res)
	}
	if len(res.Subagents) != 1 || res.Subagents[0].Key != (recall.Key{Project: "p", Session: res.Key.Session, Subpath: "subagents/agent-1"}) {
		t.Errorf("subagent records went to %+v, want under the new session", res.Subagents)
	}
	want, _ := export.Load(ctx, src, key)
	got, _ := export.Load(ctx, dst, res.Key)
	sameSession(t, want, got)
	if _, now, _ := dst.Load(ctx, key); !sameLog(now, theirs) {
		t.Error("the session at the taken key changed")
	}

	s, _ := export.Load(ctx, src, key)
	_, err := export.Import(ctx, dst, s, export.ImportOptions{Session: "taken"})
	if !errors.Is(err, recall.ErrConflict) {
		t.Errorf("Import with Session naming a taken key = %v, want ErrConflict", err)
	}
	if _, now, _ := dst.Load(ctx, key); !sameLog(now, theirs) {
		t.Error("the session at the taken key changed")
	}

	// Options move it elsewhere.
	res, err = export.Import(ctx, dst, s, export.ImportOptions{Project: "other", Session: "moved"})
	if err != nil || res.Key != (recall.Key{Project: "other", Session: "moved"}) {
		t.Fatalf("Import with options = %+v, %v", res, err)
	}
	got, _ = export.Load(ctx, dst, res.Key)
	sameSession(t, want, got)
	if _, err := export.Import(ctx, dst, s, export.ImportOptions{Session: "../x"}); !errors.Is(err, recall.ErrInvalidKey) {
		t.Errorf("Import into a bad ID = %v, want ErrInvalidKey", err)
	}
}

func sameLog(a, b []recall.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Seq != b[i].Seq || a[i].Kind != b[i].Kind || !bytes.Equal(a[i].Data, b[i].Data) {
			return false
		}
	}
	return true
}

// A purged log (it starts at its compaction entry) round-trips into a
// store that never held the session.
func TestJSONLRoundTripPurged(t *testing.T) {
	ctx := context.Background()
	src := openFile(t)
	key := recall.Key{Project: "p", Session: "purged"}
	buildRich(t, src, key)
	res, err := src.(storekit.Purger).Purge(ctx, key)
	if err != nil || res.Dropped == 0 {
		t.Fatalf("Purge = %+v, %v", res, err)
	}
	want, _ := export.Load(ctx, src, key)
	if want.Entries[0].Seq == 1 || want.Entries[0].Kind != recall.KindCompaction {
		t.Fatalf("the purged log starts with %d %s", want.Entries[0].Seq, want.Entries[0].Kind)
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			dst := tg.open(t)
			_, r := roundTrip(t, src, dst, key, export.ImportOptions{})
			if r.Damaged != 0 {
				t.Errorf("purged import: %d damaged entries, want 0", r.Damaged)
			}
			got, err := export.Load(ctx, dst, key)
			if err != nil {
				t.Fatal(err)
			}
			sameSession(t, want, got)
		})
	}
}

// A log holding damaged records (items that are not JSON objects, written
// by another program, and a line the file store cannot decode) imports
// whole: every seq keeps its place, the damaged bytes are kept in
// KindDamaged entries, and the view and metadata are the same but for
// Corrupt.
func TestJSONLRoundTripDamaged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, err := filestore.Open(filestore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	key := recall.Key{Project: "p", Session: "damaged"}
	if _, err := recall.NewSession(src, key).Create(ctx, recall.CreateOptions{Title: "damaged", Items: []recall.Item{recall.Message("user", "first")}}); err != nil {
		t.Fatal(err)
	}
	ts, _ := json.Marshal(storekit.Now())
	notUTF8 := []byte("{\xff\xfe not utf-8")
	lines := []string{
		fmt.Sprintf(`{"seq":4,"kind":"item","time":%s,"data":[1,2]}`, ts),
		fmt.Sprintf(`{"seq":5,"kind":"item","time":%s,"data":"a string"}`, ts),
		fmt.Sprintf(`{"seq":6,"kind":"item","time":%s,"data_text":"{this is not json}"}`, ts), // undecodable: a gap
		fmt.Sprintf(`{"seq":7,"kind":"item","time":%s,"data_b64":"%s"}`, ts, base64.StdEncoding.EncodeToString(notUTF8)),
		fmt.Sprintf(`{"seq":8,"kind":"title","time":%s,"data":[]}`, ts),
		fmt.Sprintf(`{"seq":9,"kind":"item","time":%s,"data":{"type":"message","role":"assistant","content":"after the damage"}}`, ts),
	}
	pd, err := src.ProjectDir(key.Project)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(pd, key.Session+".jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	want, err := export.Load(ctx, src, key)
	if err != nil {
		t.Fatal(err)
	}
	if want.Meta.Corrupt != 4 || want.Meta.ItemCount != 2 {
		t.Fatalf("source meta: Corrupt %d ItemCount %d, want 4 and 2", want.Meta.Corrupt, want.Meta.ItemCount)
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			dst := tg.open(t)
			_, res := roundTrip(t, src, dst, key, export.ImportOptions{})
			if res.Damaged != 5 {
				t.Errorf("Damaged = %d, want 5", res.Damaged)
			}
			got, err := export.Load(ctx, dst, key)
			if err != nil {
				t.Fatal(err)
			}
			sameItems(t, want.Items(), got.Items())
			wm, gm := want.Meta, got.Meta
			wm.Corrupt = 0
			if a, b := metaJSON(t, wm), metaJSON(t, gm); a != b {
				t.Errorf("meta:\n got %s\nwant %s (but Corrupt 0)", b, a)
			}
			kept := map[int64]export.Damaged{}
			for _, e := range got.Entries {
				if e.Kind == export.KindDamaged {
					var d export.Damaged
					if err := json.Unmarshal(e.Data, &d); err != nil {
						t.Fatalf("damaged payload %s: %v", e.Data, err)
					}
					kept[e.Seq] = d
				}
			}
			text := func(d export.Damaged) string {
				if d.Text == nil {
					return "<nil>"
				}
				return *d.Text
			}
			if d := kept[4]; d.Kind != recall.KindItem || text(d) != "[1,2]" {
				t.Errorf("seq 4 kept as %+v", d)
			}
			if d := kept[5]; text(d) != `"a string"` {
				t.Errorf("seq 5 kept as %+v", d)
			}
			if d := kept[6]; !d.Missing || d.Kind != "" {
				t.Errorf("seq 6 (undecodable in the source) kept as %+v, want Missing", d)
			}
			if d := kept[7]; !bytes.Equal(d.B64, notUTF8) || d.Kind != recall.KindItem {
				t.Errorf("seq 7 kept as %+v", d)
			}
			if d := kept[8]; d.Kind != recall.KindTitle || text(d) != "[]" {
				t.Errorf("seq 8 kept as %+v", d)
			}
			if n := len(got.Entries); n != 9 || got.Entries[n-1].Seq != 9 {
				t.Errorf("imported log: %d entries, want seqs 1..9", n)
			}
			// and importing the file again changes nothing
			if _, res := roundTrip(t, src, dst, key, export.ImportOptions{}); res.Status != export.StatusUnchanged {
				t.Errorf("second import = %+v, want unchanged", res)
			}
		})
	}
}

// Bad input is refused with ErrInvalidLog naming the line, and nothing is
// imported from it.
func TestReadJSONLRefuses(t *testing.T) {
	const head = `{"recall_log":1,"key":{"project":"p","session":"s"},"meta":{}}`
	const t1 = `"time":"2025-06-01T10:00:00Z"`
	cases := map[string]string{
		"empty":                 "",
		"blank lines":           "\n\n  \n",
		"not json":              "hello\n",
		"entry before a header": `{"seq":1,"kind":"create",` + t1 + "}\n",
		"later version":         `{"recall_log":2,"key":{"project":"p","session":"s"}}` + "\n",
		"header without key":    `{"recall_log":1}` + "\n",
		"bad key":               `{"recall_log":1,"key":{"project":"p","session":"../etc"}}` + "\n",
		"seq goes back":         head + "\n" + `{"seq":2,"kind":"create",` + t1 + "}\n" + `{"seq":2,"kind":"clear",` + t1 + "}\n",
		"no seq":                head + "\n" + `{"kind":"create",` + t1 + "}\n",
		"no time":               head + "\n" + `{"seq":1,"kind":"create"}` + "\n",
		"torn last line":        head + "\n" + `{"seq":1,"kind":"create",` + t1 + "}\n" + `{"seq":2,"kind":"item","ti`,
		"bad base64":            head + "\n" + `{"seq":1,"kind":"item",` + t1 + `,"data_b64":"!!"}` + "\n",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := export.ReadJSONL(strings.NewReader(in))
			if !errors.Is(err, export.ErrInvalidLog) || s != nil {
				t.Errorf("ReadJSONL = %v, %v; want ErrInvalidLog", s, err)
			}
		})
	}
}

// Several exports one after the other are one stream; a subagent record
// whose session is not in front of it stands alone.
func TestReadJSONLStream(t *testing.T) {
	const t1 = `"time":"2025-06-01T10:00:00Z"`
	in := `{"recall_log":1,"key":{"project":"p","session":"a"},"meta":{"title":"A"}}
{"seq":1,"kind":"create",` + t1 + `}
{"recall_log":1,"key":{"project":"p","session":"a","subpath":"subagents/x"}}
{"seq":1,"kind":"item",` + t1 + `,"data":{"type":"message"}}

{"recall_log":1,"key":{"project":"p","session":"b"}}
{"seq":1,"kind":"create",` + t1 + `}
{"recall_log":1,"key":{"project":"p","session":"c","subpath":"subagents/y"}}
{"seq":1,"kind":"create",` + t1 + `}`
	ss, err := export.ReadJSONL(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range ss {
		d := s.Meta.Key.String()
		for _, sub := range s.Subagents {
			d += " [" + sub.Meta.Key.Subpath + "]"
		}
		got = append(got, d)
	}
	if want := "p/a [subagents/x], p/b, p/c:subagents/y"; strings.Join(got, ", ") != want {
		t.Errorf("sessions = %s, want %s", strings.Join(got, ", "), want)
	}
	if ss[0].Meta.Title != "A" || string(ss[0].Subagents[0].Entries[0].Data) != `{"type":"message"}` {
		t.Errorf("first session = %+v", ss[0])
	}
}

// A log whose first entries are missing (lines the source store could not
// decode) imports with the missing seqs filled by KindDamaged entries, so
// the store's import, which needs a log without gaps, takes it.
func TestImportFillsMissingStart(t *testing.T) {
	ctx := context.Background()
	b := newLog(recall.Key{Project: "p", Session: "headless"}).
		add(recall.KindCreate, "").
		item(recall.Message("user", "one")).
		item(recall.Message("assistant", "two"))
	b.entries = b.entries[2:] // the log starts at seq 3
	s := b.session()
	dst := memstore.New(memstore.Options{})
	res, err := export.Import(ctx, dst, s, export.ImportOptions{})
	if err != nil || res.Damaged != 2 || res.Entries != 3 {
		t.Fatalf("Import = %+v, %v; want 3 entries, 2 of them damaged", res, err)
	}
	got, err := export.Load(ctx, dst, s.Meta.Key)
	if err != nil {
		t.Fatal(err)
	}
	sameItems(t, s.Items(), got.Items())
	for i, e := range got.Entries[:2] {
		var d export.Damaged
		if e.Seq != int64(i+1) || e.Kind != export.KindDamaged || json.Unmarshal(e.Data, &d) != nil || !d.Missing || !e.Time.Equal(s.Entries[0].Time) {
			t.Errorf("entry %d = %d %s %s at %s, want a missing seq %d at the next entry's time", i, e.Seq, e.Kind, e.Data, e.Time, i+1)
		}
	}
	if a, b := metaJSON(t, s.Meta), metaJSON(t, got.Meta); a != b {
		t.Errorf("meta:\n got %s\nwant %s", b, a)
	}
}
