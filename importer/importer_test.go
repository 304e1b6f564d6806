package importer

import (
	"context"
	"errors"
	"fmt"
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
	tr, tg := transcript(3)
	if _, err := Write(ctx, st, tr, tg, false); err != nil {
		t.Fatal(err)
	}
	m, err := st.Stat(ctx, tg.Key)
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

// transcript builds a transcript of n one-item lines of 10 bytes each.
func transcript(n int) (*Transcript, *Target) {
	t := &Transcript{Tool: "test", SessionID: "s1", File: "/x/s1.jsonl"}
	tg := &Target{Key: recall.Key{Project: "p", Session: "s1"}, Created: time.Unix(1000, 0).UTC()}
	for i := range n {
		t.Data = append(t.Data, fmt.Sprintf("line %04d\n", i)...)
		tg.Records = append(tg.Records, Record{End: int64(len(t.Data)), Entry: recall.Entry{
			Kind: recall.KindItem, Time: time.Unix(int64(1000+i), 0).UTC(), Data: []byte(recall.Message("user", strconv.Itoa(i))),
		}})
	}
	t.Targets = []*Target{tg}
	return t, tg
}

// TestWriteBatches: a transcript longer than one batch is written in
// several, each recording how far it reached, and a write interrupted
// between two batches goes on where it stopped.
func TestWriteBatches(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	tr, tg := transcript(batchRecords*2 + 5)
	res, err := Write(ctx, st, tr, tg, false)
	if err != nil || res.Outcome != New || res.Items != len(tg.Records) {
		t.Fatalf("%+v, %v", res, err)
	}
	m, entries, _ := st.Load(ctx, tg.Key)
	metas := 0
	for _, e := range entries {
		if e.Kind == recall.KindMeta {
			metas++
		}
	}
	if metas != 3 || m.ItemCount != len(tg.Records) || m.Metadata[MetaOffset] != strconv.Itoa(len(tr.Data)) {
		t.Errorf("%d batches, %d items, offset %s", metas, m.ItemCount, m.Metadata[MetaOffset])
	}
	if m.Updated != tg.Records[len(tg.Records)-1].Entry.Time || m.Created != tg.Created {
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
	if _, err := st2.Import(ctx, tg.Key, first...); err != nil {
		t.Fatal(err)
	}
	res, err = Write(ctx, st2, tr, tg, false)
	if err != nil || res.Outcome != Updated || res.Items != len(tg.Records)-batchRecords {
		t.Fatalf("resumed: %+v, %v", res, err)
	}
	if m2, _ := st2.Stat(ctx, tg.Key); m2.ItemCount != m.ItemCount || m2.Metadata[MetaDigest] != m.Metadata[MetaDigest] {
		t.Errorf("resumed: %d items, want %d", m2.ItemCount, m.ItemCount)
	}
}

// TestWriteKeepsTurnsWhole: a batch that is full in the middle of a turn
// takes the rest of the turn.
func TestWriteKeepsTurnsWhole(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	tr, tg := transcript(batchRecords + 20)
	for i := batchRecords - 5; i < batchRecords+5; i++ {
		tg.Records[i].Turn = "msg_1"
	}
	if _, err := Write(ctx, st, tr, tg, false); err != nil {
		t.Fatal(err)
	}
	_, entries, _ := st.Load(ctx, tg.Key)
	for i, e := range entries {
		if e.Kind == recall.KindMeta {
			// the create entry, then the items of the first batch
			if items := i - 1; items != batchRecords+5 {
				t.Errorf("the first batch holds %d items, want %d", items, batchRecords+5)
			}
			break
		}
	}
}

func TestWriteRefusesForeignSessions(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	tr, tg := transcript(3)
	if _, err := recall.NewSession(st, tg.Key).Create(ctx, recall.CreateOptions{Title: "mine"}); err != nil {
		t.Fatal(err)
	}
	before, _ := st.Stat(ctx, tg.Key)
	if _, err := Write(ctx, st, tr, tg, false); !errors.Is(err, ErrForeign) {
		t.Errorf("write over a session of recall's own: %v", err)
	}
	// another tool's transcript with the same id
	st2 := memstore.New(memstore.Options{})
	if _, err := Write(ctx, st2, tr, tg, false); err != nil {
		t.Fatal(err)
	}
	other := *tr
	other.Tool = "other"
	if _, err := Write(ctx, st2, &other, tg, false); !errors.Is(err, ErrForeign) {
		t.Errorf("write of another tool's transcript: %v", err)
	}
	if after, _ := st.Stat(ctx, tg.Key); after.LastSeq != before.LastSeq {
		t.Error("a refused write wrote")
	}
}

// TestWriteMetadataLimit: pairs a person added since the import are kept,
// and an import that would take the map over its limit fails cleanly.
func TestWriteMetadataLimit(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	tr, tg := transcript(2)
	if _, err := Write(ctx, st, tr, tg, false); err != nil {
		t.Fatal(err)
	}
	m, _ := st.Stat(ctx, tg.Key)
	extra := map[string]*string{}
	for i := len(m.Metadata); i < recall.MaxMetadataPairs; i++ {
		v := "x"
		extra[fmt.Sprintf("k%d", i)] = &v
	}
	if _, err := recall.NewSession(st, tg.Key).ChangeMeta(ctx, recall.MetaChange{Metadata: extra}); err != nil {
		t.Fatal(err)
	}
	tg.Model = "a-model" // one more pair
	tr.Data = append(tr.Data, "line 9999\n"...)
	tg.Records = append(tg.Records, Record{End: int64(len(tr.Data)), Entry: recall.Entry{Kind: recall.KindItem, Time: time.Unix(2000, 0), Data: []byte(recall.Message("user", "more"))}})
	_, err := Write(ctx, st, tr, tg, false)
	if !errors.Is(err, recall.ErrInvalidMetadata) {
		t.Errorf("over the limit: %v", err)
	}
	tg.Model = ""
	if res, err := Write(ctx, st, tr, tg, false); err != nil || res.Items != 1 {
		t.Errorf("within the limit: %+v, %v", res, err)
	}
}

func TestEachLine(t *testing.T) {
	var got []string
	data := []byte("a\r\n\n  \nb\nc")
	EachLine(data, func(l Line) {
		got = append(got, fmt.Sprintf("%s %d-%d %v", l.Bytes, l.Start, l.End, l.Unterminated))
	})
	want := []string{"a 0-3 false", "b 7-9 false", "c 9-10 true"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	tr := &Transcript{Data: data}
	tr.Torn(Line{Start: 9, End: 10, Unterminated: true})
	tr.Torn(Line{Start: 0, End: 3})
	if string(tr.Data) != "a\r\n\n  \nb\n" || tr.Skipped["torn"] != 1 || tr.Skipped["malformed"] != 1 {
		t.Errorf("after Torn: %q %v", tr.Data, tr.Skipped)
	}
}
