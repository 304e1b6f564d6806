package filestore_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// fill appends n sessions of a few entries each to project in s, and the
// same to a memstore, whose List is the reference.
func fill(t *testing.T, s recall.Store, project string, n int) *memstore.Store {
	t.Helper()
	ctx := context.Background()
	ref := memstore.New(memstore.Options{})
	for i := range n {
		k := recall.Key{Project: project, Session: fmt.Sprintf("s%03d", i)}
		es := []recall.Entry{
			recall.Message("user", fmt.Sprintf("q%d", i)).Entry(),
			recall.Message("assistant", fmt.Sprintf("a%d", i)).Entry(),
		}
		for j := range es {
			es[j].Time = time.Date(2025, 1, 1, 0, i, j, 0, time.UTC)
		}
		if i%3 == 0 {
			es = append(es, recall.NewEntry(recall.KindTitle, recall.TitleChange{Title: fmt.Sprintf("t%d", i), Source: recall.TitleUser}))
			es[2].Time = es[1].Time
		}
		for _, st := range []recall.Store{s, ref} {
			if _, err := st.Import(ctx, k, numbered(es)...); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ref
}

func numbered(es []recall.Entry) []recall.Entry {
	out := slices.Clone(es)
	for i := range out {
		out[i].Seq = int64(i + 1)
	}
	return out
}

// wantSameList compares the full listing of project in s with ref's.
func wantSameList(t *testing.T, what string, s, ref recall.Store, project string) {
	t.Helper()
	ctx := context.Background()
	got, err := s.List(ctx, project, recall.ListOptions{Limit: -1, IncludeArchived: true})
	if err != nil {
		t.Fatalf("%s: List: %v", what, err)
	}
	want, err := ref.List(ctx, project, recall.ListOptions{Limit: -1, IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Sessions) != len(want.Sessions) {
		t.Fatalf("%s: List has %d sessions, want %d", what, len(got.Sessions), len(want.Sessions))
	}
	for i := range got.Sessions {
		g, w := got.Sessions[i], want.Sessions[i]
		if g.Key != w.Key || g.ItemCount != w.ItemCount || g.LastSeq != w.LastSeq || g.Title != w.Title || !g.Updated.Equal(w.Updated) || !g.Created.Equal(w.Created) {
			t.Fatalf("%s: List[%d] = %+v\nwant %+v", what, i, g, w)
		}
	}
}

func indexPath(t *testing.T, home, project string) string {
	return filepath.Join(home, "projects", project, "#index-v5")
}

// TestIndexRebuilt damages the index every way a crash or a user can and
// checks that a new store lists exactly what the logs hold.
func TestIndexRebuilt(t *testing.T) {
	home := t.TempDir()
	s := openStore(t, home)
	ref := fill(t, s, "p", 40)
	wantSameList(t, "fresh", s, ref, "p")
	s.Close() // writes the index records held back
	idx := indexPath(t, home, "p")
	good, err := os.ReadFile(idx)
	if err != nil {
		t.Fatal(err)
	}
	damage := map[string][]byte{
		"missing":   nil,
		"empty":     {},
		"garbage":   []byte("this is no index\n\x00\x01\x02\n{}\n"),
		"torn":      good[:len(good)/2],
		"truncated": good[:len(good)/3*2-7],
		"half-lost": good[len(good)/2:],
		// bits flipped inside records whose logs did not change
		"flipped": bytes.ReplaceAll(good, []byte(`"item_count":2`), []byte(`"item_count":7`)),
	}
	if bytes.Equal(damage["flipped"], good) {
		t.Fatal("the flip changed nothing")
	}
	for name, data := range damage {
		if data == nil {
			os.Remove(idx)
		} else if err := os.WriteFile(idx, data, 0o600); err != nil {
			t.Fatal(err)
		}
		wantSameList(t, "index "+name, openStore(t, home), ref, "p")
		// and the rebuilt index serves the next store
		wantSameList(t, "index "+name+", rebuilt", openStore(t, home), ref, "p")
	}
}

// TestIndexNeverHides writes index lines that claim sessions are gone or
// different while their logs say otherwise: the logs win.
func TestIndexNeverHides(t *testing.T) {
	home := t.TempDir()
	s := openStore(t, home)
	ref := fill(t, s, "p", 10)
	s.Close()
	idx := indexPath(t, home, "p")
	f, err := os.OpenFile(idx, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	// tombstones for live sessions, and a record with a stat that no log has
	for _, l := range []string{"s001 -", "s002 -", `s003 1 2 3 4 5 - 0 0 {"key":{"project":"p","session":"s003"},"item_count":99}`} {
		fmt.Fprintf(f, "%08x %s\n", crc32.ChecksumIEEE([]byte(l)), l)
	}
	// and a line whose crc does not match, claiming a lot
	fmt.Fprintf(f, "00000000 s004 1 2 3 4 5 - 0 0 {\"item_count\":99}\n")
	f.Close()
	wantSameList(t, "lying index", openStore(t, home), ref, "p")
}

// TestIndexSeesOtherWriters: a store that has listed a project sees what
// another store (another process) did afterwards: appends, new sessions,
// removals, a log copied in by hand and a line appended by hand.
func TestIndexSeesOtherWriters(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	a := openStore(t, home)
	ref := fill(t, a, "p", 20)
	wantSameList(t, "start", a, ref, "p")

	b := openStore(t, home)
	at := func(it recall.Item, min int) recall.Entry {
		e := it.Entry()
		e.Time = time.Date(2025, 2, 1, 0, min, 0, 0, time.UTC)
		return e
	}
	for _, st := range []recall.Store{b, ref} {
		if _, err := st.Append(ctx, recall.Key{Project: "p", Session: "s005"}, recall.Guard{}, at(recall.Message("user", "more"), 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Append(ctx, recall.Key{Project: "p", Session: "new"}, recall.Guard{}, at(recall.Message("user", "new"), 2)); err != nil {
			t.Fatal(err)
		}
		if err := st.Remove(ctx, recall.Key{Project: "p", Session: "s007"}); err != nil {
			t.Fatal(err)
		}
	}
	wantSameList(t, "after another store wrote", a, ref, "p")

	// A log copied in by hand, under a new name.
	src := logPath(t, a, recall.Key{Project: "p", Session: "s003"})
	data, _ := os.ReadFile(src)
	if err := os.WriteFile(filepath.Join(filepath.Dir(src), "copied.jsonl"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, es, err := a.Load(ctx, recall.Key{Project: "p", Session: "s003"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Import(ctx, recall.Key{Project: "p", Session: "copied"}, es...); err != nil {
		t.Fatal(err)
	}
	// A line appended by hand to an existing log.
	line := fmt.Sprintf(`{"seq":3,"kind":"item","time":"2025-03-01T00:00:00Z","data":{"type":"message","role":"user","content":"by hand"}}` + "\n")
	hand := logPath(t, a, recall.Key{Project: "p", Session: "s004"})
	f, err := os.OpenFile(hand, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(line)
	f.Close()
	if _, err := ref.Import(ctx, recall.Key{Project: "p", Session: "s004"}, recall.Entry{Seq: 3, Kind: recall.KindItem, Time: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), Data: []byte(`{"type":"message","role":"user","content":"by hand"}`)}); err != nil {
		t.Fatal(err)
	}
	wantSameList(t, "after hand edits", a, ref, "p")
	if m, err := a.Stat(ctx, recall.Key{Project: "p", Session: "s004"}); err != nil || m.ItemCount != 3 {
		t.Errorf("Stat after a hand-appended line = %d items, %v; want 3", m.ItemCount, err)
	}
}

// TestIndexRewrittenInPlace rewrites a log in place (same inode) with
// different, longer content, as an editor may: the index must notice that
// the bytes it had read changed, and not just read the new tail.
func TestIndexRewrittenInPlace(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	key := recall.Key{Project: "p", Session: "edited"}
	if err := recall.NewSession(s, key).AddItems(ctx, recall.Message("user", "one"), recall.Message("user", "two")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(ctx, "p", recall.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	other := openStore(t, t.TempDir())
	if _, err := recall.NewSession(other, key).SetTitle(ctx, "x", recall.TitleUser); err == nil {
		t.Fatal("SetTitle of a missing session succeeded")
	}
	var items []recall.Item
	for i := range 8 {
		items = append(items, recall.Message("user", fmt.Sprintf("different item %d", i)))
	}
	if err := recall.NewSession(other, key).AddItems(ctx, items...); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(other, key).SetTitle(ctx, "edited title", recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	newData, _ := os.ReadFile(logPath(t, other, key))
	f, err := os.OpenFile(logPath(t, s, key), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(newData)
	f.Close()
	for _, st := range []recall.Store{s, openStore(t, home)} {
		page, err := st.List(ctx, "p", recall.ListOptions{})
		if err != nil || len(page.Sessions) != 1 {
			t.Fatalf("List = %+v, %v", page, err)
		}
		if m := page.Sessions[0]; m.ItemCount != 8 || m.Title != "edited title" || m.LastSeq != 9 || m.Corrupt != 0 {
			t.Errorf("List after an in-place rewrite: %d items, title %q, last %d, corrupt %d; want 8, \"edited title\", 9, 0", m.ItemCount, m.Title, m.LastSeq, m.Corrupt)
		}
		if err := storekit.VerifySession(ctx, st, key); err != nil {
			t.Error(err)
		}
	}
}

// TestListReadsIndexNotLogs shows that List takes a log's metadata from the
// index while the log's inode, size and mtime match: with the log's bytes
// replaced by garbage of the same size and the mtime put back, a new store
// still lists the session as it was.
func TestListReadsIndexNotLogs(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	ref := fill(t, s, "p", 5)
	wantSameList(t, "start", s, ref, "p")
	s.Close()
	s = openStore(t, home)
	path := logPath(t, s, recall.Key{Project: "p", Session: "s002"})
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt(bytes.Repeat([]byte("?"), int(fi.Size())), 0)
	f.Close()
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	wantSameList(t, "log bytes replaced behind the index", openStore(t, home), ref, "p")
	// Load reads the log itself, and sees the damage.
	if m, _, err := s.Load(ctx, recall.Key{Project: "p", Session: "s002"}); err == nil && m.Corrupt == 0 {
		t.Errorf("Load of a garbage log: %+v", m)
	}
}

// TestIndexStaysCompact: a store that keeps re-deriving records (another
// store writes all the time) appends them to the journal, and rewrites the
// journal compactly once it is mostly obsolete.
func TestIndexStaysCompact(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	writer, err := openSyncNever(home)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	lister := openStore(t, home)
	const sessions, rounds = 50, 30
	maxLines := 0
	for round := range rounds {
		for i := range sessions {
			k := recall.Key{Project: "p", Session: fmt.Sprintf("s%d", i)}
			if _, err := writer.Append(ctx, k, recall.Guard{}, recall.Message("user", "x").Entry()); err != nil {
				t.Fatal(err)
			}
		}
		page, err := lister.List(ctx, "p", recall.ListOptions{Limit: -1})
		if err != nil || len(page.Sessions) != sessions || page.Sessions[0].ItemCount != round+1 {
			t.Fatalf("round %d: List = %d sessions, %v", round, len(page.Sessions), err)
		}
		data, err := os.ReadFile(indexPath(t, home, "p"))
		if err != nil {
			t.Fatal(err)
		}
		lines := 0
		for l := range bytes.Lines(data) {
			if len(bytes.TrimSpace(l)) > 0 {
				lines++
			}
		}
		maxLines = max(maxLines, lines)
	}
	// Without compaction the journal would hold sessions*rounds lines.
	if limit := 2*sessions + 256 + sessions; maxLines > limit {
		t.Errorf("the journal reached %d lines; compaction keeps it under %d", maxLines, limit)
	}
}

// TestIndexSeesSameTickChange: a log copied in by hand in the same tick of
// the file system's clock as the directory's last change leaves the
// directory's mtime as it was. The journal must not have vouched for the
// names read in that tick, so the copy is listed.
func TestIndexSeesSameTickChange(t *testing.T) {
	ctx := context.Background()
	for attempt := 0; ; attempt++ {
		home := t.TempDir()
		s := openStore(t, home)
		ref := fill(t, s, "p", 3)
		dir := filepath.Dir(logPath(t, s, recall.Key{Project: "p", Session: "s001"}))
		// The directory's last change, now; the List checks the names
		// and writes the journal back.
		began := time.Now()
		if err := os.Chtimes(dir, began, began); err != nil {
			t.Fatal(err)
		}
		wantSameList(t, "before", s, ref, "p")
		tick, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		// A copy by hand, in the same tick: the mtime does not move.
		data, err := os.ReadFile(logPath(t, s, recall.Key{Project: "p", Session: "s001"}))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "copied.jsonl"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, tick.ModTime(), tick.ModTime()); err != nil {
			t.Fatal(err)
		}
		if time.Since(began) >= 2*time.Second && attempt < 5 {
			continue // the clock moved on: no longer the same tick (a loaded machine)
		}
		_, es, err := s.Load(ctx, recall.Key{Project: "p", Session: "s001"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ref.Import(ctx, recall.Key{Project: "p", Session: "copied"}, es...); err != nil {
			t.Fatal(err)
		}
		wantSameList(t, "after a copy in the same tick", s, ref, "p")
		return
	}
}
