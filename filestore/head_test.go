package filestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"pgregory.net/rapid"
)

// TestListHeadAgrees checks a new process's first page, read from the
// journal's head, sorted section and tail, against the same page from a
// whole read of the journal, after random changes: appends, new sessions,
// pops, removals, archive and pin flags, rewrites of the journal (which sort it)
// and intents of writers that died before their first change; and the
// same page from a store that keeps listing, as the changes come.
func TestListHeadAgrees(t *testing.T) {
	// Lists made after the file system's clock moved on from each change
	// (see filestore.Hooks); whole reads the journal whole.
	h := &filestore.Hooks{Settled: true}
	whole := &filestore.Hooks{Settled: true, NoHead: true}
	openStore := func(t *testing.T, home string) *filestore.Store { return openHooked(t, home, h) }
	rapid.Check(t, func(rt *rapid.T) {
		home, err := os.MkdirTemp("", "head")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(home)
		ctx := context.Background()
		w := openStore(t, home)
		defer w.Close()
		// a store that keeps listing: it keeps what it read of the
		// journal's head and reads only what was appended since
		reader := openStore(t, home)
		defer reader.Close()
		key := func() recall.Key {
			return recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", rapid.IntRange(0, 11).Draw(rt, "session"))}
		}
		steps := rapid.IntRange(1, 30).Draw(rt, "steps")
		for step := range steps {
			var err error
			switch op := rapid.IntRange(0, 9).Draw(rt, "op"); op {
			case 0, 1, 2:
				_, err = w.Append(ctx, key(), recall.Guard{}, recall.Message("user", "hello").Entry())
			case 3:
				_, err = w.Pop(ctx, key())
			case 4:
				err = w.Remove(ctx, key())
			case 5:
				if rapid.Bool().Draw(rt, "pin") {
					_, err = recall.NewSession(w, key()).ChangeMeta(ctx, recall.MetaChange{Pinned: new(rapid.Bool().Draw(rt, "pinned"))})
				} else {
					_, err = recall.NewSession(w, key()).ChangeMeta(ctx, recall.MetaChange{Archived: new(rapid.Bool().Draw(rt, "archived"))})
				}
			case 6:
				err = filestore.Rewrite(w, "p")
			case 7:
				err = filestore.AppendIntent(w, key())
			default:
				// a full List validates and settles the journal
				_, err = openStore(t, home).List(ctx, "p", recall.ListOptions{})
			}
			if errors.Is(err, recall.ErrNotFound) || errors.Is(err, recall.ErrConflict) {
				err = nil
			}
			if err != nil {
				rt.Fatalf("step %d: %v", step, err)
			}
			for _, opts := range []recall.ListOptions{{Limit: 1}, {Limit: 3, IncludeArchived: true}, {}, {Limit: 2, Pinned: true}} {
				head := listFresh(rt, home, opts, h)
				whole := listFresh(rt, home, opts, whole)
				if err := samePage(head, whole); err != nil {
					rt.Fatalf("step %d, %+v: the first page from the journal's head %v; from all of it %v", step, opts, err, pageKeys(whole))
				}
				again, err := reader.List(ctx, "p", opts)
				if err != nil {
					rt.Fatal(err)
				}
				if err := samePage(again, whole); err != nil {
					rt.Fatalf("step %d, %+v: the first page of a store that listed before %v; from all of it %v", step, opts, err, pageKeys(whole))
				}
			}
		}
	})
	if h.HeadLists.Load() == 0 {
		t.Error("no first page was read from the journal's head: the path went untested")
	}
}

// listFresh lists project "p" of home from a new store with hooks h
// (h.NoHead turns listHead off).
func listFresh(t interface{ Fatal(...any) }, home string, opts recall.ListOptions, h *filestore.Hooks) recall.Page {
	s, err := filestore.OpenHooked(filestore.Options{Dir: home}, h)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	page, err := s.List(context.Background(), "p", opts)
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// samePage reports how got differs from want: keys, order, counts, flags
// and the cursor of the next page.
func samePage(got, want recall.Page) error {
	if len(got.Sessions) != len(want.Sessions) || got.Next != want.Next {
		return fmt.Errorf("shows %v (next %q), want next %q", pageKeys(got), got.Next, want.Next)
	}
	for i, g := range got.Sessions {
		w := want.Sessions[i]
		if g.Key != w.Key || g.ItemCount != w.ItemCount || g.LastSeq != w.LastSeq || !g.Updated.Equal(w.Updated) || g.Archived != w.Archived {
			return fmt.Errorf("row %d is %s with %d items, seq %d, archived %v; want %s with %d, %d, %v",
				i, g.Key.Session, g.ItemCount, g.LastSeq, g.Archived, w.Key.Session, w.ItemCount, w.LastSeq, w.Archived)
		}
	}
	return nil
}

// pageKeys returns the sessions of a page.
func pageKeys(p recall.Page) []string {
	var out []string
	for _, m := range p.Sessions {
		out = append(out, m.Key.Session)
	}
	return out
}

// TestHeadTailBounded checks that the journal's tail stays short when
// every writer is a short process (none appends enough lines to compact
// on its own) and every list is a new process's first page: a list that
// finds the tail due for a rewrite reads the journal whole, which
// rewrites it.
func TestHeadTailBounded(t *testing.T) {
	home := t.TempDir()
	ctx := context.Background()
	const appends, listEvery = 1500, 100
	for i := range appends {
		w, err := filestore.Open(filestore.Options{Dir: home, Sync: filestore.SyncNever})
		if err != nil {
			t.Fatal(err)
		}
		k := recall.Key{Project: "p", Session: fmt.Sprintf("s%d", i%5)}
		if _, err := w.Append(ctx, k, recall.Guard{}, recall.Message("user", "hi").Entry()); err != nil {
			t.Fatal(err)
		}
		w.Close()
		if i%listEvery == 0 {
			r := openStore(t, home)
			if _, err := r.List(ctx, "p", recall.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			r.Close()
		}
	}
	data, err := os.ReadFile(filepath.Join(home, "projects", "p", "#index-v5"))
	if err != nil {
		t.Fatal(err)
	}
	// Each append writes an intent and a record: without rewrites the
	// journal would hold 2*appends lines.
	if lines := bytes.Count(data, []byte{'\n'}); lines > 2048+2*listEvery+16 {
		t.Errorf("the journal holds %d lines after %d appends by short writers: its tail was never rewritten", lines, appends)
	}
}

// TestHeadAfterCreate checks that after a process creates or removes a
// session (which moves the directory's mtime), the next process still
// lists its first page from the journal's head: the writer checked the
// directory's names itself before it closed.
func TestHeadAfterCreate(t *testing.T) {
	// Lists made after the file system's clock moved on from each change
	// (see filestore.Hooks).
	h := &filestore.Hooks{Settled: true}
	openStore := func(t *testing.T, home string) *filestore.Store { return openHooked(t, home, h) }
	home := t.TempDir()
	ctx := context.Background()
	w := openStore(t, home)
	for i := range 5 {
		k := recall.Key{Project: "p", Session: fmt.Sprintf("s%d", i)}
		if _, err := w.Append(ctx, k, recall.Guard{}, recall.Message("user", "hi").Entry()); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	for i, change := range []func(*filestore.Store) error{
		func(s *filestore.Store) error {
			_, err := s.Append(ctx, recall.Key{Project: "p", Session: "new"}, recall.Guard{}, recall.Message("user", "hi").Entry())
			return err
		},
		func(s *filestore.Store) error { return s.Remove(ctx, recall.Key{Project: "p", Session: "s1"}) },
		func(s *filestore.Store) error {
			_, err := s.Purge(ctx, recall.Key{Project: "p", Session: "s2"})
			return err
		},
	} {
		w := openStore(t, home)
		if err := change(w); err != nil {
			t.Fatal(err)
		}
		w.Close()
		before := h.HeadLists.Load()
		page, err := openStore(t, home).List(ctx, "p", recall.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if h.HeadLists.Load() == before {
			t.Errorf("change %d: the next process did not list from the journal's head", i)
		}
		whole := listFresh(t, home, recall.ListOptions{}, &filestore.Hooks{Settled: true, NoHead: true})
		if err := samePage(page, whole); err != nil {
			t.Errorf("change %d: %v; from all of the journal %v", i, err, pageKeys(whole))
		}
	}
}
