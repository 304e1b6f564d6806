package filestore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
)

// listProject is the project the list crash test's children change.
const listProject = "lc"

// childChanger changes the sessions of listProject at random, forever:
// appends to existing sessions mostly, and now and then a new session, a
// pop, a removal, a purge, an archive flag; it lists every few changes, so
// the index is believed (and written back) while it works. It says "ready"
// once its store is open.
func childChanger() error {
	// Settled as its parent's Lists (see TestCrashListSIGKILL); without
	// fsync, as SIGKILL loses nothing the kernel took.
	s, err := filestore.OpenHooked(filestore.Options{Dir: os.Getenv(envHome), Sync: filestore.SyncNever}, &filestore.Hooks{Settled: true})
	if err != nil {
		return err
	}
	ctx := context.Background()
	fmt.Println("ready")
	var salt uint64
	fmt.Sscan(os.Getenv(envArg), &salt)
	rng := testkit.ChildRand(salt)
	key := func() recall.Key {
		return recall.Key{Project: listProject, Session: fmt.Sprintf("s%02d", rng.IntN(24))}
	}
	for op := 0; ; op++ {
		var err error
		switch n := rng.IntN(100); {
		case n < 70:
			_, err = s.Append(ctx, key(), recall.IfExists(), recall.Message("user", strings.Repeat("x", rng.IntN(3000))).Entry())
		case n < 78:
			_, err = s.Append(ctx, key(), recall.Guard{}, recall.Message("user", "new").Entry())
		case n < 84:
			_, err = s.Pop(ctx, key())
		case n < 87:
			err = s.Remove(ctx, key())
		case n < 89:
			_, err = s.Purge(ctx, key())
		default:
			_, err = recall.NewSession(s, key()).ChangeMeta(ctx, recall.MetaChange{Archived: new(rng.IntN(2) == 0)})
		}
		if errors.Is(err, recall.ErrNotFound) || errors.Is(err, recall.ErrConflict) {
			err = nil
		}
		if err == nil && op%7 == 0 {
			_, err = s.List(ctx, listProject, recall.ListOptions{})
		}
		if err != nil {
			return err
		}
	}
}

// TestCrashListSIGKILL kills processes that change sessions and list them,
// at random instants, and after every kill checks List against the logs:
// from a new store (a new process) and from one that listed before the
// kill. The index may never hide a session, show one that is gone, or show
// stale counts.
func TestCrashListSIGKILL(t *testing.T) {
	kills := testkit.Size(8, 40)
	home := t.TempDir()
	rng := testkit.Rand(t)
	// The journal alone must be right: List's stat of the page it returns
	// would correct stale rows. Lists made after the file system's clock
	// moved on from each change (see filestore.Hooks).
	h := &filestore.Hooks{NoPageCheck: true, Settled: true}
	openStore := func(t *testing.T, home string) *filestore.Store { return openHooked(t, home, h) }
	warm := openStore(t, home)
	for round := range kills {
		// two changers at once now and then: writers in several processes
		n := 1 + rng.IntN(2)
		var children []*testkit.Child
		for i := range n {
			c := child(t, "changer", home, strconv.Itoa(2*round+i))
			// the clock starts once the child has its store open
			if !c.WaitLines(1, time.Minute) || c.Lines()[0] != "ready" {
				t.Fatalf("round %d: the child said %q\n%s", round, c.Lines(), c.Stderr())
			}
			children = append(children, c)
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond) // a random moment to kill
		for _, c := range children {
			c.Kill()
		}
		// a new process's first page, before any List settled the journal
		want := listFromLogs(t, home)
		wantFirstPage(t, fmt.Sprintf("round %d, a first page", round), openStore(t, home), want, 1+rng.IntN(5), rng.IntN(2) == 0)
		for i, s := range []*filestore.Store{openStore(t, home), warm} {
			which := []string{"a new store", "a store that listed before"}[i]
			want := listFromLogs(t, home)
			wantListEqual(t, fmt.Sprintf("round %d, %s", round, which), s, want)
			// and again, from the journal the first List settled
			wantListEqual(t, fmt.Sprintf("round %d, %s, again", round, which), s, want)
		}
	}
	if h.HeadLists.Load() == 0 {
		t.Errorf("no first page was read from the journal's head: that path went untested")
	}
	if got := h.TrustedLists.Load(); got == 0 {
		t.Errorf("no List was served from the journal alone: the fast path went untested")
	} else {
		t.Logf("%d kills; %d project lists served from the journal alone, %d first pages from its head", kills, got, h.HeadLists.Load())
	}
}

// listFromLogs derives every session of listProject from its log alone:
// Load reads the whole log, whatever the index says.
func listFromLogs(t *testing.T, home string) []recall.Meta {
	t.Helper()
	ctx := context.Background()
	names, err := filepath.Glob(filepath.Join(home, "projects", listProject, "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	reader := openStore(t, home)
	var out []recall.Meta
	for _, name := range names {
		k := recall.Key{Project: listProject, Session: strings.TrimSuffix(filepath.Base(name), ".jsonl")}
		m, _, err := reader.Load(ctx, k)
		if errors.Is(err, recall.ErrNotFound) {
			continue
		}
		if err != nil {
			t.Fatalf("Load %s: %v", k, err)
		}
		out = append(out, m)
	}
	return out
}

// wantListEqual compares List (all sessions, archived included) with the
// sessions derived from the logs.
func wantListEqual(t *testing.T, what string, s *filestore.Store, want []recall.Meta) {
	t.Helper()
	page, err := s.List(context.Background(), listProject, recall.ListOptions{Limit: -1, IncludeArchived: true})
	if err != nil {
		t.Fatalf("%s: List: %v", what, err)
	}
	byKey := map[recall.Key]recall.Meta{}
	for _, m := range want {
		byKey[m.Key] = m
	}
	if len(page.Sessions) != len(want) {
		var got []string
		for _, m := range page.Sessions {
			got = append(got, m.Key.Session)
		}
		var exp []string
		for _, m := range want {
			exp = append(exp, m.Key.Session)
		}
		journal, _ := os.ReadFile(journalOf(s))
		t.Fatalf("%s: List has %d sessions %v; the logs hold %d %v\njournal:\n%s", what, len(page.Sessions), got, len(want), exp, tailLines(journal, 60))
	}
	for _, g := range page.Sessions {
		w, ok := byKey[g.Key]
		if !ok {
			t.Fatalf("%s: List shows %s, which no log holds", what, g.Key)
		}
		if g.ItemCount != w.ItemCount || g.LastSeq != w.LastSeq || !g.Updated.Equal(w.Updated) || g.Archived != w.Archived || g.Corrupt != w.Corrupt {
			t.Fatalf("%s: List shows %s with %d items, seq %d, updated %v, archived %v; its log: %d, %d, %v, %v",
				what, g.Key, g.ItemCount, g.LastSeq, g.Updated, g.Archived, w.ItemCount, w.LastSeq, w.Updated, w.Archived)
		}
	}
}

// wantFirstPage compares List's first page of limit sessions, with or
// without the archived ones, with the sessions derived from the logs.
func wantFirstPage(t *testing.T, what string, s *filestore.Store, want []recall.Meta, limit int, archived bool) {
	t.Helper()
	page, err := s.List(context.Background(), listProject, recall.ListOptions{Limit: limit, IncludeArchived: archived})
	if err != nil {
		t.Fatalf("%s: List: %v", what, err)
	}
	var exp []recall.Meta
	for _, m := range want {
		if archived || !m.Archived {
			exp = append(exp, m)
		}
	}
	storekit.SortList(exp)
	next := ""
	if len(exp) > limit {
		exp = exp[:limit]
		next = storekit.CursorAt(exp[limit-1]).String()
	}
	if err := samePage(page, recall.Page{Sessions: exp, Next: next}); err != nil {
		journal, _ := os.ReadFile(journalOf(s))
		t.Fatalf("%s (limit %d, archived %v): List %v; the logs: %v\njournal:\n%s",
			what, limit, archived, err, pageKeys(recall.Page{Sessions: exp}), tailLines(journal, 60))
	}
}

// journalOf returns the path of listProject's index journal in s.
func journalOf(s *filestore.Store) string {
	dir, _ := s.ProjectDir(listProject)
	return filepath.Join(dir, "#index-v5")
}

// tailLines returns the last n lines of b, each cut to 100 bytes.
func tailLines(b []byte, n int) string {
	lines := strings.Split(string(b), "\n")
	lines = lines[max(0, len(lines)-n):]
	for i, l := range lines {
		lines[i] = l[:min(len(l), 100)]
	}
	return strings.Join(lines, "\n")
}
