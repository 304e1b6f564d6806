package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/mattn/go-runewidth"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/internal/pagefilter"
	"github.com/recallkit/recall/memstore"
)

func TestHighlightAndEscape(t *testing.T) {
	snippet := "fix the \x1b[31mtokenizer\x1b[0m now\r"
	i := strings.Index(snippet, "tokenizer")
	spans := []recall.Span{{Start: i, End: i + len("tokenizer")}, {Start: 3, End: 1}, {Start: 0, End: 999}}
	if got, want := highlight(snippet, spans, false), `fix the \x1b[31mtokenizer\x1b[0m now\r`; got != want {
		t.Errorf("plain highlight = %q, want %q", got, want)
	}
	if got, want := highlight(snippet, spans, true), "fix the \\x1b[31m\x1b[1;33mtokenizer\x1b[0m\\x1b[0m now\\r"; got != want {
		t.Errorf("colour highlight = %q, want %q", got, want)
	}
	// internal/termsafe's tests cover the escaping on its own
}

func TestWriteHits(t *testing.T) {
	now := time.Now()
	k := recall.Key{Project: "p", Session: "0199aaaa-0001"}
	hits := []recall.Hit{{Key: k, Title: "Tokenizer \x1b]0;x", Role: "user", Time: now.Add(-2 * time.Hour),
		Snippet: "fix the tokenizer", Matches: []recall.Span{{Start: 8, End: 17}}}}
	page := pagefilter.SearchPage{SearchPage: recall.SearchPage{Hits: hits}, Sessions: map[recall.Key]recall.Meta{
		k: {Key: k, Metadata: map[string]string{importer.MetaSource: "codex"}},
	}}
	scope := []recall.Meta{{Key: k}, {Key: recall.Key{Project: "p", Session: "0199bbbb"}}}
	for _, c := range []struct {
		cols columns
		want string
	}{
		{columns{project: true}, "Tokenizer \\x1b]0;x  0199aaaa  2h ago  user  p\n    fix the tokenizer\n"},
		{columns{project: true, source: true}, "Tokenizer \\x1b]0;x  0199aaaa  2h ago  user  codex  p\n    fix the tokenizer\n"},
		{columns{}, "Tokenizer \\x1b]0;x  0199aaaa  2h ago  user\n    fix the tokenizer\n"},
	} {
		var b strings.Builder
		if err := writeHits(&b, page, scope, c.cols, false, now); err != nil {
			t.Fatal(err)
		}
		if b.String() != c.want {
			t.Errorf("writeHits %+v wrote\n%q\nwant\n%q", c.cols, b.String(), c.want)
		}
	}
}

// TestPickerContent checks the picker's content search: after the
// debounce the filter's text matches follow the title matches, with their
// snippets; a search of an older filter is dropped.
func TestPickerContent(t *testing.T) {
	now := time.Now()
	metas := []recall.Meta{
		{Key: recall.Key{Project: "p", Session: "0199aaaa-0003"}, Title: "Fix the parser", Updated: now},
		{Key: recall.Key{Project: "p", Session: "0199aaaa-0002"}, Title: "Write docs", Updated: now.Add(-time.Hour)},
		{Key: recall.Key{Project: "p", Session: "0199aaaa-0001"}, Title: "Lunch", Updated: now.Add(-2 * time.Hour)},
	}
	var searched []string
	search := func(_ context.Context, filter string) ([]contentHit, error) {
		searched = append(searched, filter)
		if filter == "boom" {
			return nil, errors.New("store down")
		}
		return []contentHit{
			{key: metas[2].Key, snippet: "the parser in lunch"},
			{key: metas[0].Key, snippet: "parser again"},       // a title match already
			{key: recall.Key{Project: "q", Session: "x"}},      // not in the picker
			{key: metas[2].Key, snippet: "a second hit there"}, // listed once
		}, nil
	}
	p := newPicker(metas, now)
	p.search, p.ctx = search, context.Background()
	var m tea.Model = p
	typeText := func(s string) tea.Cmd {
		var cmd tea.Cmd
		m, cmd = m.Update(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune(s)})
		return cmd
	}
	tick := typeText("pars")
	if tick == nil {
		t.Fatal("typing scheduled no search")
	}
	stale := tick() // the debounce timer of "pars"
	tick = typeText("er")
	if _, cmd := m.Update(stale); cmd != nil {
		t.Fatal("the timer of an older filter started a search")
	}
	_, run := m.Update(tick())
	if run == nil {
		t.Fatal("the timer of the current filter started no search")
	}
	m, _ = m.Update(run())
	if len(searched) != 1 || searched[0] != "parser" {
		t.Fatalf("searched %q, want one search of \"parser\"", searched)
	}
	pk := m.(picker)
	if len(pk.matches) != 2 || pk.matches[0] != 0 || pk.matches[1] != 2 {
		t.Fatalf("matches = %v, want the title match then the text match", pk.matches)
	}
	if v := m.View(); !strings.Contains(v, "Lunch") || !strings.Contains(v, "the parser in lunch") || strings.Contains(v, "parser again") {
		t.Fatalf("view:\n%s", v)
	}
	// A result that arrives after the filter changed is dropped.
	done := run() // the search of "parser" once more
	typeText("x")
	m, _ = m.Update(done)
	if pk := m.(picker); len(pk.matches) != 0 || len(pk.snippets) != 0 {
		t.Fatalf("after typing on: matches %v, snippets %v", pk.matches, pk.snippets)
	}
	// A failing search leaves the title matches.
	m = newPicker(metas, now)
	pk = m.(picker)
	pk.search, pk.ctx = search, context.Background()
	m = pk
	tick = typeText("boom")
	_, run = m.Update(tick())
	if msg := run(); msg != nil {
		m, _ = m.Update(msg)
	}
	if pk := m.(picker); len(pk.matches) != 0 {
		t.Fatalf("after a failing search: matches %v", pk.matches)
	}
}

// TestResumeFromSearch checks what Enter on a hit runs: recall chat
// resuming that session, of any project, here with no input (the REPL
// ends at once).
func TestResumeFromSearch(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	key := recall.Key{Project: "elsewhere", Session: "0199aaaa-0001"}
	if _, err := st.Append(ctx, key, recall.Guard{}, recall.ItemEntries(recall.Message("user", "hi"), recall.Message("assistant", "hello"))...); err != nil {
		t.Fatal(err)
	}
	var out, errs strings.Builder
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errs, st: st}
	t.Chdir(t.TempDir())
	if err := a.resume(ctx, key); err != nil {
		t.Fatalf("resume: %v\n%s", err, errs.String())
	}
	if !strings.Contains(errs.String(), "restored 2 items") {
		t.Errorf("resume did not restore the session: stdout %q stderr %q", out.String(), errs.String())
	}
}

// TestFitSnippet: the text under a session found by its content is cut
// around its first match, which shows whole whatever the width, with "…"
// where text was cut; escaped control characters count as they show.
func TestFitSnippet(t *testing.T) {
	const text = "[offline] No model is configured (set OPENAI_API_KEY), so this reply is canned. I see 0 earlier items."
	at := strings.Index(text, "canned")
	canned := []recall.Span{{Start: at, End: at + len("canned")}}
	for _, tt := range []struct {
		snippet string
		spans   []recall.Span
		width   int
		want    string
	}{
		{text, canned, 200, text}, // it fits: whole
		{text, canned, 30, "…ply is canned. I see 0 earli…"},
		{text, canned, 8, "…canned…"},
		{text, canned, 4, "can…"}, // narrower than the match: as much as fits
		{text, nil, 12, "[offline] N…"},
		{text, []recall.Span{{Start: 5, End: 999}}, 12, "[offline] N…"}, // a span out of range is ignored
		{"the \x1b[2J end of the text", []recall.Span{{Start: 9, End: 12}}, 14, "…J end of the…"},
		{"張三張三張三張三 目标 張三張三張三張三", []recall.Span{{Start: 25, End: 31}}, 12, "… 目标 張三…"},
	} {
		got := fitSnippet(tt.snippet, tt.spans, tt.width)
		if got != tt.want || runewidth.StringWidth(got) > tt.width {
			t.Errorf("fitSnippet(%q, %v, %d) = %q, want %q", tt.snippet, tt.spans, tt.width, got, tt.want)
		}
	}
}

// TestSearchSessions: the search picker's read of the rest pages through
// the hits (more than a page of them here) and lists each session once,
// in the order of its newest hit, with that hit; with a filter, only the
// sessions it keeps.
func TestSearchSessions(t *testing.T) {
	ctx := context.Background()
	st := memstore.New(memstore.Options{})
	n := recall.MaxSearchLimit/2 + 10 // two hits a session: more hits than a page holds
	var keys []recall.Key
	for i := range n {
		key := recall.Key{Project: "p", Session: fmt.Sprintf("s%04d", i)}
		items := []recall.Item{recall.Message("user", fmt.Sprintf("needle %d", i)), recall.Message("assistant", "a needle again")}
		if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{Items: items}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
	}
	metas, hits, err := searchSessions(ctx, st, recall.SearchOptions{Query: "needle", Project: "p"}, nil)
	if err != nil || len(metas) != n || len(hits) != n {
		t.Fatalf("searchSessions: %d sessions, %d hits, %v; want %d", len(metas), len(hits), err, n)
	}
	for i, m := range metas {
		if want := keys[n-1-i]; m.Key != want || hits[i].key != want || hits[i].snippet != "a needle again" || len(hits[i].matches) != 1 {
			t.Fatalf("session %d: %v with hit %+v; want %v, newest first, with its newest hit", i, m.Key, hits[i], want)
		}
	}
	// With a filter, only the sessions it keeps, still each once.
	odd := func(m recall.Meta) bool { return m.Key.Session[len(m.Key.Session)-1]%2 == 1 }
	metas, hits, err = searchSessions(ctx, st, recall.SearchOptions{Query: "needle", Project: "p"}, odd)
	if err != nil || len(metas) != n/2 || len(hits) != n/2 {
		t.Fatalf("searchSessions of odd sessions: %d sessions, %d hits, %v; want %d", len(metas), len(hits), err, n/2)
	}
	for i, m := range metas {
		if !odd(m) || hits[i].key != m.Key {
			t.Fatalf("session %d: %v with hit %+v", i, m.Key, hits[i])
		}
	}
}
