package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/mattn/go-runewidth"
	oai "github.com/openai/openai-go/v3"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/sessionref"
)

func TestErrorLine(t *testing.T) {
	tests := []struct {
		err      error
		wantCode int
		want     string // substring of the line
	}{
		{usageError("try --help", "bad %s", "flag"), exitUsage, "recall: bad flag; hint: try --help"},
		{fmt.Errorf("show: %w", recall.ErrNotFound), exitFailed, "hint: run 'recall ls --all'"},
		{&sessionref.AmbiguousError{Ref: "01", Matches: []recall.Meta{{Key: recall.Key{Project: "p", Session: "01a"}, Title: "A"}, {Key: recall.Key{Project: "q", Session: "01b"}}}}, exitFailed, `"01" matches 2 sessions: p/01a ("A"), q/01b; hint: use a longer ID prefix, or project/ID`},
		{fmt.Errorf("open: %w", &fs.PathError{Op: "mkdir", Path: "/ro/home", Err: fs.ErrPermission}), exitFailed, "make /ro/home writable"},
		{errors.Join(errors.New("first\nproblem"), errors.New("second")), exitFailed, "recall: first; problem; second"},
		{fmt.Errorf("turn 1: %w", &oai.Error{StatusCode: 401}), exitFailed, "check OPENAI_API_KEY"},
		{fmt.Errorf("turn 1: %w", &oai.Error{StatusCode: 429}), exitFailed, "rate limited"},
		{fmt.Errorf("turn 1: %w", &oai.Error{StatusCode: 503}), exitFailed, "the model server failed"},
		{fmt.Errorf("post: %w", &net.OpError{Op: "dial", Err: errors.New("connection refused")}), exitFailed, "a server did not answer"},
	}
	for _, tt := range tests {
		line := errorLine(tt.err)
		if strings.Contains(line, "\n") || !strings.Contains(line, tt.want) {
			t.Errorf("errorLine(%v) = %q, want one line containing %q", tt.err, line, tt.want)
		}
		if c := exitCode(tt.err); c != tt.wantCode {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, c, tt.wantCode)
		}
	}
	if exitCode(nil) != exitOK {
		t.Error("exitCode(nil) is not 0")
	}
}

// TestTerminalWriter checks that show's text keeps its line breaks and
// tabs and escapes every other control character and invalid byte, in
// whatever pieces the text comes: a rune or an escape sequence cut
// between two writes is escaped as if it came whole.
func TestTerminalWriter(t *testing.T) {
	in := "a\tb\n\x1b[31mred\r\n\xe4\tx\u202e"
	want := "a\tb\n\\x1b[31mred\\r\n\\xe4\tx\\u202e"
	for size := 1; size <= len(in); size++ {
		var b strings.Builder
		tw := &terminalWriter{w: &b}
		for i := 0; i < len(in); i += size {
			if _, err := tw.Write([]byte(in[i:min(i+size, len(in))])); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.flush(); err != nil {
			t.Fatal(err)
		}
		if got := b.String(); got != want {
			t.Errorf("written %d bytes at a time: %q, want %q", size, got, want)
		}
	}
}

func TestDisplayTitleCutsByWidth(t *testing.T) {
	m := recall.Meta{Title: strings.Repeat("会话", 40), Pinned: true}
	got := displayTitle(m, 20)
	if !strings.HasPrefix(got, "[pinned] 会话") || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Errorf("displayTitle = %q", got)
	}
	if w := runewidth.StringWidth(got); w > 20 {
		t.Errorf("displayTitle is %d columns wide, want at most 20", w)
	}
}

func TestPicker(t *testing.T) {
	now := time.Now()
	metas := []recall.Meta{
		{Key: recall.Key{Project: "p", Session: "0199aaaa-0003"}, Title: "Fix the parser", Updated: now},
		{Key: recall.Key{Project: "p", Session: "0199aaaa-0002"}, Title: "Write docs", Updated: now.Add(-time.Hour)},
		{Key: recall.Key{Project: "p", Session: "0199aaaa-0001"}, Title: "Parser benchmarks", Updated: now.Add(-2 * time.Hour)},
	}
	key := func(s string) tea.KeyMsg { return tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)} }
	var m tea.Model = newPicker(metas, now)
	step := func(msgs ...tea.Msg) tea.Cmd {
		var cmd tea.Cmd
		for _, msg := range msgs {
			m, cmd = m.Update(msg)
		}
		return cmd
	}
	// Typing filters (case-insensitive); the view shows only matches.
	step(key("PARS"))
	if v := m.View(); !strings.Contains(v, "Fix the parser") || strings.Contains(v, "Write docs") || !strings.Contains(v, "> PARS") {
		t.Fatalf("view after typing PARS:\n%s", v)
	}
	// Down moves to the second match, Enter picks it.
	if cmd := step(tea.KeyMsg{Type: tea.KeyDown}, tea.KeyMsg{Type: tea.KeyDown}, tea.KeyMsg{Type: tea.KeyEnter}); cmd == nil {
		t.Fatal("Enter did not quit the picker")
	}
	if p := m.(picker); p.chosen == nil || p.chosen.Title != "Parser benchmarks" {
		t.Fatalf("chosen = %+v, want Parser benchmarks", p.chosen)
	}

	// Backspace widens the filter again; a filter matching nothing picks nothing.
	m = newPicker(metas, now)
	step(key("zz"))
	if v := m.View(); !strings.Contains(v, "no session matches") {
		t.Fatalf("view with no match:\n%s", v)
	}
	step(tea.KeyMsg{Type: tea.KeyEnter})
	if p := m.(picker); p.chosen != nil {
		t.Fatalf("Enter with no match chose %+v", p.chosen)
	}
	m = newPicker(metas, now)
	step(key("zz"), tea.KeyMsg{Type: tea.KeyBackspace}, tea.KeyMsg{Type: tea.KeyBackspace})
	if p := m.(picker); len(p.matches) != 3 || p.matches[0] != 0 {
		t.Fatalf("after clearing the filter, matches = %v; want all, newest first", p.matches)
	}
	// Filtering by ID works too, and Esc cancels.
	step(key("0001"))
	if p := m.(picker); len(p.matches) != 1 || p.all[p.matches[0]].Title != "Parser benchmarks" {
		t.Fatalf("filter by ID: matches = %v", p.matches)
	}
	if cmd := step(tea.KeyMsg{Type: tea.KeyEsc}); cmd == nil || m.(picker).chosen != nil {
		t.Fatal("Esc did not cancel")
	}
}

func TestWriteTableAlignsWideText(t *testing.T) {
	var b strings.Builder
	if err := writeTable(&b, [][]string{{"ID", "TITLE", "N"}, {"a", "文档", "1"}, {"bb", "docs", "22"}}); err != nil {
		t.Fatal(err)
	}
	want := "ID  TITLE  N\na   文档   1\nbb  docs   22\n"
	if b.String() != want {
		t.Errorf("table =\n%s\nwant\n%s", b.String(), want)
	}
}
