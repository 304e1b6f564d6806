package filestore_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"unicode/utf8"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/flock"
	"github.com/recallkit/recall/storekit"
)

// wantOnlyCorrupt checks that err, from storekit.Verify or VerifySession, is
// ErrCorrupt for key reporting exactly its corrupt unreadable records and
// nothing else: the damage is reported, and it is the only problem.
func wantOnlyCorrupt(t testing.TB, err error, key recall.Key, corrupt int) {
	t.Helper()
	records := "records"
	if corrupt == 1 {
		records = "record"
	}
	want := fmt.Sprintf("%s: %v: %d unreadable stored %s (kept, skipped by readers)", key, recall.ErrCorrupt, corrupt, records)
	if !errors.Is(err, recall.ErrCorrupt) || err.Error() != want {
		t.Errorf("Verify = %v\nwant only %q", err, want)
	}
}

// plantItem appends to key's log, as a writer of the log format that does
// not validate would, an item entry whose item is data, whatever it holds,
// at seq LastSeq+1. Data that can sit on the line as JSON goes in "data";
// anything else in "data_text" (or "data_b64" when it is not UTF-8), the
// way the store's own encoder writes a payload it cannot embed. A payload
// that is not JSON but looks like an object to recall.Entry.Item makes a line
// that does not decode. It takes the log's file lock, as every writer
// does; the log's size and mtime change, so the index notices.
func plantItem(t testing.TB, s recall.Store, key recall.Key, data []byte) {
	t.Helper()
	fs := s.(*filestore.Store)
	m, err := fs.Stat(context.Background(), key)
	if err != nil {
		t.Fatalf("plant: %v", err)
	}
	ts, _ := json.Marshal(storekit.Now())
	line := fmt.Appendf(nil, `{"seq":%d,"kind":"item","time":%s`, m.LastSeq+1, ts)
	switch {
	case len(data) == 0:
	case json.Valid(data) && !bytes.ContainsAny(data, "\r\n") && len(bytes.TrimSpace(data)) == len(data):
		line = fmt.Appendf(line, `,"data":%s`, data)
	case utf8.Valid(data):
		text, _ := json.Marshal(string(data))
		line = fmt.Appendf(line, `,"data_text":%s`, text)
	default:
		line = fmt.Appendf(line, `,"data_b64":"%s"`, base64.StdEncoding.EncodeToString(data))
	}
	line = append(line, "}\n"...)
	f, err := os.OpenFile(logPath(t, fs, key), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("plant: %v", err)
	}
	defer f.Close()
	if err := flock.Lock(context.Background(), f); err != nil {
		t.Fatalf("plant: %v", err)
	}
	if _, err := f.Write(line); err != nil {
		t.Fatalf("plant: %v", err)
	}
}

// An item entry whose item is not a JSON object (planted by a writer that
// does not validate) is left out of Items, Pop and the view and counted in
// Meta.Corrupt by Load, Stat and List, beside a line that does not decode
// at all; Verify reports them, naming the session. The seqs of the
// decodable ones count: the next append comes after them.
func TestDamagedItems(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	key := recall.Key{Project: "p", Session: "damaged"}
	a, b, c := recall.Message("user", "a"), recall.Message("assistant", "b"), recall.Message("user", "c")
	if _, err := s.Append(ctx, key, recall.Guard{}, recall.ItemEntries(a, b)...); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{`[1,2]`, `"text"`, "not json\nat all", "", "\xff\xfe", `{broken}`} {
		plantItem(t, s, key, []byte(data))
	}
	// [1,2], "text", the two lines of text, nothing and the bytes are
	// entries at seqs 3..7; {broken} does not decode, so c is seq 8.
	if seq, err := s.Append(ctx, key, recall.Guard{}, c.Entry()); err != nil || seq != 8 {
		t.Fatalf("Append after the damage = %d, %v; want seq 8", seq, err)
	}
	const corrupt = 6
	check := func(s *filestore.Store, what string) {
		t.Helper()
		wantItems := func(limit int, want ...recall.Item) {
			t.Helper()
			live, last, err := s.Items(ctx, key, limit)
			if err != nil || last != 8 || len(live) != len(want) {
				t.Fatalf("%s: Items(%d) = %d items at seq %d, %v; want %d at seq 8", what, limit, len(live), last, err, len(want))
			}
			for i := range want {
				if !bytes.Equal(live[i].Item, want[i]) {
					t.Errorf("%s: Items(%d)[%d] = %s, want %s", what, limit, i, live[i].Item, want[i])
				}
			}
		}
		wantItems(0, a, b, c)
		wantItems(2, b, c)
		wantItems(1, c)
		m, es, err := s.Load(ctx, key)
		if err != nil || m.Corrupt != corrupt || m.ItemCount != 3 || m.LastSeq != 8 || len(es) != 8 {
			t.Errorf("%s: Load = corrupt %d, %d items, last %d, %d entries, %v; want %d, 3, 8, 8", what, m.Corrupt, m.ItemCount, m.LastSeq, len(es), err, corrupt)
		}
		if st, err := s.Stat(ctx, key); err != nil || st.Corrupt != corrupt || st.ItemCount != 3 || st.LastSeq != 8 {
			t.Errorf("%s: Stat = %+v, %v; want %d corrupt, 3 items", what, st, err, corrupt)
		}
		page, err := s.List(ctx, key.Project, recall.ListOptions{})
		if err != nil || len(page.Sessions) != 1 || page.Sessions[0].Corrupt != corrupt || page.Sessions[0].ItemCount != 3 {
			t.Errorf("%s: List = %+v, %v; want the session with %d corrupt", what, page.Sessions, err, corrupt)
		}
		wantOnlyCorrupt(t, storekit.VerifySession(ctx, s, key), key, corrupt)
	}
	check(s, "the writing store")
	check(openStore(t, home), "a new store")

	// The planted entries are in the log, verbatim, for replication.
	es, err := s.Entries(ctx, key, 2, 0)
	if err != nil || len(es) != 6 || string(es[0].Data) != `[1,2]` || string(es[2].Data) != "not json\nat all" || es[3].Data != nil || string(es[4].Data) != "\xff\xfe" {
		t.Errorf("Entries after seq 2 = %v, %v", es, err)
	}

	// Pop skips them: after c it is b.
	for _, want := range []recall.Item{c, b, a, nil} {
		got, err := s.Pop(ctx, key)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Pop = %s, %v; want %s", got, err, want)
		}
	}
	if m, err := s.Stat(ctx, key); err != nil || m.ItemCount != 0 || m.Corrupt != corrupt {
		t.Errorf("after the pops: %+v, %v", m, err)
	}
}
