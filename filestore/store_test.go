package filestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/storekit"
)

// snapshot returns every path under dir with its size, to prove that a
// call created or changed nothing.
func snapshot(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			out[p] = fi.Size()
		}
		return nil
	})
	return out
}

func equalSnapshots(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestHostileKeys sends keys that try to leave the store's root through
// every call that takes one: each must fail with ErrInvalidKey and touch
// nothing, inside the home or beside it.
func TestHostileKeys(t *testing.T) {
	ctx := context.Background()
	outer := t.TempDir()
	home := filepath.Join(outer, "home")
	s := openStore(t, home)
	good := recall.Key{Project: "p", Session: "good"}
	if _, err := s.Append(ctx, good, recall.Guard{}, recall.Message("user", "hi").Entry()); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", recall.MaxIDLen+1)
	bad := []recall.Key{
		{Project: "p", Session: ""},
		{Project: "", Session: "s"},
		{Project: "p", Session: ".."},
		{Project: "p", Session: "."},
		{Project: "..", Session: "s"},
		{Project: "p", Session: "../escape"},
		{Project: "../../escape", Session: "s"},
		{Project: "p", Session: "/etc/passwd"},
		{Project: "/tmp", Session: "s"},
		{Project: "p", Session: "a/b"},
		{Project: "p", Session: "nul\x00byte"},
		{Project: "p\x00", Session: "s"},
		{Project: "p", Session: long},
		{Project: strings.Repeat("p", 256), Session: "s"},
		{Project: "p", Session: "s", Subpath: "../../escape"},
		{Project: "p", Session: "s", Subpath: "/abs"},
		{Project: "p", Session: "s", Subpath: "a//b"},
		{Project: "p", Session: "s", Subpath: "a/../b"},
		{Project: "p", Session: "s", Subpath: "sub/" + long},
		{Project: "p", Session: "s", Subpath: "x\x00"},
		{Project: "p", Session: "back\\slash"},
		{Project: "p", Session: "space d"},
	}
	// The creation had the store check the directory in the background,
	// which writes to the index; Close waits for it.
	s.Close()
	s = openStore(t, home)
	// The List calls of the project "p" below are good calls, and the
	// first List of a project writes its index: do that first.
	if _, err := s.List(ctx, "p", recall.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, outer)
	item := recall.Message("user", "x").Entry()
	for _, k := range bad {
		calls := map[string]error{}
		_, calls["Append"] = s.Append(ctx, k, recall.Guard{}, item)
		_, calls["Import"] = s.Import(ctx, k, recall.Entry{Seq: 1, Kind: recall.KindClear, Time: storekit.Now()})
		_, _, calls["Items"] = s.Items(ctx, k, 0)
		_, calls["Pop"] = s.Pop(ctx, k)
		_, calls["Stat"] = s.Stat(ctx, k)
		_, _, calls["Load"] = s.Load(ctx, k)
		_, calls["Entries"] = s.Entries(ctx, k, 0, 0)
		calls["Remove"] = s.Remove(ctx, k)
		_, calls["Fork from"] = recall.NewSession(s, k).Fork(ctx, 0, recall.Key{Project: "p", Session: "target"})
		_, calls["Fork onto"] = recall.NewSession(s, good).Fork(ctx, 0, k)
		if k.Subpath == "" {
			_, calls["List"] = s.List(ctx, k.Project, recall.ListOptions{})
			_, calls["List parent"] = s.List(ctx, "p", recall.ListOptions{Parent: k.Session})
			_, calls["ProjectDir"] = s.ProjectDir(k.Project)
			// the zero cutoff removes nothing, even when Project is "" (all)
			_, calls["Cleanup"] = recall.Cleanup(ctx, s, recall.CleanupOptions{Project: k.Project})
		}
		for name, err := range calls {
			// List, ProjectDir and Cleanup only see the project, where ""
			// means every project; the parent "" means main sessions.
			projectOK := (recall.Key{Project: k.Project, Session: "x"}).Validate() == nil
			if err == nil && (name == "List" || name == "Cleanup") && (k.Project == "" || projectOK) {
				continue
			}
			if err == nil && name == "ProjectDir" && projectOK {
				continue
			}
			if err == nil && name == "List parent" && (k.Session == "" || recall.ValidateID(k.Session) == nil) {
				continue
			}
			if !errors.Is(err, recall.ErrInvalidKey) {
				t.Errorf("%s(%q) = %v, want ErrInvalidKey", name, k, err)
			}
		}
	}
	if after := snapshot(t, outer); !equalSnapshots(before, after) {
		t.Errorf("calls with bad keys changed the file system:\nbefore %v\nafter  %v", before, after)
	}
}

// TestOpen covers the home: the default from $RECALL_HOME, creation, and
// a clear error naming a home that cannot be created.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RECALL_HOME", filepath.Join(dir, "env-home"))
	if h, err := filestore.DefaultHome(); err != nil || h != filepath.Join(dir, "env-home") {
		t.Errorf("DefaultHome = %q, %v", h, err)
	}
	s, err := filestore.Open(filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Home() != filepath.Join(dir, "env-home") {
		t.Errorf("Home = %q", s.Home())
	}
	if fi, err := os.Stat(filepath.Join(dir, "env-home", "projects")); err != nil || !fi.IsDir() {
		t.Errorf("Open did not create the projects directory: %v", err)
	}
	pd, err := s.ProjectDir("my-project")
	if err != nil || pd != filepath.Join(dir, "env-home", "projects", "my-project") {
		t.Errorf("ProjectDir = %q, %v", pd, err)
	}

	t.Setenv("RECALL_HOME", "")
	if h, err := filestore.DefaultHome(); err != nil || filepath.Base(h) != ".recall" || !filepath.IsAbs(h) {
		t.Errorf("DefaultHome without RECALL_HOME = %q, %v", h, err)
	}

	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, home := range []string{file, filepath.Join(file, "below")} {
		_, err := filestore.Open(filestore.Options{Dir: home})
		if err == nil || !strings.Contains(err.Error(), home) {
			t.Errorf("Open(%q) = %v, want an error naming the path", home, err)
		}
	}
	// A home that exists but cannot be written opens for reading; its
	// writes fail naming the path (readonly_test.go covers it in full).
	if _, err := filestore.Open(filestore.Options{Dir: dir, Sync: 7}); err == nil {
		t.Errorf("Open with an unknown sync policy succeeded")
	}
	if filestore.SyncAlways.String() != "always" || filestore.SyncNever.String() != "never" {
		t.Errorf("SyncPolicy strings: %s %s", filestore.SyncAlways, filestore.SyncNever)
	}
}

// TestLayout checks the files DESIGN.md promises: one log per session,
// subagent records under <id>/, and nothing else but the store's own
// '#' files.
func TestLayout(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	main := recall.Key{Project: "proj", Session: "s1"}
	sub := recall.Key{Project: "proj", Session: "s1", Subpath: "subagents/agent-7"}
	for _, k := range []recall.Key{main, sub} {
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.Message("user", "hi").Entry()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.List(ctx, "proj", recall.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close() // writes the index records held back
	s = openStore(t, home)
	var files []string
	filepath.WalkDir(filepath.Join(home, "projects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(home, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(files)
	want := []string{"projects/proj/#index-v5", "projects/proj/s1.jsonl", "projects/proj/s1/subagents/agent-7.jsonl"}
	if !slices.Equal(files, want) {
		t.Errorf("files %v, want %v", files, want)
	}

	if err := s.Remove(ctx, main); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"projects/proj/s1.jsonl", "projects/proj/s1"} {
		if _, err := os.Stat(filepath.Join(home, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s survives Remove: %v", p, err)
		}
	}
}

// TestNameCollision: session "a" has the file a.jsonl and session
// "a.jsonl" wants the directory a.jsonl/ for its records. The second one
// must fail cleanly with ErrConflict and the first stay intact.
func TestNameCollision(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	a := recall.Key{Project: "p", Session: "a"}
	rec := recall.Key{Project: "p", Session: "a.jsonl", Subpath: "subagents/x"}
	item := recall.Message("user", "hi").Entry()
	if _, err := s.Append(ctx, a, recall.Guard{}, item); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, rec, recall.Guard{}, item); !errors.Is(err, recall.ErrConflict) {
		t.Errorf("Append to %s = %v, want ErrConflict", rec, err)
	}
	if err := storekit.VerifySession(ctx, s, a); err != nil {
		t.Error(err)
	}

	s2 := openStore(t, t.TempDir())
	if _, err := s2.Append(ctx, rec, recall.Guard{}, item); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Append(ctx, a, recall.Guard{}, item); !errors.Is(err, recall.ErrConflict) {
		t.Errorf("Append to %s = %v, want ErrConflict", a, err)
	}
	if _, err := s2.Stat(ctx, a); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("Stat(%s) over a directory = %v, want ErrNotFound", a, err)
	}
	page, err := s2.List(ctx, "p", recall.ListOptions{Parent: "a.jsonl"})
	if err != nil || len(page.Sessions) != 1 || page.Sessions[0].Key != rec {
		t.Errorf("List of a.jsonl's records = %+v, %v", page.Sessions, err)
	}
}

// TestItemsReadsFromTheEnd proves Items(limit) never reads the start of a
// long log: with the first half of the file overwritten by garbage, the
// newest items still come back whole, while Load reports the damage.
func TestItemsReadsFromTheEnd(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	key := recall.Key{Project: "p", Session: "long"}
	var items []recall.Item
	for i := range 2000 {
		items = append(items, recall.Message("user", strings.Repeat("x", 100)+string(rune('a'+i%26))))
	}
	if err := recall.NewSession(s, key).AddItems(ctx, items...); err != nil {
		t.Fatal(err)
	}
	path := logPath(t, s, key)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := f.Stat()
	if _, err := f.WriteAt(bytes.Repeat([]byte{'#'}, int(fi.Size()/2)), 0); err != nil {
		t.Fatal(err)
	}
	f.Close()

	got, err := recall.NewSession(s, key).GetItems(ctx, 20)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, items[len(items)-20:], func(a, b recall.Item) bool { return bytes.Equal(a, b) }) {
		t.Errorf("GetItems(20) over a log damaged at its start differs from the newest 20 items")
	}
	m, _, err := s.Load(ctx, key)
	if err != nil || m.Corrupt == 0 {
		t.Errorf("Load of the damaged log: corrupt %d, %v; want some corrupt lines", m.Corrupt, err)
	}
}

// TestConcurrentStores runs several Store values over one home, as several
// processes would (each has its own locks and caches): appends interleave
// by batch and every view agrees.
func TestConcurrentStores(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	key := recall.Key{Project: "p", Session: "shared"}
	const stores, batches = 4, 50
	var wg sync.WaitGroup
	for w := range stores {
		s := openStore(t, home)
		wg.Go(func() {
			for b := range batches {
				_, err := s.Append(ctx, key, recall.Guard{},
					recall.Message("user", tag(w, b, 0)).Entry(),
					recall.Message("assistant", tag(w, b, 1)).Entry())
				if err != nil {
					t.Error(err)
					return
				}
				if b%10 == 0 {
					if _, err := s.List(ctx, "p", recall.ListOptions{}); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	s := openStore(t, home)
	checkBatches(t, s, key, stores, batches)
	for range 2 {
		page, err := s.List(ctx, "p", recall.ListOptions{})
		if err != nil || len(page.Sessions) != 1 || page.Sessions[0].ItemCount != 2*stores*batches {
			t.Fatalf("List = %+v, %v", page.Sessions, err)
		}
	}
}

func tag(w, b, i int) string { return fmt.Sprintf("w%d-b%d-i%d", w, b, i) }

// checkBatches verifies a session written by writers appending batches of
// two items tagged tag(w, b, 0) and tag(w, b, 1): seqs dense, every batch
// present once and whole, each writer's batches in order.
func checkBatches(t *testing.T, s recall.Store, key recall.Key, writers, batches int) {
	t.Helper()
	ctx := context.Background()
	_, es, err := s.Load(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2*writers*batches {
		t.Fatalf("%d entries, want %d", len(es), 2*writers*batches)
	}
	next := make([]int, writers)
	for i := 0; i < len(es); i += 2 {
		if es[i].Seq != int64(i+1) || es[i+1].Seq != int64(i+2) {
			t.Fatalf("seqs %d,%d at %d", es[i].Seq, es[i+1].Seq, i)
		}
		a, b := recall.Item(es[i].Data).Text(), recall.Item(es[i+1].Data).Text()
		found := false
		for w := range writers {
			if a == tag(w, next[w], 0) {
				if b != tag(w, next[w], 1) {
					t.Fatalf("batch %s interleaved with %s", a, b)
				}
				next[w]++
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("entry %q out of order or unknown (next %v)", a, next)
		}
	}
	if err := storekit.VerifySession(ctx, s, key); err != nil {
		t.Fatal(err)
	}
}

// TestSweepTemp: a temporary file left by a crashed writer (its process is
// gone) is removed by the next listing once it is old; a live writer's is
// kept.
func TestSweepTemp(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	s := openStore(t, home)
	if _, err := s.Append(ctx, recall.Key{Project: "p", Session: "s"}, recall.Guard{}, recall.Message("user", "hi").Entry()); err != nil {
		t.Fatal(err)
	}
	dir, _ := s.ProjectDir("p")
	// a pid above the kernel's limit cannot be alive
	dead := filepath.Join(dir, "x.jsonl#tmp-99999999-1")
	live := filepath.Join(dir, fmt.Sprintf("y.jsonl#tmp-%d-1", os.Getppid()))
	young := filepath.Join(dir, "z.jsonl#tmp-99999998-1")
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{dead, live, young} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		if p != young {
			os.Chtimes(p, old, old)
		}
	}
	if _, err := s.List(ctx, "p", recall.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{dead: false, live: true, young: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists = %t, want %t", filepath.Base(p), err == nil, want)
		}
	}
}
