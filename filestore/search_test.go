package filestore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/search"
)

// bruteSearch is the reference the index must agree with, written out
// plainly from the shared pieces of the search contract: every main
// session's log loaded, search.SessionHits, sorted by search.Compare,
// cut after the cursor.
func bruteSearch(ctx context.Context, s recall.Store, opts recall.SearchOptions) (recall.SearchPage, error) {
	if err := search.Check(opts); err != nil {
		return recall.SearchPage{}, err
	}
	q, _ := search.Parse(opts.Query)
	var all []search.Candidate
	lopts := recall.ListOptions{Limit: -1, IncludeArchived: opts.IncludeArchived}
	page, err := s.List(ctx, opts.Project, lopts)
	if err != nil {
		return recall.SearchPage{}, err
	}
	for _, m := range page.Sessions {
		meta, entries, err := s.Load(ctx, m.Key)
		if err != nil {
			return recall.SearchPage{}, err
		}
		all = append(all, search.SessionHits(meta, entries, q, opts)...)
	}
	slices.SortFunc(all, func(a, b search.Candidate) int { return search.Compare(a.Hit, b.Hit) })
	if opts.Cursor != "" {
		c, _ := search.ParseCursor(opts.Cursor)
		all = slices.DeleteFunc(all, func(h search.Candidate) bool { return !c.After(h.Hit) })
	}
	var out recall.SearchPage
	if len(all) > opts.PageSize() {
		all = all[:opts.PageSize()]
		out.Next = search.CursorAt(all[len(all)-1].Hit).String()
	}
	out.Hits = []recall.Hit{}
	for _, c := range all {
		c.Snippet, c.Matches = search.Snippet(c.Text, q)
		out.Hits = append(out.Hits, c.Hit)
	}
	return out, nil
}

// allPages returns every hit of opts, page by page, and the cursors.
func allPages(t *testing.T, search func(recall.SearchOptions) (recall.SearchPage, error), opts recall.SearchOptions) ([]recall.Hit, []string) {
	t.Helper()
	var hits []recall.Hit
	var cursors []string
	for range 1000 {
		p, err := search(opts)
		if err != nil {
			t.Fatalf("search %+v: %v", opts, err)
		}
		hits = append(hits, p.Hits...)
		cursors = append(cursors, p.Next)
		if p.Next == "" {
			return hits, cursors
		}
		opts.Cursor = p.Next
	}
	t.Fatalf("search %+v: more than 1000 pages", opts)
	return nil, nil
}

// sameHits reports how got differs from want: every field, the time
// compared as an instant.
func sameHits(got, want []recall.Hit) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d hits, want %d\n got %s\nwant %s", len(got), len(want), hitList(got), hitList(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.Time.Equal(w.Time) {
			return fmt.Sprintf("hit %d: time %v, want %v\n got %+v\nwant %+v", i, g.Time, w.Time, g, w)
		}
		g.Time, w.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			return fmt.Sprintf("hit %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	return ""
}

func hitList(hs []recall.Hit) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "[%s %v %s %q] ", h.Key, h.Ref, h.Role, h.Snippet)
	}
	return b.String()
}

// checkSearch compares the store's Search with the scan for opts, all
// pages, and returns the hits.
func checkSearch(t *testing.T, s *filestore.Store, opts recall.SearchOptions) []recall.Hit {
	t.Helper()
	ctx := context.Background()
	got, gc := allPages(t, func(o recall.SearchOptions) (recall.SearchPage, error) { return s.Search(ctx, o) }, opts)
	want, wc := allPages(t, func(o recall.SearchOptions) (recall.SearchPage, error) { return bruteSearch(ctx, s, o) }, opts)
	if d := sameHits(got, want); d != "" {
		t.Fatalf("search %+v: %s", opts, d)
	}
	if !reflect.DeepEqual(gc, wc) {
		t.Fatalf("search %+v: cursors %q, want %q", opts, gc, wc)
	}
	// and it was the index that answered, not the scan Search falls back to
	idx, _ := allPages(t, func(o recall.SearchOptions) (recall.SearchPage, error) { return filestore.SearchIndexOnly(ctx, s, o) }, opts)
	if d := sameHits(idx, want); d != "" {
		t.Fatalf("search %+v, the index alone: %s", opts, d)
	}
	return got
}

func openSearchStore(t *testing.T, home string) *filestore.Store {
	t.Helper()
	return openSearchHooked(t, home, nil)
}

// openSearchHooked opens the store at home without fsync, with a test's
// hooks (nil: none).
func openSearchHooked(t *testing.T, home string, h *filestore.Hooks) *filestore.Store {
	t.Helper()
	s, err := filestore.OpenHooked(filestore.Options{Dir: home, Sync: filestore.SyncNever}, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func appendItems(t *testing.T, s recall.Store, key recall.Key, items ...recall.Item) int64 {
	t.Helper()
	last, err := s.Append(context.Background(), key, recall.Guard{}, recall.ItemEntries(items...)...)
	if err != nil {
		t.Fatal(err)
	}
	return last
}

func keysOf(hs []recall.Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprintf("%s@%d.%d/%s", h.Key, h.Ref.Seq, h.Ref.Index, h.Role))
	}
	return out
}

func TestSearchFinds(t *testing.T) {
	ctx := context.Background()
	s := openSearchStore(t, t.TempDir())
	a := recall.Key{Project: "p", Session: "a"}
	b := recall.Key{Project: "q", Session: "b"}
	appendItems(t, s, a, recall.Message("user", "Where did we fix the Tokenizer?"), recall.Message("assistant", "在 tokenizer.go 里"))
	appendItems(t, s, b, recall.Message("user", "我叫张三，住在北京"), recall.Message("assistant", "你好 张三"))
	if _, err := recall.NewSession(s, b).SetTitle(ctx, "张三的会话", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	appendItems(t, s, recall.Key{Project: "p", Session: "n"}, recall.Message("user", "a nul\x00byte inside"))
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"tokenizer", []string{"p/a@2.0/assistant", "p/a@1.0/user"}},
		{"TOKENIZER fix", []string{"p/a@1.0/user"}},
		{`"did we fix"`, []string{"p/a@1.0/user"}},
		{"张三", []string{"q/b@2.0/assistant", "q/b@1.0/user", "q/b@0.0/title"}}, // the title has the time of the last item, and follows it
		{"住在北京", []string{"q/b@1.0/user"}},
		{"三", []string{"q/b@2.0/assistant", "q/b@1.0/user", "q/b@0.0/title"}},
		{"nothing-like-this", nil},
		{"nul\x00byte", []string{"p/n@1.0/user"}},
		{"l\x00b", []string{"p/n@1.0/user"}},
		{"\x00", []string{"p/n@1.0/user"}},
	} {
		hits := checkSearch(t, s, recall.SearchOptions{Query: c.query})
		if got := keysOf(hits); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, want %v", c.query, got, c.want)
		}
	}
	idx, err := filestore.SearchIndexedLogs(s.Home())
	if err != nil || len(idx) != 3 {
		t.Fatalf("index holds %v (%v), want the 3 sessions", idx, err)
	}
}

// randomText returns a text of a few words, English and Chinese.
func randomText(rng *rand.Rand) string {
	words := []string{"tokenizer", "fix", "the", "bug", "parser", "Go", "go", "test", "A", "ab", "张三", "北京", "我叫", "住在", "会话", "zebra", "rare-word", "naïve", "ÉCOLE", "école"}
	n := 1 + rng.IntN(8)
	var parts []string
	for range n {
		w := words[rng.IntN(len(words))]
		if rng.IntN(3) == 0 {
			w += words[rng.IntN(len(words))]
		}
		parts = append(parts, w)
	}
	sep := " "
	if rng.IntN(4) == 0 {
		sep = "\n  "
	}
	return strings.Join(parts, sep)
}

var searchQueries = []string{"tokenizer", "fix the", `"fix the"`, "张三", "三", "北京 张三", "go", "a", "ab", "rare-word", "école", "ÉCOLE naïve", "zebra tokenizer", `"tokenizer fix"`, "e"}

// randomOps applies n random operations (appends of items, tool calls and
// outputs, pops, removes, clears, compactions, titles, archive, remove,
// fork, purge) to the sessions of s.
func randomOps(t *testing.T, s *filestore.Store, rng *rand.Rand, n int) {
	t.Helper()
	ctx := context.Background()
	keys := []recall.Key{{Project: "p", Session: "a"}, {Project: "p", Session: "b"}, {Project: "q", Session: "c"}, {Project: "q", Session: "d"}, {Project: "r", Session: "e"}}
	for range n {
		k := keys[rng.IntN(len(keys))]
		var err error
		switch op := rng.IntN(20); {
		case op < 8:
			var items []recall.Item
			for range 1 + rng.IntN(3) {
				switch rng.IntN(5) {
				case 0:
					items = append(items, recall.Item(fmt.Sprintf(`{"type":"function_call","name":"grep","call_id":"c1","arguments":%q}`, randomText(rng))))
				case 1:
					items = append(items, recall.Item(fmt.Sprintf(`{"type":"function_call_output","call_id":"c1","output":%q}`, randomText(rng))))
				default:
					items = append(items, recall.Message([]string{"user", "assistant", "developer"}[rng.IntN(3)], randomText(rng)))
				}
			}
			_, err = s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(items...)...)
		case op == 8:
			_, err = s.Pop(ctx, k)
		case op == 9:
			var live []recall.LiveItem
			if live, _, err = s.Items(ctx, k, 0); err == nil && len(live) > 0 {
				_, err = recall.NewSession(s, k).RemoveItem(ctx, live[rng.IntN(len(live))].Ref)
			}
		case op == 10:
			err = recall.NewSession(s, k).Clear(ctx)
		case op == 11:
			var last int64
			if _, last, err = s.Items(ctx, k, 0); err == nil && last > 0 {
				_, err = s.Append(ctx, k, recall.Guard{}, recall.NewEntry(recall.KindCompaction, recall.Compaction{
					Through: last, Items: []recall.Item{recall.Message("assistant", "summary: "+randomText(rng)), recall.Message("user", randomText(rng))}}))
			}
		case op == 12:
			_, err = recall.NewSession(s, k).SetTitle(ctx, randomText(rng), recall.TitleUser)
		case op == 13:
			_, err = recall.NewSession(s, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(rng.IntN(2) == 0)})
		case op == 14:
			err = s.Remove(ctx, k)
		case op == 15:
			to := keys[rng.IntN(len(keys))]
			if to != k {
				if err = s.Remove(ctx, to); err == nil || strings.Contains(err.Error(), "not found") {
					_, err = recall.NewSession(s, k).Fork(ctx, 0, to)
				}
			}
		case op == 16:
			_, err = s.Purge(ctx, k)
		default:
			_, err = s.Append(ctx, k, recall.Guard{}, recall.Message("user", randomText(rng)).Entry())
		}
		if err != nil && !strings.Contains(err.Error(), "not found") && !strings.Contains(err.Error(), "no compaction") {
			t.Fatalf("op: %v", err)
		}
	}
}

// TestSearchAgreesWithScan runs random histories and, after each step,
// compares Search with the scan for many queries and options: the index
// is caught up incrementally between steps.
func TestSearchAgreesWithScan(t *testing.T) {
	// -short: one seed without and one with small windows
	for seed := range uint64(testkit.Size(2, 4)) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			s := openSearchStore(t, t.TempDir())
			if seed%2 == 1 {
				// Windows and candidates of a few items, as a large
				// store's are of thousands: every path of findItems.
				filestore.SetSearchWindow(s, 2+int(seed))
			}
			since := time.Now().Add(-time.Hour)
			for range testkit.Size(4, 6) {
				randomOps(t, s, rng, 15)
				for _, q := range searchQueries {
					opts := recall.SearchOptions{Query: q, Limit: 1 + rng.IntN(4)}
					switch rng.IntN(6) {
					case 0:
						opts.WholeLog = true
					case 1:
						opts.IncludeArchived = true
						opts.Role = []string{"user", "assistant", "system", "tool", "title"}[rng.IntN(5)]
					case 2:
						opts.Project = []string{"p", "q", "r"}[rng.IntN(3)]
					case 3:
						opts.Since = since
						opts.Until = time.Now().Add(-time.Duration(rng.IntN(50)) * time.Millisecond)
					}
					checkSearch(t, s, opts)
				}
			}
		})
	}
}

// TestSearchCatchesUp: sessions written, changed and removed through
// another Store value (as another process would) are found, changed and
// gone at the next search of the first.
func TestSearchCatchesUp(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s, other := openSearchStore(t, home), openSearchStore(t, home)
	a, b := recall.Key{Project: "p", Session: "a"}, recall.Key{Project: "p", Session: "b"}
	appendItems(t, other, a, recall.Message("user", "first apple"))
	find := func(q string, opts ...func(*recall.SearchOptions)) []string {
		t.Helper()
		o := recall.SearchOptions{Query: q}
		for _, f := range opts {
			f(&o)
		}
		return keysOf(checkSearch(t, s, o))
	}
	expect := func(got []string, want ...string) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
	expect(find("apple"), "p/a@1.0/user")
	appendItems(t, other, a, recall.Message("assistant", "second apple"))
	appendItems(t, other, b, recall.Message("user", "apple in b"))
	expect(find("apple"), "p/b@1.0/user", "p/a@2.0/assistant", "p/a@1.0/user")

	// pop, remove, clear change the live view; the whole log keeps all
	if _, err := other.Pop(ctx, a); err != nil {
		t.Fatal(err)
	}
	expect(find("apple"), "p/b@1.0/user", "p/a@1.0/user")
	expect(find("apple", func(o *recall.SearchOptions) { o.WholeLog = true }), "p/b@1.0/user", "p/a@2.0/assistant", "p/a@1.0/user")
	if _, err := recall.NewSession(other, a).RemoveItem(ctx, recall.ItemRef{Seq: 1}); err != nil {
		t.Fatal(err)
	}
	expect(find("apple"), "p/b@1.0/user")
	appendItems(t, other, a, recall.Message("user", "third apple"))
	if err := recall.NewSession(other, a).Clear(ctx); err != nil {
		t.Fatal(err)
	}
	expect(find("apple"), "p/b@1.0/user")

	// a compaction replaces the view
	appendItems(t, other, a, recall.Message("user", "fourth apple"))
	if _, err := other.Append(ctx, a, recall.Guard{}, recall.NewEntry(recall.KindCompaction, recall.Compaction{
		Through: 7, Items: []recall.Item{recall.Message("assistant", "summary of apples")}})); err != nil {
		t.Fatal(err)
	}
	expect(find("apple"), "p/a@8.0/assistant", "p/b@1.0/user")

	// a title, then archived: left out unless asked for
	if _, err := recall.NewSession(other, b).SetTitle(ctx, "Apple talk", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	expect(find("apple talk"), "p/b@0.0/title")
	if _, err := recall.NewSession(other, b).SetTitle(ctx, "Pear talk", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	expect(find("apple talk"))
	if _, err := recall.NewSession(other, b).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}); err != nil {
		t.Fatal(err)
	}
	expect(find("apple"), "p/a@8.0/assistant")
	expect(find("apple", func(o *recall.SearchOptions) { o.IncludeArchived = true }), "p/a@8.0/assistant", "p/b@1.0/user")

	// purge drops what came before the compaction from the whole log
	if _, err := other.Purge(ctx, a); err != nil {
		t.Fatal(err)
	}
	expect(find("apple", func(o *recall.SearchOptions) { o.WholeLog = true }), "p/a@8.0/assistant")

	// a fork is a session of its own
	f := recall.Key{Project: "p", Session: "f"}
	if _, err := recall.NewSession(other, a).Fork(ctx, 0, f); err != nil {
		t.Fatal(err)
	}
	got := find("summary of apples")
	if len(got) != 2 {
		t.Fatalf("after fork: %v", got)
	}

	// removed sessions are gone, also from the index
	if err := other.Remove(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := other.Remove(ctx, f); err != nil {
		t.Fatal(err)
	}
	expect(find("apple", func(o *recall.SearchOptions) { o.WholeLog = true }))
	idx, err := filestore.SearchIndexedLogs(home)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := idx["p/a"]; ok || len(idx) != 1 {
		t.Fatalf("index holds %v, want p/b only", idx)
	}

	// removed and created again under the same name: the new log only
	appendItems(t, other, a, recall.Message("user", "a new apple"))
	expect(find("apple", func(o *recall.SearchOptions) { o.WholeLog = true }), "p/a@1.0/user")
}

// TestSearchRebuildsIndex: a missing, truncated or overwritten index is
// built again from the logs, and the search answers without an error,
// whether the store had the index open or not.
func TestSearchRebuildsIndex(t *testing.T) {
	damage := map[string]func(path string) error{
		"removed": os.Remove,
		"emptied": func(p string) error { return os.Truncate(p, 0) },
		"truncated": func(p string) error {
			st, err := os.Stat(p)
			if err != nil {
				return err
			}
			return os.Truncate(p, st.Size()/2)
		},
		"garbage header": func(p string) error { return overwrite(p, 0, 4096) },
		"garbage pages":  func(p string) error { return overwrite(p, 4096, 1<<20) },
		"not sqlite":     func(p string) error { return os.WriteFile(p, []byte("hello, I am not a database\n"), 0o600) },
		"older version": func(p string) error {
			return filestore.SearchIndexExec(filepath.Dir(p), "PRAGMA user_version = 1")
		},
		"other schema": func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			os.Remove(p + "-wal")
			os.Remove(p + "-shm")
			return os.WriteFile(p, nil, 0o600)
		},
	}
	for name, hurt := range damage {
		for _, reopen := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reopen=%v", name, reopen), func(t *testing.T) {
				home := t.TempDir()
				s := openSearchStore(t, home)
				sessions := testkit.Size(15, 40)
				for i := range sessions {
					k := recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", i)}
					appendItems(t, s, k, recall.Message("user", fmt.Sprintf("needle %d in a haystack of hay %s", i, strings.Repeat("hay ", 50))))
				}
				want := checkSearch(t, s, recall.SearchOptions{Query: "needle", Limit: 7})
				if len(want) != sessions {
					t.Fatalf("%d hits, want %d", len(want), sessions)
				}
				if reopen {
					s.Close()
				}
				path := filestore.SearchIndexPath(home)
				if err := filestore.CheckpointSearchIndex(home); err != nil { // the pages in the file itself
					t.Fatal(err)
				}
				if err := hurt(path); err != nil {
					t.Fatal(err)
				}
				if reopen {
					s = openSearchStore(t, home)
				}
				got := checkSearch(t, s, recall.SearchOptions{Query: "needle", Limit: 7})
				if d := sameHits(got, want); d != "" {
					t.Fatal(d)
				}
				idx, err := filestore.SearchIndexedLogs(home)
				if err != nil || len(idx) != sessions {
					t.Fatalf("index not rebuilt: %d sessions, %v", len(idx), err)
				}
			})
		}
	}
}

// TestSearchIndexMapped: the index's connection maps its file (see
// searchMmapSize), and an index of some 10 MB (1 MB under -short), every
// page of it mapped and read, then cut short under the open connection, is
// found damaged and built again: the hits still agree with the scan, and
// the process does not fault.
func TestSearchIndexMapped(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s := openSearchStore(t, home)
	rng := rand.New(rand.NewPCG(1, 2))
	sessions := testkit.Size(30, 300) // each adds some 30 KB to the index
	for i := range sessions {
		k := recall.Key{Project: "p", Session: fmt.Sprintf("s%03d", i)}
		var items []recall.Item
		for j := range 8 {
			var hay strings.Builder
			for range 200 {
				fmt.Fprintf(&hay, " %x", rng.Uint32())
			}
			items = append(items, recall.Message("user", fmt.Sprintf("needle %d.%d hay%d%s", i, j, i, hay.String())))
		}
		appendItems(t, s, k, items...)
	}
	queries := []string{fmt.Sprintf("hay%d", sessions-1), fmt.Sprintf("hay%d", sessions/2), "hay7", fmt.Sprintf("needle %d.7", min(42, sessions-1))}
	for _, q := range queries {
		checkSearch(t, s, recall.SearchOptions{Query: q})
	}
	mapped, err := filestore.SearchIndexMmapSize(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if mapped != 2147418112 { // as SQLite caps it (SQLITE_MAX_MMAP_SIZE)
		t.Fatalf("the index's connection maps %d bytes", mapped)
	}
	if _, err := s.Search(ctx, recall.SearchOptions{Query: "hay"}); err != nil { // reads every row
		t.Fatal(err)
	}

	path := filestore.SearchIndexPath(home)
	if err := filestore.CheckpointSearchIndex(home); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() < int64(sessions)*(8<<20)/300 {
		t.Fatalf("the index is %d bytes, too small to show anything", st.Size())
	}
	if err := os.Truncate(path, st.Size()/3); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		checkSearch(t, s, recall.SearchOptions{Query: q})
	}
	if idx, err := filestore.SearchIndexedLogs(home); err != nil || len(idx) != sessions {
		t.Fatalf("index not rebuilt: %d sessions, %v", len(idx), err)
	}
}

// overwrite writes random bytes over [off, off+n) of the file at path,
// within its size.
func overwrite(path string, off, n int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	n = min(n, st.Size()-off)
	if n <= 0 {
		return fmt.Errorf("%s: %d bytes, nothing at %d", path, st.Size(), off)
	}
	buf := make([]byte, n)
	rng := rand.New(rand.NewPCG(uint64(off), uint64(n)))
	for i := range buf {
		buf[i] = byte(rng.Uint32())
	}
	_, err = f.WriteAt(buf, off)
	return err
}

// TestSearchItemShapes: what a person reads is searched (tool names and
// arguments, outputs, reasoning summaries), what they do not is not
// (encrypted reasoning, images).
func TestSearchItemShapes(t *testing.T) {
	s := openSearchStore(t, t.TempDir())
	k := recall.Key{Project: "p", Session: "shapes"}
	items := []recall.Item{
		recall.Item(`{"type":"function_call","name":"search_repo","call_id":"c","arguments":"{\"q\":\"kumquat\"}"}`),
		recall.Item(`{"type":"function_call_output","call_id":"c","output":"found kumquat.go"}`),
		recall.Item(`{"type":"reasoning","summary":[{"type":"summary_text","text":"think about kumquat"}],"encrypted_content":"kumquatSECRET"}`),
		recall.Item(`{"type":"message","role":"user","content":[{"type":"input_image","image_url":"data:kumquatIMG"}]}`),
		recall.Item("{\n  \"type\": \"message\", \"role\": \"user\",\n  \"content\": \"pretty kumquat\"\n}"),
	}
	appendItems(t, s, k, items...)
	got := keysOf(checkSearch(t, s, recall.SearchOptions{Query: "kumquat"}))
	want := []string{"p/shapes@5.0/user", "p/shapes@3.0/assistant", "p/shapes@2.0/tool", "p/shapes@1.0/tool"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, q := range []string{"kumquatsecret", "kumquatimg"} {
		if hits := checkSearch(t, s, recall.SearchOptions{Query: q}); len(hits) != 0 {
			t.Errorf("%q found %v", q, keysOf(hits))
		}
	}
	var raw map[string]any
	if json.Unmarshal(items[0], &raw) != nil {
		t.Fatal("bad fixture")
	}
}

// TestSearchIndexDisagrees: an index whose rows are valid to SQLite but
// point at the wrong place of a log (or a log rewritten under it) is
// caught when the hits are read back from the logs, and built again.
func TestSearchIndexDisagrees(t *testing.T) {
	for _, stmt := range []string{
		"UPDATE items SET pos = pos + 1",
		"UPDATE items SET seq = seq + 1000",
		"UPDATE items SET idx = 3",
	} {
		t.Run(stmt, func(t *testing.T) {
			home := t.TempDir()
			s := openSearchStore(t, home)
			for i := range 5 {
				appendItems(t, s, recall.Key{Project: "p", Session: fmt.Sprintf("s%d", i)}, recall.Message("user", fmt.Sprintf("needle %d", i)))
			}
			want := checkSearch(t, s, recall.SearchOptions{Query: "needle"})
			if err := filestore.SearchIndexExec(home, stmt); err != nil {
				t.Fatal(err)
			}
			if got := checkSearch(t, s, recall.SearchOptions{Query: "needle"}); sameHits(got, want) != "" {
				t.Fatal(sameHits(got, want))
			}
			if _, err := filestore.SearchIndexOnly(context.Background(), s, recall.SearchOptions{Query: "needle"}); err != nil {
				t.Fatalf("the index was not built again: %v", err)
			}
		})
	}
}

// TestSearchTitlesOfOneProject searches the titles of one project's many
// sessions, which a search walks newest first and stops once a page is
// found: common and rare words, every page, as sessions change, are
// renamed, archived and removed in between, here and through another
// Store value (another process), whose changes this one reads.
func TestSearchTitlesOfOneProject(t *testing.T) {
	ctx := context.Background()
	// The directory's names are vouched for at once: the journal is
	// believed, and a search that finds no record changed since the last
	// one (projectIndex.generation) looks no further.
	h := &filestore.Hooks{Settled: true}
	home := t.TempDir()
	s, other := openSearchHooked(t, home, h), openSearchHooked(t, home, h)
	rng := testkit.Rand(t)
	words := []string{"plan", "plan", "plan", "budget", "zebra"}
	for step := range 8 {
		for range 25 {
			w := s
			if rng.IntN(3) == 0 {
				w = other
			}
			k := recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", rng.IntN(60))}
			var err error
			switch rng.IntN(5) {
			case 0, 1:
				_, err = w.Append(ctx, k, recall.Guard{}, recall.Message("user", "notes on the "+words[rng.IntN(len(words))]).Entry())
			case 2:
				_, err = recall.NewSession(w, k).SetTitle(ctx, fmt.Sprintf("the %s of %d", words[rng.IntN(len(words))], step), recall.TitleUser)
			case 3:
				_, err = recall.NewSession(w, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(rng.IntN(2) == 0)})
			case 4:
				if rng.IntN(3) == 0 {
					err = w.Remove(ctx, k)
				}
			}
			if err != nil && !errors.Is(err, recall.ErrNotFound) {
				t.Fatal(err)
			}
		}
		for _, q := range []string{"plan", "budget", "zebra", "the"} {
			checkSearch(t, s, recall.SearchOptions{Query: q, Project: "p", Role: recall.RoleTitle, Limit: 1 + rng.IntN(5)})
			checkSearch(t, s, recall.SearchOptions{Query: q, Project: "p", Limit: 1 + rng.IntN(5), IncludeArchived: rng.IntN(2) == 0})
		}
	}
}

// TestSearchIndexVersion2Migrated opens an index of version 2, which has
// no head column: it is brought to version 3 in place, its rows kept
// (not rebuilt: a large index takes minutes to build), and searches on
// it, and on the logs that grow after, find what the scan finds.
func TestSearchIndexVersion2Migrated(t *testing.T) {
	home := t.TempDir()
	s := openSearchStore(t, home)
	for i := range 5 {
		appendItems(t, s, recall.Key{Project: "p", Session: fmt.Sprintf("s%d", i)}, recall.Message("user", fmt.Sprintf("needle %d", i)))
	}
	checkSearch(t, s, recall.SearchOptions{Query: "needle"})
	s.Close()
	// marker is not recall's: a rebuild, which removes the file, drops it
	for _, stmt := range []string{"ALTER TABLE logs DROP COLUMN head", "CREATE TABLE marker(x)", "PRAGMA user_version = 2"} {
		if err := filestore.SearchIndexExec(home, stmt); err != nil {
			t.Fatal(err)
		}
	}
	before, err := filestore.SearchIndexedLogs(home)
	if err != nil {
		t.Fatal(err)
	}
	s = openSearchStore(t, home)
	checkSearch(t, s, recall.SearchOptions{Query: "needle"})
	after, err := filestore.SearchIndexedLogs(home)
	if err != nil || !reflect.DeepEqual(after, before) {
		t.Fatalf("rows after the migration %v, %v; want those before, %v", after, err, before)
	}
	appendItems(t, s, recall.Key{Project: "p", Session: "s1"}, recall.Message("user", "another needle"))
	checkSearch(t, s, recall.SearchOptions{Query: "needle"})
	if err := filestore.SearchIndexExec(home, "SELECT head FROM logs"); err != nil {
		t.Errorf("no head column after the migration: %v", err)
	}
	if err := filestore.SearchIndexExec(home, "SELECT x FROM marker"); err != nil {
		t.Errorf("the index was built anew, not migrated: %v", err)
	}
}
