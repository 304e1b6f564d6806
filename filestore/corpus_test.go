package filestore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/storekit"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/good.jsonl from goodLog")

// goodLog is the log of testdata/good.jsonl: every kind of entry, a
// multi-line batch, an item with newlines, usage. Its last batch is one
// entry, so cutting the file inside the last line loses exactly that entry.
func goodLog() []recall.Entry {
	at := func(s int) time.Time { return time.Date(2025, 6, 1, 10, 0, s, 0, time.UTC) }
	usage := &recall.Usage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150}
	es := []recall.Entry{
		recall.Message("user", "What is in main.go?").Entry(),
		recall.Item("{\n  \"type\": \"function_call\",\n  \"call_id\": \"c1\",\n  \"name\": \"read_file\",\n  \"arguments\": \"{\\\"path\\\":\\\"main.go\\\"}\"\n}").Entry(),
		recall.Item(`{"type":"function_call_output","call_id":"c1","output":"package main"}`).Entry(),
		recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: "Reading main.go", Source: recall.TitleAuto}),
		recall.Message("assistant", "It declares package main.").Entry(),
		recall.NewEntry(recall.KindMeta, recall.MetaChange{Labels: []string{"go", "demo"}}),
		recall.Message("user", "thanks").Entry(),
		recall.NewEntry(recall.KindPop, recall.ItemRef{Seq: 7}),
		recall.Message("user", "Thanks, that is all.").Entry(),
	}
	for i := range es {
		es[i].Seq, es[i].Time = int64(i+1), at(i)
	}
	es[4].Usage = usage
	return es
}

// goodBatches is how goodLog is written: seqs 2-3 and 5-6 are batches.
var goodBatches = [][2]int{{0, 1}, {1, 3}, {3, 4}, {4, 6}, {6, 7}, {7, 8}, {8, 9}}

func TestUpdateCorpus(t *testing.T) {
	if !*updateCorpus {
		t.Skip("run with -update-corpus to rewrite testdata/good.jsonl")
	}
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	key := recall.Key{Project: "corpus", Session: "good"}
	es := goodLog()
	for _, b := range goodBatches {
		if _, err := s.Import(ctx, key, es[b[0]:b[1]]...); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(logPath(t, s, key))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "good.jsonl"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func openStore(t testing.TB, dir string) *filestore.Store {
	t.Helper()
	return openHooked(t, dir, nil)
}

// openHooked opens the store at dir with a test's hooks (nil: none).
func openHooked(t testing.TB, dir string, h *filestore.Hooks) *filestore.Store {
	t.Helper()
	s, err := filestore.OpenHooked(filestore.Options{Dir: dir}, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func logPath(t testing.TB, s *filestore.Store, key recall.Key) string {
	t.Helper()
	dir, err := s.ProjectDir(key.Project)
	if err != nil {
		t.Fatal(err)
	}
	rel := key.Session
	if key.Subpath != "" {
		rel += "/" + key.Subpath
	}
	return filepath.Join(dir, filepath.FromSlash(rel)+".jsonl")
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// placeLog copies data in as the log of key, as a user copying a file by
// hand would, and returns a fresh store over it.
func placeLog(t testing.TB, key recall.Key, data []byte) (*filestore.Store, string) {
	t.Helper()
	s := openStore(t, t.TempDir())
	path := logPath(t, s, key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return s, path
}

func loadSeqs(t testing.TB, s recall.Store, key recall.Key) (recall.Meta, []int64) {
	t.Helper()
	m, es, err := s.Load(context.Background(), key)
	if err != nil {
		t.Fatalf("Load %s: %v", key, err)
	}
	seqs := make([]int64, len(es))
	for i, e := range es {
		seqs[i] = e.Seq
	}
	return m, seqs
}

// verifyCorpus checks VerifySession's verdict on a corpus log: healthy,
// or, when it holds unreadable lines, those reported and nothing else.
func verifyCorpus(t *testing.T, err error, key recall.Key, corrupt int) {
	t.Helper()
	if corrupt > 0 {
		wantOnlyCorrupt(t, err, key, corrupt)
	} else if err != nil {
		t.Errorf("VerifySession: %v", err)
	}
}

func seqRange(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestCorpus loads every damaged log of testdata/: each must load with
// every complete entry, report its undecodable lines, pass Verify, show in
// List, and take a clean append afterwards, with the damaged bytes kept.
func TestCorpus(t *testing.T) {
	all := seqRange(1, 9)
	cases := []struct {
		file    string
		want    []int64
		corrupt int
		torn    string // bytes a writer must move to a side file
		newline bool   // the last line lacks only its newline
	}{
		{file: "good.jsonl", want: all},
		{file: "garbage.jsonl", want: all, corrupt: 4},
		{file: "blank-lines.jsonl", want: all},
		{file: "crlf.jsonl", want: all},
		{file: "nul.jsonl", want: all, corrupt: 2},
		{file: "torn-batch.jsonl", want: seqRange(1, 3), torn: "batch"},
		{file: "torn-line.jsonl", want: seqRange(1, 8), torn: "line"},
		{file: "unterminated.jsonl", want: all, newline: true},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data := readTestdata(t, c.file)
			key := recall.Key{Project: "corpus", Session: "s"}
			s, path := placeLog(t, key, data)

			m, seqs := loadSeqs(t, s, key)
			if !slices.Equal(seqs, c.want) {
				t.Fatalf("Load seqs %v, want %v", seqs, c.want)
			}
			if m.Corrupt != c.corrupt {
				t.Errorf("Meta.Corrupt = %d, want %d", m.Corrupt, c.corrupt)
			}
			verifyCorpus(t, storekit.VerifySession(ctx, s, key), key, c.corrupt)
			page, err := s.List(ctx, "corpus", recall.ListOptions{IncludeArchived: true})
			if err != nil || len(page.Sessions) != 1 || page.Sessions[0].LastSeq != m.LastSeq || page.Sessions[0].ItemCount != m.ItemCount {
				t.Errorf("List = %+v, %v; want the session with %d items", page.Sessions, err, m.ItemCount)
			}
			all, lastAll, err := s.Items(ctx, key, 0)
			if err != nil {
				t.Fatal(err)
			}
			tail, lastTail, err := s.Items(ctx, key, 2)
			if err != nil || len(all) < 2 || !slices.EqualFunc(tail, all[len(all)-2:], func(a, b recall.LiveItem) bool {
				return a.Ref == b.Ref && bytes.Equal(a.Item, b.Item)
			}) {
				t.Errorf("Items(2) = %v, %v; want the last 2 of Items(0)", tail, err)
			}
			// the LastSeq each read the view at: the last committed entry's
			if lastAll != m.LastSeq || lastTail != m.LastSeq {
				t.Errorf("Items(0) and Items(2) read at seq %d and %d; Load says %d", lastAll, lastTail, m.LastSeq)
			}

			// The file is untouched by reads.
			if now, _ := os.ReadFile(path); !bytes.Equal(now, data) {
				t.Fatalf("reading changed the log")
			}

			last := seqs[len(seqs)-1]
			seq, err := s.Append(ctx, key, recall.Guard{}, recall.Message("user", "after").Entry())
			if err != nil || seq != last+1 {
				t.Fatalf("Append = %d, %v; want %d", seq, err, last+1)
			}
			_, seqs = loadSeqs(t, s, key)
			if want := append(slices.Clone(c.want), last+1); !slices.Equal(seqs, want) {
				t.Fatalf("after Append: seqs %v, want %v", seqs, want)
			}
			verifyCorpus(t, storekit.VerifySession(ctx, s, key), key, c.corrupt)

			now, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			side, _ := filepath.Glob(path + "#torn-*")
			keep := data
			switch {
			case c.torn != "":
				if len(side) != 1 {
					t.Fatalf("side files %v, want one", side)
				}
				tornBytes, _ := os.ReadFile(side[0])
				keep = data[:len(data)-len(tornBytes)]
				if len(tornBytes) == 0 || !bytes.Equal(append(slices.Clone(keep), tornBytes...), data) {
					t.Errorf("side file holds %q, not the tail of the log", tornBytes)
				}
			case c.newline:
				keep = append(slices.Clone(data), '\n')
				fallthrough
			default:
				if len(side) != 0 {
					t.Errorf("side files %v for a log with no torn tail", side)
				}
			}
			if !bytes.HasPrefix(now, keep) {
				t.Errorf("Append rewrote the log's earlier bytes:\n%q\nwant prefix\n%q", now, keep)
			}
			if rest := now[len(keep):]; bytes.Count(rest, []byte("\n")) != 1 || !bytes.HasSuffix(rest, []byte("\n")) || !bytes.HasPrefix(rest, []byte(`{"seq":`)) {
				t.Errorf("the new entry is not one clean line: %q", rest)
			}
		})
	}
}

// TestTruncatedEveryOffset cuts testdata/good.jsonl at every byte offset of
// its last entry, as a crash mid-write would, and checks that each cut
// loads every complete entry, keeps the torn bytes in a side file when a
// writer comes, and takes clean appends.
func TestTruncatedEveryOffset(t *testing.T) {
	ctx := context.Background()
	good := readTestdata(t, "good.jsonl")
	start := bytes.LastIndexByte(good[:len(good)-1], '\n') + 1
	key := recall.Key{Project: "corpus", Session: "cut"}
	for cut := start; cut < len(good); cut++ {
		data := good[:cut]
		s, path := placeLog(t, key, data)
		want := seqRange(1, 8)
		if cut == len(good)-1 { // only the newline is missing: the entry is whole
			want = seqRange(1, 9)
		}
		if _, seqs := loadSeqs(t, s, key); !slices.Equal(seqs, want) {
			t.Fatalf("cut at %d: seqs %v, want %v", cut, seqs, want)
		}
		next := int64(len(want) + 1)
		if seq, err := s.Append(ctx, key, recall.Guard{}, recall.Message("user", "after").Entry()); err != nil || seq != next {
			t.Fatalf("cut at %d: Append = %d, %v; want %d", cut, seq, err, next)
		}
		_, seqs := loadSeqs(t, s, key)
		if !slices.Equal(seqs, append(want, next)) {
			t.Fatalf("cut at %d: after Append seqs %v", cut, seqs)
		}
		if err := storekit.VerifySession(ctx, s, key); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		side, _ := filepath.Glob(path + "#torn-*")
		switch {
		case cut == start || cut == len(good)-1:
			if len(side) != 0 {
				t.Fatalf("cut at %d: side files %v, want none", cut, side)
			}
		default:
			if len(side) != 1 {
				t.Fatalf("cut at %d: side files %v, want one", cut, side)
			}
			if torn, _ := os.ReadFile(side[0]); !bytes.Equal(torn, good[start:cut]) {
				t.Fatalf("cut at %d: side file %q, want %q", cut, torn, good[start:cut])
			}
		}
	}
}

// TestCorpusFilesAreWhatTheySay guards the corpus against a careless edit:
// each file has the damage its name promises.
func TestCorpusFilesAreWhatTheySay(t *testing.T) {
	good := readTestdata(t, "good.jsonl")
	var es []json.RawMessage
	for _, l := range bytes.Split(bytes.TrimSuffix(good, []byte("\n")), []byte("\n")) {
		if !json.Valid(l) {
			t.Fatalf("good.jsonl has an invalid line %q", l)
		}
		es = append(es, l)
	}
	if len(es) != 9 {
		t.Fatalf("good.jsonl has %d lines, want 9", len(es))
	}
	checks := map[string]func([]byte) bool{
		"crlf.jsonl":         func(b []byte) bool { return bytes.Count(b, []byte("\r\n")) == 9 },
		"nul.jsonl":          func(b []byte) bool { return bytes.IndexByte(b, 0) > 0 },
		"blank-lines.jsonl":  func(b []byte) bool { return bytes.Contains(b, []byte("\n\n")) },
		"unterminated.jsonl": func(b []byte) bool { return b[len(b)-1] == '}' },
	}
	for name, ok := range checks {
		if !ok(readTestdata(t, name)) {
			t.Errorf("%s lacks its damage", name)
		}
	}
}

func openSyncNever(dir string) (*filestore.Store, error) {
	return filestore.Open(filestore.Options{Dir: dir, Sync: filestore.SyncNever})
}
