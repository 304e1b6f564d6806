package filestore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
)

// TestPinnedRecords: a project's set of pinned records (pins) holds
// exactly its pinned sessions, through this process's writes (pin, unpin,
// archive, remove), another process's writes read from the journal, and
// a journal read anew after a rewrite; and a pinned listing of a believed
// journal returns them all.
func TestPinnedRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *Store {
		s, err := Open(Options{Dir: dir, Sync: SyncNever})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := open()
	key := func(i int) recall.Key { return recall.Key{Project: "p", Session: fmt.Sprintf("s%03d", i)} }
	pinned := map[string]bool{}
	pin := func(s *Store, i int, on bool) {
		t.Helper()
		if _, err := recall.NewSession(s, key(i)).ChangeMeta(ctx, recall.MetaChange{Pinned: new(on)}); err != nil {
			t.Fatal(err)
		}
		if on {
			pinned[key(i).Session] = true
		} else {
			delete(pinned, key(i).Session)
		}
	}
	for i := range 60 {
		if _, err := s.Append(ctx, key(i), recall.Guard{}, recall.Message("user", "hi").Entry()); err != nil {
			t.Fatal(err)
		}
		if i%10 == 3 {
			pin(s, i, true)
		}
	}
	// a pinned subagent record: never among the main sessions
	sub := recall.Key{Project: "p", Session: "s003", Subpath: "subagents/x"}
	if _, err := s.Append(ctx, sub, recall.Guard{}, recall.Message("user", "sub").Entry()); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(s, sub).ChangeMeta(ctx, recall.MetaChange{Pinned: new(true)}); err != nil {
		t.Fatal(err)
	}

	check := func(s *Store, what string) {
		t.Helper()
		page, err := s.List(ctx, "p", recall.ListOptions{Pinned: true, IncludeArchived: true, Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, m := range page.Sessions {
			listed = append(listed, m.Key.Session)
		}
		slices.Sort(listed)
		want := slices.Sorted(maps.Keys(pinned))
		if !slices.Equal(listed, want) {
			t.Errorf("%s: pinned listing %v, want %v", what, listed, want)
		}
		p := s.project("p")
		p.mu.Lock()
		var set []string
		for rel, r := range p.pins {
			if p.recs[rel] != r || !r.pinned {
				t.Errorf("%s: pins holds %s, not the pinned record recs holds", what, rel)
			}
			if !strings.Contains(rel, "/") {
				set = append(set, rel)
			}
		}
		for rel, r := range p.recs {
			if m, err := r.Meta(); err == nil && m.Pinned != (p.pins[rel] != nil) {
				t.Errorf("%s: %s pinned %t, in pins %t", what, rel, m.Pinned, p.pins[rel] != nil)
			}
		}
		p.mu.Unlock()
		slices.Sort(set)
		if !slices.Equal(set, want) {
			t.Errorf("%s: the pinned set holds %v, want %v", what, set, want)
		}
	}
	check(s, "after the writes")

	pin(s, 13, false)
	pin(s, 20, true)
	if _, err := recall.NewSession(s, key(23)).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, key(33)); err != nil {
		t.Fatal(err)
	}
	delete(pinned, key(33).Session)
	check(s, "after pin, unpin, archive and remove")

	// Another process: it reads the journal, then the first one's writes.
	other := open()
	check(other, "another process")
	pin(s, 41, true)
	pin(s, 43, false)
	check(other, "another process, after the first one's writes")

	// A journal read anew from its start, rewritten meanwhile.
	p := s.project("p")
	f, err := p.lockJournal()
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.refresh()
	p.rewriteLocked(true, false, 0)
	p.mu.Unlock()
	f.Close()
	fresh := open()
	check(fresh, "a new process, after a rewrite")
}
