package recallmcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
)

func TestListTools(t *testing.T) {
	st := newStore(t)
	for _, tc := range []struct {
		write bool
		want  []string
	}{
		{false, []string{"list_sessions", "read_session", "search_sessions"}},
		{true, []string{"list_sessions", "pin_session", "read_session", "redo_session", "rewind_session", "search_sessions", "title_session"}},
	} {
		cs := connect(t, st, Options{AllowWrite: tc.write})
		if ir := cs.InitializeResult(); ir.Instructions == "" || ir.Capabilities.Tools == nil || ir.Capabilities.Resources == nil {
			t.Errorf("initialize: instructions %q, capabilities %+v", ir.Instructions, ir.Capabilities)
		}
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if len(tool.Description) < 40 {
				t.Errorf("%s: description %q is too thin for a model", tool.Name, tool.Description)
			}
			var schema struct {
				Type       string `json:"type"`
				Properties map[string]struct {
					Description string `json:"description"`
				} `json:"properties"`
				Required []string `json:"required"`
			}
			b, _ := json.Marshal(tool.InputSchema)
			if err := json.Unmarshal(b, &schema); err != nil || schema.Type != "object" || len(schema.Properties) == 0 {
				t.Errorf("%s: input schema %s", tool.Name, b)
			}
			for name, p := range schema.Properties {
				if p.Description == "" {
					t.Errorf("%s: argument %s has no description", tool.Name, name)
				}
			}
			if tool.OutputSchema == nil {
				t.Errorf("%s: no output schema", tool.Name)
			}
			if !tc.write && (tool.Annotations == nil || !tool.Annotations.ReadOnlyHint) {
				t.Errorf("%s: not annotated read-only", tool.Name)
			}
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.want) {
			t.Errorf("AllowWrite %t: tools %v, want %v", tc.write, names, tc.want)
		}
	}
}

func TestSearchSessions(t *testing.T) {
	st := newStore(t)
	seed(t, st, "home", "s-cjk-0001", "身份", "我叫张三，住在北京", "你好，张三")
	seed(t, st, "home", "s-parser-01", "Parser decisions", "what did we decide about the parser?", "We decided the parser reads tokens lazily.")
	seed(t, st, "work", "s-parser-02", "", "the parser crashes on empty input", "fixed by a guard")
	cs := connect(t, st, Options{Project: "home"})

	var out SearchOutput
	txt := callOK(t, cs, "search_sessions", map[string]any{"query": "张三"}, &out)
	if len(out.Hits) != 2 || out.Scope != "home" {
		t.Fatalf("张三: %d hits in %s, want 2 in home\n%s", len(out.Hits), out.Scope, txt)
	}
	for _, h := range out.Hits {
		if h.Session != "s-cjk-0001" || !strings.Contains(h.Snippet, "张三") || h.Item == "" {
			t.Errorf("张三 hit %+v", h)
		}
	}
	if !strings.Contains(txt, quotePrefix+"我叫张三，住在北京") {
		t.Errorf("the text does not quote the snippet:\n%s", txt)
	}

	// The default project only; "all" every project.
	callOK(t, cs, "search_sessions", map[string]any{"query": "parser"}, &out)
	if got := hitSessions(out); !slices.Equal(got, []string{"s-parser-01"}) {
		t.Errorf("parser in home: sessions %v", got)
	}
	txt = callOK(t, cs, "search_sessions", map[string]any{"query": "parser", "project": "all"}, &out)
	if got := hitSessions(out); !slices.Equal(got, []string{"s-parser-01", "s-parser-02"}) || out.Scope != "all" {
		t.Errorf("parser in all: sessions %v, scope %s", got, out.Scope)
	}
	if !strings.Contains(txt, "project work") {
		t.Errorf("a search of every project does not name the projects:\n%s", txt)
	}
	callOK(t, cs, "search_sessions", map[string]any{"query": "parser", "project": "work", "role": "user"}, &out)
	if len(out.Hits) != 1 || out.Hits[0].Role != "user" || out.Hits[0].Project != "work" {
		t.Errorf("parser in work by user: %+v", out.Hits)
	}
	callOK(t, cs, "search_sessions", map[string]any{"query": "parser", "since": "1h"}, &out)
	if len(out.Hits) == 0 {
		t.Error("since 1h finds nothing written just now")
	}
	callOK(t, cs, "search_sessions", map[string]any{"query": "parser", "since": "2099-01-01"}, &out)
	if len(out.Hits) != 0 {
		t.Errorf("since 2099: %d hits", len(out.Hits))
	}

	// Paging: one hit a page, every hit once.
	var seen []string
	cursor := ""
	for range 10 {
		args := map[string]any{"query": "parser", "project": "all", "limit": 1}
		if cursor != "" {
			args["cursor"] = cursor
		}
		callOK(t, cs, "search_sessions", args, &out)
		for _, h := range out.Hits {
			seen = append(seen, h.Session+"/"+h.Item)
		}
		if cursor = out.NextCursor; cursor == "" {
			break
		}
	}
	var all SearchOutput
	callOK(t, cs, "search_sessions", map[string]any{"query": "parser", "project": "all", "limit": 50}, &all)
	if len(seen) != len(all.Hits) || len(seen) < 3 || len(slices.Compact(slices.Sorted(slices.Values(seen)))) != len(seen) {
		t.Errorf("paging one by one saw %v; one page holds %d hits", seen, len(all.Hits))
	}

	// Bad arguments are tool errors a model can act on.
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"query": ""}, "query"},
		{map[string]any{"query": `"open quote`}, "query"},
		{map[string]any{}, "query"},
		{map[string]any{"query": "x", "role": "robot"}, "role"},
		{map[string]any{"query": "x", "limit": 500}, "limit"},
		{map[string]any{"query": "x", "limit": "ten"}, "limit"},
		{map[string]any{"query": "x", "since": "yesterday"}, "since"},
		{map[string]any{"query": "x", "cursor": "not-a-cursor"}, "cursor"},
		{map[string]any{"query": "x", "project": "no/slash"}, "project"},
	} {
		callErr(t, cs, "search_sessions", tc.args, tc.want)
	}
}

func hitSessions(out SearchOutput) []string {
	var ids []string
	for _, h := range out.Hits {
		ids = append(ids, h.Session)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

func TestListSessions(t *testing.T) {
	st := newStore(t)
	for i := range 30 {
		seed(t, st, "home", fmt.Sprintf("s-%04d", i), fmt.Sprintf("Session number %d", i), fmt.Sprintf("first prompt of session %d", i), "an answer")
	}
	seed(t, st, "other", "s-other", "Elsewhere", "a prompt elsewhere")
	long := strings.Repeat("长", 300) // 900 bytes
	seed(t, st, "home", "s-long-prompt", "", long)
	cs := connect(t, st, Options{Project: "home"})

	var out ListOutput
	txt := callOK(t, cs, "list_sessions", map[string]any{"limit": 5}, &out)
	if len(out.Sessions) != 5 || out.NextCursor == "" {
		t.Fatalf("limit 5: %d sessions, next %q", len(out.Sessions), out.NextCursor)
	}
	first := out.Sessions[0]
	if first.ID != "s-long-prompt" || len(first.FirstPrompt) > recall.MaxFirstPrompt+len("…") || !strings.HasPrefix(long, strings.TrimSuffix(first.FirstPrompt, "…")) {
		t.Errorf("newest session %+v", first)
	}
	if s := out.Sessions[1]; s.FirstPrompt != "first prompt of session 29" || s.Title != "Session number 29" || s.Items != 2 || s.URI != "recall://sessions/home/s-0029" {
		t.Errorf("second session %+v", s)
	}
	if !strings.Contains(txt, quotePrefix+"first prompt of session 29") {
		t.Errorf("text does not quote the first prompt:\n%s", txt)
	}

	// Every session of the project once, page by page.
	var ids []string
	cursor := ""
	for {
		args := map[string]any{"limit": 7}
		if cursor != "" {
			args["cursor"] = cursor
		}
		callOK(t, cs, "list_sessions", args, &out)
		for _, s := range out.Sessions {
			ids = append(ids, s.ID)
			if s.Project != "home" {
				t.Errorf("listed %s of project %s", s.ID, s.Project)
			}
		}
		if cursor = out.NextCursor; cursor == "" {
			break
		}
	}
	if len(ids) != 31 || len(slices.Compact(slices.Sorted(slices.Values(ids)))) != 31 {
		t.Errorf("paging listed %d sessions: %v", len(ids), ids)
	}
	callOK(t, cs, "list_sessions", map[string]any{"project": "all", "limit": 100}, &out)
	if len(out.Sessions) != 32 {
		t.Errorf("all: %d sessions, want 32", len(out.Sessions))
	}

	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"limit": -1}, "limit"},
		{map[string]any{"limit": 101}, "limit"},
		{map[string]any{"cursor": "garbage"}, "cursor"},
		{map[string]any{"project": "a b"}, "project"},
		{map[string]any{"archived": "yes"}, "archived"},
	} {
		callErr(t, cs, "list_sessions", tc.args, tc.want)
	}
}

// TestResultCap checks that no result's text is longer than the cap, and
// that a cut page still lets the reader go on to everything.
func TestResultCap(t *testing.T) {
	st := newStore(t)
	big := strings.Repeat("word ", 2000) // 10,000 characters
	// Under -short, 12 sessions: each capped listing and search still
	// takes several pages (each call scans every session here).
	n := testkit.Size(12, 40)
	for i := range n {
		seed(t, st, "p", fmt.Sprintf("s-%04d", i), strings.Repeat("T", 150), big+"needle "+big, big)
	}
	const max = 3000
	cs := connect(t, st, Options{Project: "p", MaxResultChars: max})
	// capped calls a tool and checks that its whole result, text and
	// structured JSON, is within the cap.
	capped := func(name string, args map[string]any, out any) string {
		t.Helper()
		txt := callOK(t, cs, name, args, out)
		res := call(t, cs, name, args)
		b, _ := json.Marshal(res.StructuredContent)
		if n := chars(txt) + chars(string(b)); n > max {
			t.Errorf("%s %v: %d characters (%d text), cap %d", name, args, n, chars(txt), max)
		}
		return txt
	}

	var list ListOutput
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		args := map[string]any{"limit": 100}
		if cursor != "" {
			args["cursor"] = cursor
		}
		capped("list_sessions", args, &list)
		for _, s := range list.Sessions {
			ids = append(ids, s.ID)
		}
		if cursor = list.NextCursor; cursor == "" {
			if pages == 0 {
				t.Errorf("%d sessions fit one capped page", n)
			}
			break
		}
	}
	if len(ids) != n {
		t.Errorf("the capped pages listed %d sessions, want %d", len(ids), n)
	}

	var hits []string
	var out SearchOutput
	cursor = ""
	for {
		args := map[string]any{"query": "needle", "limit": 50}
		if cursor != "" {
			args["cursor"] = cursor
		}
		capped("search_sessions", args, &out)
		for _, h := range out.Hits {
			hits = append(hits, h.Session)
		}
		if cursor = out.NextCursor; cursor == "" {
			break
		}
	}
	if len(hits) != n {
		t.Errorf("the capped search pages found %d hits, want %d", len(hits), n)
	}

	var read ReadOutput
	var seen int
	args := map[string]any{"id": "s-0001", "limit": 200}
	for {
		capped("read_session", args, &read)
		seen += len(read.Items)
		if read.Older == "" {
			break
		}
		args["before"] = read.Older
	}
	if seen != 2 {
		t.Errorf("read %d items of s-0001 in capped pages, want 2", seen)
	}
	txt := capped("read_session", map[string]any{"id": "s-0001"}, &read)
	if len(read.Items) == 0 || read.Items[0].Omitted == 0 || !strings.Contains(txt, "more characters") {
		t.Errorf("a 10,000-character message is not shortened: %+v", read.Items)
	}
}

func TestWriteTools(t *testing.T) {
	st := newStore(t)
	key := seed(t, st, "p", "0199aaaa-write", "old title", "hello")
	ctx := context.Background()

	ro := connect(t, st, Options{Project: "p"})
	for _, name := range []string{"title_session", "pin_session", "rewind_session", "redo_session"} {
		_, err := ro.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"id": key.Session, "title": "x", "to": "0"}})
		if err == nil {
			t.Errorf("read-only server ran %s", name)
		}
	}
	if m, _ := st.Stat(ctx, key); m.Title != "old title" || m.Pinned || m.ItemCount != 1 {
		t.Fatalf("read-only server changed the session: %+v", m)
	}

	rw := connect(t, st, Options{Project: "p", AllowWrite: true})
	var out ChangeOutput
	callOK(t, rw, "title_session", map[string]any{"id": "0199aaaa", "title": "New title"}, &out)
	callOK(t, rw, "pin_session", map[string]any{"id": "0199aaaa"}, &out)
	m, err := st.Stat(ctx, key)
	if err != nil || m.Title != "New title" || m.TitleSource != recall.TitleUser || !m.Pinned || !out.Session.Pinned {
		t.Errorf("after title and pin: %+v, %v; output %+v", m, err, out)
	}
	callOK(t, rw, "pin_session", map[string]any{"id": key.Session, "pinned": false}, &out)
	if m, _ := st.Stat(ctx, key); m.Pinned {
		t.Error("pinned false left it pinned")
	}
	callErr(t, rw, "title_session", map[string]any{"id": "nope", "title": "x"}, "no session")
	callErr(t, rw, "title_session", map[string]any{"id": key.Session, "title": "bad \x00 nul"}, "title")
	callErr(t, rw, "pin_session", map[string]any{"id": ""}, "id")
	callErr(t, rw, "pin_session", map[string]any{"id": key.Session, "pinned": "yes"}, "pinned")
	if m, _ := st.Stat(ctx, key); m.Title != "New title" {
		t.Errorf("a refused title changed it to %q", m.Title)
	}
}

func TestRewindTools(t *testing.T) {
	st := newStore(t)
	ctx := context.Background()
	key := recall.Key{Project: "p", Session: "0199bbbb-rewind"}
	sess := recall.NewSession(st, key)
	if err := sess.AddItems(ctx, recall.Message("user", "one"), recall.Message("assistant", "two"), recall.Message("user", "three")); err != nil {
		t.Fatal(err)
	}
	before, _ := sess.GetItems(ctx, 0)
	rw := connect(t, st, Options{Project: "p", AllowWrite: true})
	var out ViewChangeOutput
	callOK(t, rw, "rewind_session", map[string]any{"id": "0199bbbb", "to": "1"}, &out)
	if got, _ := sess.GetItems(ctx, 0); out.Items != 2 || len(got) != 1 || out.Session.Items != 1 {
		t.Errorf("after rewind_session to 1: output %+v, view %d items", out, len(got))
	}
	callOK(t, rw, "redo_session", map[string]any{"id": key.Session}, &out)
	if got, _ := sess.GetItems(ctx, 0); out.Items != 2 || !slices.EqualFunc(got, before, slices.Equal) {
		t.Errorf("after redo_session: output %+v, view %q", out, got)
	}
	callErr(t, rw, "redo_session", map[string]any{"id": key.Session}, "nothing to redo")
	callErr(t, rw, "rewind_session", map[string]any{"id": key.Session, "to": "2"}, "not in session")
	callErr(t, rw, "rewind_session", map[string]any{"id": key.Session, "to": "x"}, "not an item ref")
	callErr(t, rw, "rewind_session", map[string]any{"id": "nope", "to": "1"}, "no session")
	callOK(t, rw, "rewind_session", map[string]any{"id": key.Session, "to": "0"}, &out)
	if got, _ := sess.GetItems(ctx, 0); out.Items != 3 || len(got) != 0 {
		t.Errorf("after rewind_session to 0: output %+v, view %d items", out, len(got))
	}
}
