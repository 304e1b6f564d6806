package filestore_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
)

// believed lists project p with a new store with hooks h and reports
// whether the list was served from the journal alone.
func believed(t *testing.T, home string, h *filestore.Hooks) bool {
	t.Helper()
	before := h.TrustedLists.Load()
	s := openHooked(t, home, h)
	if _, err := s.List(context.Background(), "p", recall.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	return h.TrustedLists.Load() > before
}

// appendLine appends one sealed journal line, as a writer would.
func appendLine(t *testing.T, path, body string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "\n%08x %s\n", crc32.ChecksumIEEE([]byte(body)), body)
}

// TestJournalBelieved walks through when a List believes the journal
// without a stat of every log, and checks the listing against a reference
// each time, with List's stat of the page turned off where the journal
// alone must be right.
func TestJournalBelieved(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the journal is believed only where the boot has a name")
	}
	// Without List's stat of the page, and Lists made after the file
	// system's clock moved on from each change (see filestore.Hooks).
	h := &filestore.Hooks{NoPageCheck: true, Settled: true}
	openStore := func(t *testing.T, home string) *filestore.Store { return openHooked(t, home, h) }
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	ref := fill(t, s, "p", 12)
	// The creations had the store check the directory in the background
	// (settleDir), which wrote the journal back with a header; Close
	// waits for that.
	s.Close()
	s = openStore(t, home)
	idx := indexPath(t, home, "p")

	// A journal without this boot's header (one from before a reboot, or
	// one only writers wrote): every log is checked, and the journal is
	// written back with one.
	journal, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(idx, dropHeader(journal), 0o600); err != nil {
		t.Fatal(err)
	}
	if believed(t, home, h) {
		t.Fatal("a journal without a header was believed")
	}
	wantSameList(t, "after the first check", openStore(t, home), ref, "p")
	if !believed(t, home, h) {
		t.Fatal("the journal the check wrote back is not believed")
	}

	// Appends by a writer keep it believed: the writer's lines say it all.
	k := recall.Key{Project: "p", Session: "s004"}
	for _, st := range []recall.Store{s, ref} {
		e := recall.Message("user", "more").Entry()
		e.Time = time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
		if _, err := st.Append(ctx, k, recall.Guard{}, e); err != nil {
			t.Fatal(err)
		}
	}
	if !believed(t, home, h) {
		t.Fatal("an append made the journal doubted")
	}
	wantSameList(t, "after an append", openStore(t, home), ref, "p")

	// A writer that died between its intent and its record: the log is
	// derived, the rest believed.
	hand := logPath(t, s, recall.Key{Project: "p", Session: "s007"})
	appendLine(t, idx, "s007 !")
	line := `{"seq":3,"kind":"item","time":"2025-03-01T00:00:00Z","data":{"type":"message","role":"user","content":"late"}}` + "\n"
	f, err := os.OpenFile(hand, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line)
	f.Close()
	if _, err := ref.Import(ctx, recall.Key{Project: "p", Session: "s007"}, recall.Entry{Seq: 3, Kind: recall.KindItem, Time: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), Data: []byte(`{"type":"message","role":"user","content":"late"}`)}); err != nil {
		t.Fatal(err)
	}
	if !believed(t, home, h) {
		t.Fatal("a pending log made the journal doubted")
	}
	wantSameList(t, "with a pending log", openStore(t, home), ref, "p")

	// A log created by hand moves the directory's mtime: the names are
	// read and the new log found, without a stat of the others.
	src := logPath(t, s, recall.Key{Project: "p", Session: "s002"})
	data, _ := os.ReadFile(src)
	if err := os.WriteFile(filepath.Join(filepath.Dir(src), "copied.jsonl"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, es, err := s.Load(ctx, recall.Key{Project: "p", Session: "s002"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Import(ctx, recall.Key{Project: "p", Session: "copied"}, es...); err != nil {
		t.Fatal(err)
	}
	wantSameList(t, "after a log was copied in", openStore(t, home), ref, "p")
	// and a log removed by hand
	if err := os.Remove(logPath(t, s, recall.Key{Project: "p", Session: "s009"})); err != nil {
		t.Fatal(err)
	}
	if err := ref.Remove(ctx, recall.Key{Project: "p", Session: "s009"}); err != nil {
		t.Fatal(err)
	}
	wantSameList(t, "after a log was removed by hand", openStore(t, home), ref, "p")
	if !believed(t, home, h) {
		t.Fatal("the journal is not believed again after the names were read")
	}

	// Damage, a journal of another boot, an older recall's journal: every
	// log is checked again.
	good, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	doubts := map[string]func(){
		"a damaged line": func() {
			f, _ := os.OpenFile(idx, os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString("\n00000000 s001 -\n")
			f.Close()
		},
		"a torn last line": func() {
			f, _ := os.OpenFile(idx, os.O_WRONLY|os.O_APPEND, 0)
			f.WriteString("\n1234abcd s001 12 34")
			f.Close()
		},
		"another boot": func() {
			i := bytes.Index(good, []byte("#boot "))
			end := i + bytes.IndexByte(good[i:], '\n')
			body := "#boot not-this-one"
			head := fmt.Sprintf("%08x %s", crc32.ChecksumIEEE([]byte(body)), body)
			os.WriteFile(idx, append([]byte(head), good[end:]...), 0o600)
		},
		"an older recall's journal": func() {
			os.WriteFile(filepath.Join(filepath.Dir(idx), "#index-v3"), nil, 0o600)
		},
		"a v4 recall's journal": func() {
			os.WriteFile(filepath.Join(filepath.Dir(idx), "#index-v4"), nil, 0o600)
		},
	}
	for name, doubt := range doubts {
		if err := os.WriteFile(idx, good, 0o600); err != nil {
			t.Fatal(err)
		}
		// the last check's rewrite moved the directory: a List settles it
		wantSameList(t, name+", before", openStore(t, home), ref, "p")
		if !believed(t, home, h) {
			t.Fatalf("%s: the good journal is not believed", name)
		}
		doubt()
		if believed(t, home, h) {
			t.Errorf("%s: the journal was believed", name)
		}
		wantSameList(t, name, openStore(t, home), ref, "p")
		os.Remove(filepath.Join(filepath.Dir(idx), "#index-v3"))
		os.Remove(filepath.Join(filepath.Dir(idx), "#index-v4"))
	}
}

// TestSettledOnceTheClockMoves: a store that created a session checks the
// directory again once its mtime is older than the file system clock's
// tick (the first check, at once, could not vouch for the names), so the
// next process believes the journal without any List in between.
func TestSettledOnceTheClockMoves(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the journal is believed only where the boot has a name")
	}
	t.Parallel()
	home := t.TempDir()
	s := openStore(t, home)
	if _, err := s.Append(context.Background(), recall.Key{Project: "p", Session: "new"}, recall.Guard{}, recall.Message("user", "hi").Entry()); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(indexPath(t, home, "p"))
	testkit.Eventually(t, time.Minute, "a #dir line with the directory's mtime", func() bool {
		st, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		journal, _ := os.ReadFile(indexPath(t, home, "p"))
		return bytes.Contains(journal, fmt.Appendf(nil, " #dir %d\n", st.ModTime().UnixNano()))
	})
	if !believed(t, home, &filestore.Hooks{}) {
		t.Error("the journal the writer settled is not believed")
	}
}
