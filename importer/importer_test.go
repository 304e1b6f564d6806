package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

func TestProjectKey(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone", "app")
	want, err := recall.ProjectKey(missing)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ cwd, want string }{
		{"/home/dev/app", "-home-dev-app"}, // need not exist here
		{missing, want},
		{`C:\Users\dev\app`, "C--Users-dev-app"}, // a Windows path, as Claude Code names its folder
		{`\\server\share\app`, "--server-share-app"},
	}
	for _, c := range cases {
		got, err := ProjectKey(c.cwd)
		if err != nil || got != c.want {
			t.Errorf("ProjectKey(%q) = %q, %v; want %q", c.cwd, got, err, c.want)
		}
		if err := (recall.Key{Project: got, Session: "s"}).Validate(); err != nil {
			t.Errorf("ProjectKey(%q): %v", c.cwd, err)
		}
	}
	long := `D:\` + strings.Repeat("deep\\", 60)
	got, _ := ProjectKey(long)
	if len(got) != 213 || !strings.HasPrefix(got, "D--deep-") {
		t.Errorf("long foreign path: %q (%d bytes)", got, len(got))
	}
	if _, err := ProjectKey(""); err == nil {
		t.Error("an empty cwd has a project")
	}
}

func TestSessionID(t *testing.T) {
	if got := SessionID("codex", "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"); got != "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" {
		t.Errorf("a valid id changed: %s", got)
	}
	a, b := SessionID("claude-code", "has spaces/and slashes"), SessionID("codex", "has spaces/and slashes")
	if recall.ValidateID(a) != nil || a == b || a != SessionID("claude-code", "has spaces/and slashes") {
		t.Errorf("derived ids %q %q", a, b)
	}
}

// TestSource: a record an import wrote names the tool it came from; a
// session recall wrote, with metadata of its own or none, is "recall".
func TestSource(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	path := filepath.Join(t.TempDir(), "s1.log")
	writeLines(t, path, false, items(3)...)
	run(t, st, path, Options{})
	m, err := st.Stat(ctx, testKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m    recall.Meta
		want string
	}{
		{m, "test"},
		{recall.Meta{}, SourceRecall},
		{recall.Meta{Metadata: map[string]string{MetaCwd: "/home/dev/app"}}, SourceRecall},
		{recall.Meta{Metadata: map[string]string{MetaSource: ""}}, SourceRecall},
	} {
		if got := Source(c.m); got != c.want {
			t.Errorf("Source(%v) = %q, want %q", c.m.Metadata, got, c.want)
		}
	}
}

// testLine is one line of the tests' transcripts: JSON, read by
// testMapper.
type testLine struct {
	Session string `json:"session,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	Agent   string `json:"agent,omitempty"`
	Text    string `json:"text,omitempty"` // an item
	Compact bool   `json:"compact,omitempty"`
	Turn    string `json:"turn,omitempty"`
	Time    int64  `json:"time,omitempty"` // Unix seconds; 0: none
	Model   string `json:"model,omitempty"`
}

// testMapper maps testLines: the first session and cwd named are the
// session's, an item or compaction goes to the line's agent.
type testMapper struct{ id Identity }

func newTestMapper(string) Mapper { return &testMapper{} }

func (m *testMapper) Line(t *Transcript, l Line) {
	var tl testLine
	if err := json.Unmarshal(l.Bytes, &tl); err != nil {
		t.Torn(l)
		return
	}
	if m.id.SessionID == "" {
		m.id.SessionID = tl.Session
	}
	if m.id.Cwd == "" {
		m.id.Cwd = tl.Cwd
	}
	var at time.Time
	if tl.Time != 0 {
		at = time.Unix(tl.Time, 0).UTC()
	}
	switch {
	case tl.Compact:
		t.Target(tl.Agent).Add(Record{Turn: tl.Turn, Entry: recall.Entry{Kind: recall.KindCompaction, Time: at},
			Compaction: &recall.Compaction{Items: []recall.Item{}, Strategy: "test"}})
	case tl.Text != "":
		tg := t.Target(tl.Agent)
		if tl.Model != "" {
			tg.Model = tl.Model
		}
		tg.Add(Record{Turn: tl.Turn, Entry: recall.Entry{Kind: recall.KindItem, Time: at, Data: []byte(recall.Message("user", tl.Text))}})
	default:
		t.Skip("empty")
	}
}

func (m *testMapper) Identity(eof bool) (Identity, error) {
	if eof && m.id.SessionID == "" {
		return m.id, errors.New("no session named")
	}
	return m.id, nil
}

// testKey is the key of the tests' transcripts' session.
var testKey = recall.Key{Project: "-x", Session: "s1"}

// items returns n item lines of session s1 in /x, one a second from
// time 1000.
func items(n int) []testLine {
	lines := make([]testLine, n)
	for i := range lines {
		lines[i] = testLine{Session: "s1", Cwd: "/x", Text: fmt.Sprintf("item %d", i), Time: int64(1000 + i)}
	}
	return lines
}

// writeLines writes lines to path (appending when add) and returns the
// file's bytes.
func writeLines(t *testing.T, path string, add bool, lines ...testLine) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	if add {
		flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	return data
}

// run imports path into st.
func run(t *testing.T, st recall.Store, path string, opts Options) Summary {
	t.Helper()
	sum, err := Run(context.Background(), st, "test", []string{path}, newTestMapper, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// logOf returns the texts of the items of key's log, and its meta entries.
func logOf(t *testing.T, st recall.Store, key recall.Key) (texts []string, metas int) {
	t.Helper()
	_, entries, err := st.Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Kind {
		case recall.KindItem:
			texts = append(texts, recall.Item(e.Data).Text())
		case recall.KindMeta:
			metas++
		}
	}
	return texts, metas
}

// TestWriteBatches: a transcript longer than one batch is written in
// several, each recording how far it reached, and an import interrupted
// between two batches goes on where it stopped.
func TestWriteBatches(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	path := filepath.Join(t.TempDir(), "s1.log")
	lines := items(batchRecords*2 + 5)
	lines[10].Model = "m-1"
	data := writeLines(t, path, false, lines...)
	sum := run(t, st, path, Options{})
	if sum.Sessions != (Counts{New: 1}) || sum.Items != len(lines) || sum.Bytes != int64(len(data)) || sum.Lines != len(lines) {
		t.Fatalf("%+v", sum)
	}
	m, entries, _ := st.Load(ctx, testKey)
	if texts, metas := logOf(t, st, testKey); metas != 3 || len(texts) != len(lines) || texts[len(texts)-1] != "item 4004" {
		t.Errorf("%d batches, %d items", metas, len(texts))
	}
	if m.Metadata[MetaOffset] != strconv.Itoa(len(data)) || m.Metadata[MetaModel] != "m-1" || m.Metadata[MetaCwd] != "/x" {
		t.Errorf("metadata %v", m.Metadata)
	}
	if sum.Entries != int(m.LastSeq) {
		t.Errorf("%d entries counted, %d written", sum.Entries, m.LastSeq)
	}
	if m.Created != time.Unix(1000, 0).UTC() || m.Updated != time.Unix(int64(1000+len(lines)-1), 0).UTC() {
		t.Errorf("created %v updated %v", m.Created, m.Updated)
	}

	// As if the process died after the first batch: a store holding only
	// it gets the rest, once.
	st2 := memstore.New(memstore.Options{})
	var first []recall.Entry
	for _, e := range entries {
		first = append(first, e)
		if e.Kind == recall.KindMeta {
			break
		}
	}
	if _, err := st2.Import(ctx, testKey, first...); err != nil {
		t.Fatal(err)
	}
	sum = run(t, st2, path, Options{})
	if sum.Sessions != (Counts{Updated: 1}) || sum.Items != len(lines)-batchRecords {
		t.Fatalf("resumed: %+v", sum)
	}
	if m2, _ := st2.Stat(ctx, testKey); m2.ItemCount != m.ItemCount || m2.Metadata[MetaDigest] != m.Metadata[MetaDigest] {
		t.Errorf("resumed: %d items, want %d", m2.ItemCount, m.ItemCount)
	}
	if sum := run(t, st2, path, Options{}); sum.Sessions != (Counts{Unchanged: 1}) || sum.Entries != 0 {
		t.Errorf("again: %+v", sum)
	}
}

// TestWriteKeepsTurnsWhole: a batch that is full in the middle of a turn
// takes the rest of the turn; a turn of more than turnBatches batches is
// cut all the same.
func TestWriteKeepsTurnsWhole(t *testing.T) {
	st := memstore.New(memstore.Options{})
	path := filepath.Join(t.TempDir(), "s1.log")
	lines := items(batchRecords + 20)
	for i := batchRecords - 5; i < batchRecords+5; i++ {
		lines[i].Turn = "msg_1"
	}
	writeLines(t, path, false, lines...)
	run(t, st, path, Options{})
	_, entries, _ := st.Load(context.Background(), testKey)
	for i, e := range entries {
		if e.Kind == recall.KindMeta {
			// the create entry, then the items of the first batch
			if items := i - 1; items != batchRecords+5 {
				t.Errorf("the first batch holds %d items, want %d", items, batchRecords+5)
			}
			break
		}
	}

	st = memstore.New(memstore.Options{})
	lines = items(turnBatches*batchRecords + 10)
	for i := range lines {
		lines[i].Turn = "endless"
	}
	writeLines(t, path, false, lines...)
	run(t, st, path, Options{})
	if texts, metas := logOf(t, st, testKey); metas != 2 || len(texts) != len(lines) {
		t.Errorf("an endless turn: %d items in %d batches", len(texts), metas)
	}
}

func TestWriteRefusesForeignSessions(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	path := filepath.Join(t.TempDir(), "s1.log")
	writeLines(t, path, false, items(3)...)
	if _, err := recall.NewSession(st, testKey).Create(ctx, recall.CreateOptions{Title: "mine"}); err != nil {
		t.Fatal(err)
	}
	before, _ := st.Stat(ctx, testKey)
	sum := run(t, st, path, Options{})
	if len(sum.Failures) != 1 || !strings.Contains(sum.Failures[0].Err, ErrForeign.Error()) || sum.Failures[0].Key != testKey.String() {
		t.Errorf("write over a session of recall's own: %+v", sum)
	}
	if after, _ := st.Stat(ctx, testKey); after.LastSeq != before.LastSeq {
		t.Error("a refused write wrote")
	}
	// another tool's transcript with the same id
	st2 := memstore.New(memstore.Options{})
	run(t, st2, path, Options{})
	sum, err := Run(ctx, st2, "other", []string{path}, newTestMapper, Options{})
	if err != nil || len(sum.Failures) != 1 || !strings.Contains(sum.Failures[0].Err, ErrForeign.Error()) {
		t.Errorf("write of another tool's transcript: %+v, %v", sum, err)
	}
}

// TestWriteMetadataLimit: pairs a person added since the import are kept,
// and an import that would take the map over its limit fails cleanly.
func TestWriteMetadataLimit(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	path := filepath.Join(t.TempDir(), "s1.log")
	writeLines(t, path, false, items(2)...)
	run(t, st, path, Options{})
	m, _ := st.Stat(ctx, testKey)
	extra := map[string]*string{}
	for i := len(m.Metadata); i < recall.MaxMetadataPairs; i++ {
		v := "x"
		extra[fmt.Sprintf("k%d", i)] = &v
	}
	if _, err := recall.NewSession(st, testKey).ChangeMeta(ctx, recall.MetaChange{Metadata: extra}); err != nil {
		t.Fatal(err)
	}
	more := testLine{Session: "s1", Text: "more", Time: 2000, Model: "a-model"} // one more pair
	writeLines(t, path, true, more)
	sum := run(t, st, path, Options{})
	if len(sum.Failures) != 1 || !strings.Contains(sum.Failures[0].Err, recall.ErrInvalidMetadata.Error()) {
		t.Errorf("over the limit: %+v", sum)
	}
	// the person removes a pair of theirs
	for k := range extra {
		if _, err := recall.NewSession(st, testKey).ChangeMeta(ctx, recall.MetaChange{Metadata: map[string]*string{k: nil}}); err != nil {
			t.Fatal(err)
		}
		break
	}
	if sum := run(t, st, path, Options{}); len(sum.Failures) != 0 || sum.Items != 1 {
		t.Errorf("within the limit: %+v", sum)
	}
}

func TestLines(t *testing.T) {
	var got []string
	lr := newLineReader(strings.NewReader("a\r\n\n  \nb\n" + strings.Repeat("x", 600<<10) + "\nc"))
	for {
		l, raw, err := lr.next()
		if err != nil {
			break
		}
		if !l.blank() {
			got = append(got, fmt.Sprintf("%.3s %d-%d %d %v", l.Bytes, l.Start, l.End, len(raw), l.Unterminated))
		}
	}
	want := []string{"a 0-3 3 false", "b 7-9 2 false", "xxx 9-614410 614401 false", "c 614410-614411 1 true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}

// TestTornLastLine: a last line that does not decode is left out of the
// bytes consumed, and read whole by the next import; one that decodes is
// a line like any other.
func TestTornLastLine(t *testing.T) {
	st := memstore.New(memstore.Options{})
	path := filepath.Join(t.TempDir(), "s1.log")
	data := writeLines(t, path, false, items(3)...)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"session":"s1","text":"ha`)
	f.Close()
	sum := run(t, st, path, Options{})
	if sum.Bytes != int64(len(data)) || sum.Skipped["torn"] != 1 || sum.Items != 3 {
		t.Fatalf("%+v", sum)
	}
	f, _ = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`lf"}` + "\n" + `not json` + "\n")
	f.Close()
	sum = run(t, st, path, Options{})
	if sum.Sessions != (Counts{Updated: 1}) || sum.Items != 1 || sum.Skipped["malformed"] != 1 {
		t.Fatalf("%+v", sum)
	}
	if texts, _ := logOf(t, st, testKey); fmt.Sprint(texts) != "[item 0 item 1 item 2 half]" {
		t.Errorf("items %q", texts)
	}
}
