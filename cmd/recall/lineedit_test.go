package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
)

// The input history keeps multi-line entries, skips repeats, and its file
// stays bounded: at most twice historyMax lines, the newest historyMax
// entries read back.
func TestHistoryFileBounded(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "history", "p.jsonl")
	e := newLineEditor(nil, nil, file)
	if _, err := os.Stat(filepath.Dir(file)); err == nil {
		t.Fatal("opening the editor created the history folder")
	}
	for i := range 3*historyMax + 7 {
		if err := e.add(fmt.Sprintf("message %d\nline two", i)); err != nil {
			t.Fatal(err)
		}
		if err := e.add(fmt.Sprintf("message %d\nline two", i)); err != nil { // a repeat
			t.Fatal(err)
		}
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	if n > 2*historyMax {
		t.Errorf("history file has %d lines, want at most %d", n, 2*historyMax)
	}
	hist, _ := loadHistory(file)
	if len(hist) != historyMax || hist[len(hist)-1] != fmt.Sprintf("message %d\nline two", 3*historyMax+6) || hist[0] != fmt.Sprintf("message %d\nline two", 2*historyMax+7) {
		t.Errorf("read back %d entries, first %q, last %q", len(hist), hist[0], hist[len(hist)-1])
	}
}

// The editor shows every line of a multi-line text, from its first: it
// grows with the text instead of scrolling its first lines away. Each step
// renders the view, as bubbletea does between messages.
func TestEditorShowsEveryLine(t *testing.T) {
	t.Parallel()
	typed := func(s string) tea.Msg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }
	ctrlJ := tea.KeyMsg{Type: tea.KeyCtrlJ}
	for _, c := range []struct {
		name string
		hist []string
		keys []tea.Msg
		want []string
	}{
		{"Ctrl-J", nil, []tea.Msg{typed("x1"), ctrlJ, typed("y2")}, []string{"> x1", ". y2"}},
		{"Alt-Enter", nil, []tea.Msg{typed("x1"), tea.KeyMsg{Type: tea.KeyEnter, Alt: true}, typed("y2")}, []string{"> x1", ". y2"}},
		{"backslash", nil, []tea.Msg{typed(`x1\`), tea.KeyMsg{Type: tea.KeyEnter}, typed("y2")}, []string{"> x1", ". y2"}},
		{"paste", nil, []tea.Msg{tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("p1\np2\np3"), Paste: true}}, []string{"> p1", ". p2", ". p3"}},
		{"history", []string{"h1\nh2\nh3"}, []tea.Msg{tea.KeyMsg{Type: tea.KeyUp}}, []string{"> h1", ". h2", ". h3"}},
		{"a line wider than the editor", nil, []tea.Msg{typed(strings.Repeat("w", 30) + " " + strings.Repeat("z", 20))},
			[]string{"> " + strings.Repeat("w", 30), ". " + strings.Repeat("z", 20)}},
	} {
		var m tea.Model = newEditModel(c.hist, 40)
		m.View()
		for _, k := range c.keys {
			m, _ = m.Update(k)
			m.View()
		}
		var got []string
		for _, l := range strings.Split(strings.TrimRight(ansiSeq.ReplaceAllString(m.View(), ""), "\n"), "\n") {
			got = append(got, strings.TrimRight(l, " "))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: the editor shows %q, want %q", c.name, got, c.want)
		}
	}
}
