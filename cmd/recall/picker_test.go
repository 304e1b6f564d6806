package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/sessionref"
	"github.com/recallkit/recall/memstore"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden screens under testdata/picker")

// golden compares screen with testdata/picker/name.golden, or writes it
// with -update.
func golden(t *testing.T, name, screen string) {
	t.Helper()
	path := filepath.Join("testdata", "picker", name+".golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(screen), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if screen != string(want) {
		t.Errorf("screen %s differs from %s:\n--- got\n%s--- want\n%s", name, path, screen, want)
	}
}

// pickerMetas are sessions as a person has them: titled ones, ones with
// the fallback title a session gets offline (told apart by their first
// prompt), an untitled one, pinned and archived ones, in two projects.
func pickerMetas(now time.Time) []recall.Meta {
	at := func(d time.Duration) time.Time { return now.Add(-d) }
	fallback := now.Add(-3 * time.Hour).Format("Session 2006-01-02 15:04")
	return []recall.Meta{
		{Key: recall.Key{Project: "-home-ada-src-parser", Session: "3f2a9c01-1111-4111-8111-111111111111"}, Title: "Fix the tokenizer", FirstPrompt: "the tokenizer drops the last byte", Updated: at(time.Minute), ItemCount: 12, Pinned: true},
		{Key: recall.Key{Project: "-home-ada-src-parser", Session: "8be41d77-2222-4222-8222-222222222222"}, Title: fallback, FirstPrompt: "why is the lexer slow on long lines?", Updated: at(2 * time.Hour), ItemCount: 4},
		{Key: recall.Key{Project: "-home-ada-src-parser", Session: "c0ffee12-3333-4333-8333-333333333333"}, Title: fallback, FirstPrompt: "write a benchmark for the \x1b[31mparser", Updated: at(3 * time.Hour), ItemCount: 2},
		{Key: recall.Key{Project: "-home-ada-notes", Session: "a17b3e55-4444-4444-8444-444444444444"}, FirstPrompt: "summarize this week's meetings", Updated: at(26 * time.Hour), ItemCount: 1, Archived: true},
		{Key: recall.Key{Project: "-home-ada-notes", Session: "5d5d5d5d-5555-4555-8555-555555555555"}, Updated: at(50 * time.Hour)},
	}
}

// TestPickerScreens checks what the picker shows, screen by screen, as
// golden files: the rows of one project (title, or first prompt under a
// fallback title; age; items; marks), every project's rows after Tab
// (with the project column), a filter, and the empty project.
func TestPickerScreens(t *testing.T) {
	now := time.Date(2026, 12, 1, 13, 17, 0, 0, time.Local)
	metas := pickerMetas(now)
	ctx := context.Background()
	mine := metas[:3]
	p := newPicker(mine, now)
	p.ctx, p.project = ctx, "-home-ada-src-parser"
	p.load = func(_ context.Context, all bool) ([]recall.Meta, []contentHit, error) {
		if all {
			return metas, nil, nil
		}
		return mine, nil, nil
	}
	p.searchIn = func(bool) contentSearch { return nil }
	var m tea.Model = p
	step := func(msg tea.Msg) {
		t.Helper()
		var cmd tea.Cmd
		m, cmd = m.Update(msg)
		for cmd != nil { // run the load a Tab starts, as bubbletea does
			msg := cmd()
			if _, ok := msg.(pickerLoaded); !ok {
				break
			}
			m, cmd = m.Update(msg)
		}
	}
	step(tea.WindowSizeMsg{Width: 120, Height: 12})
	golden(t, "project", m.View())

	step(tea.KeyMsg{Type: tea.KeyTab})
	if pk := m.(picker); !pk.allProjects || len(pk.all) != len(metas) {
		t.Fatalf("after Tab: all projects %t, %d sessions; want every project's %d", pk.allProjects, len(pk.all), len(metas))
	}
	golden(t, "all-projects", m.View())

	// The filter matches first prompts too, in every project.
	step(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("meetings")})
	golden(t, "filter-first-prompt", m.View())

	// Tab again: back to this project, the filter kept.
	step(tea.KeyMsg{Type: tea.KeyTab})
	if pk := m.(picker); pk.allProjects || len(pk.all) != 3 || len(pk.matches) != 0 {
		t.Fatalf("after the second Tab: all projects %t, %d sessions, matches %v", pk.allProjects, len(pk.all), pk.matches)
	}

	empty := newPicker(nil, now)
	empty.load = p.load
	golden(t, "empty-project", empty.View())
}

// TestPickerLeaves: Esc and Ctrl-C end the picker with no choice, which
// the command turns into exit 130 and no output.
func TestPickerLeaves(t *testing.T) {
	now := time.Now()
	for _, k := range []tea.KeyType{tea.KeyEsc, tea.KeyCtrlC} {
		var m tea.Model = newPicker(pickerMetas(now), now)
		m, cmd := m.Update(tea.KeyMsg{Type: k})
		if cmd == nil || m.(picker).chosen != nil {
			t.Errorf("%v: cmd %v, chosen %v; want quit with no choice", k, cmd, m.(picker).chosen)
		}
	}
	if exitCode(errNoChoice) != 130 {
		t.Errorf("exit code of errNoChoice = %d, want 130", exitCode(errNoChoice))
	}
}

// BenchmarkPickerOpen measures opening the picker over 10,000 sessions
// (in the memory store, whose List costs least): reading the first page
// (firstSessions) and building the first screen, what happens before
// anything shows. Its baseline, in the same run, is that List of the page
// alone: the ratio says what the picker adds. "read-the-rest" is the
// background read that follows (sessionref.All and the rows rebuilt),
// while the user already sees the first screen. Opening must stay under
// 100 ms.
func BenchmarkPickerOpen(b *testing.B) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	defer st.Close()
	const n = 10000
	for i := range n {
		key := recall.Key{Project: "p", Session: recall.NewSessionID()}
		if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{
			Title: fmt.Sprintf("Session 2026-12-01 %02d:%02d", i/60%24, i%60),
			Items: []recall.Item{recall.Message("user", fmt.Sprintf("question number %d about the parser", i))},
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("baseline-list-page", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.List(ctx, "p", recall.ListOptions{Limit: pickerFirstPage}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		for b.Loop() {
			first, err := firstSessions(ctx, st, "p", true)
			if err != nil || !first.more {
				b.Fatalf("firstSessions = %d sessions, more %t, %v", len(first.metas), first.more, err)
			}
			p := newPicker(first.metas, time.Now())
			m, _ := p.Update(tea.WindowSizeMsg{Width: 120, Height: 40})
			_ = m.View()
		}
	})
	b.Run("read-the-rest", func(b *testing.B) {
		for b.Loop() {
			metas, err := sessionref.All(ctx, st, "p", false)
			if err != nil || len(metas) != n {
				b.Fatalf("All = %d, %v", len(metas), err)
			}
			p := newPicker(metas, time.Now())
			_ = p.View()
		}
	})
}

// TestPickerReadsTheRest: opened on the first page of a project's
// sessions, the picker reads the rest at once, keeping the session under
// the cursor under it.
func TestPickerReadsTheRest(t *testing.T) {
	now := time.Now()
	metas := pickerMetas(now)
	p := newPicker(metas[:2], now)
	p.ctx, p.more = context.Background(), true
	p.load = func(context.Context, bool) ([]recall.Meta, []contentHit, error) { return metas, nil, nil }
	p.searchIn = func(bool) contentSearch { return nil }
	if v := p.View(); !strings.Contains(v, "(2+)") {
		t.Errorf("the first page's header does not say more are coming:\n%s", v)
	}
	var m tea.Model = p
	m, _ = m.Update(tea.KeyMsg{Type: tea.KeyDown})
	cmd := m.Init()
	if cmd == nil {
		t.Fatal("a picker opened on the first page reads nothing more")
	}
	m, _ = m.Update(cmd())
	pk := m.(picker)
	if len(pk.all) != len(metas) || pk.more || pk.all[pk.matches[pk.cursor]].Key != metas[1].Key {
		t.Fatalf("after the read: %d sessions, more %t, cursor on %v; want %d, false, %v", len(pk.all), pk.more, pk.all[pk.matches[pk.cursor]].Key, len(metas), metas[1].Key)
	}
}
