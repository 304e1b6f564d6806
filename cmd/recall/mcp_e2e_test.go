package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/recallmcp"
)

// mcpClient starts "recall mcp args..." in the project directory as a
// subprocess and connects the official SDK's client to it over stdio.
func (e *env) mcpClient(args ...string) *mcp.ClientSession {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"mcp"}, args...)...)
	cmd.Dir = e.dir
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(e.home, "user"),
		"RECALL_HOME=" + e.home,
		"GORACE=atexit_sleep_ms=0",
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	e.t.Cleanup(cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		e.t.Fatalf("recall mcp: %v\n%s", err, stderr.String())
	}
	e.t.Cleanup(func() {
		if err := cs.Close(); err != nil {
			e.t.Errorf("recall mcp did not exit cleanly: %v\n%s", err, stderr.String())
		}
		if stderr.Len() > 0 {
			e.t.Errorf("recall mcp wrote to stderr:\n%s", stderr.String())
		}
	})
	return cs
}

// mcpStore opens the env's file store, for a test to write sessions the
// server then reads, and to check what it did not write.
func (e *env) mcpStore() recall.Store {
	e.t.Helper()
	st, err := filestore.Open(filestore.Options{Dir: e.home})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: protocol error %v", name, args, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if out != nil && !res.IsError {
		raw, _ := json.Marshal(res.StructuredContent)
		reflect.ValueOf(out).Elem().SetZero() // a reused output keeps no stale field
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s: structured output %s: %v", name, raw, err)
		}
	}
	return b.String(), res.IsError
}

// TestMcpStdio drives "recall mcp" as agents run it: a subprocess on stdio,
// in a project directory, over the file store.
func TestMcpStdio(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.mcpStore()
	ctx := context.Background()
	here, err := recall.ProjectKey(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate := func(key recall.Key, title string, items ...recall.Item) {
		t.Helper()
		if _, err := recall.NewSession(st, key).Create(ctx, recall.CreateOptions{Title: title, Items: items}); err != nil {
			t.Fatal(err)
		}
	}
	mustCreate(recall.Key{Project: here, Session: "0199aaaa-cjk"}, "自我介绍",
		recall.Message("user", "我叫张三，住在北京"), recall.Message("assistant", "你好，张三！"))
	mustCreate(recall.Key{Project: "elsewhere", Session: "0199bbbb-other"}, "Other project",
		recall.Message("user", "张三 also appears elsewhere"))
	const n = 10000
	long := recall.Key{Project: here, Session: "0199cccc-long"}
	items := make([]recall.Item, n)
	for i := range items {
		items[i] = recall.Message("user", fmt.Sprintf("line %05d", i+1))
	}
	if _, err := st.Append(ctx, long, recall.Guard{}, recall.ItemEntries(items...)...); err != nil {
		t.Fatal(err)
	}
	before := lastSeqs(t, st)

	cs := e.mcpClient()
	if ir := cs.InitializeResult(); ir.ServerInfo.Name != "recall" || ir.Instructions == "" {
		t.Errorf("initialize: %+v", ir.ServerInfo)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("%s: no description or schema", tool.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"list_sessions", "read_session", "search_sessions"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}

	// Search: this project by default, every project on request, in CJK.
	var search recallmcp.SearchOutput
	txt, _ := mcpCall(t, cs, "search_sessions", map[string]any{"query": "张三"}, &search)
	if len(search.Hits) != 2 || search.Hits[0].Session != "0199aaaa-cjk" || !strings.Contains(txt, "我叫张三，住在北京") {
		t.Errorf("张三 here: %+v\n%s", search.Hits, txt)
	}
	mcpCall(t, cs, "search_sessions", map[string]any{"query": "张三", "project": "all"}, &search)
	if len(search.Hits) != 3 {
		t.Errorf("张三 everywhere: %d hits, want 3", len(search.Hits))
	}
	if txt, isErr := mcpCall(t, cs, "search_sessions", map[string]any{"query": `"unclosed`}, nil); !isErr || !strings.Contains(txt, "query") {
		t.Errorf("bad query: error %t, %q", isErr, txt)
	}

	var list recallmcp.ListOutput
	mcpCall(t, cs, "list_sessions", nil, &list)
	if len(list.Sessions) != 2 || list.Sessions[1].FirstPrompt != "我叫张三，住在北京" {
		t.Errorf("list_sessions: %+v", list.Sessions)
	}
	if txt, isErr := mcpCall(t, cs, "list_sessions", map[string]any{"limit": 1000}, nil); !isErr || !strings.Contains(txt, "limit") {
		t.Errorf("bad limit: error %t, %q", isErr, txt)
	}

	// Read the 10,000-item session from its newest page back to its
	// first item, 200 at a time, by a unique ID prefix.
	var read recallmcp.ReadOutput
	var got []string
	args := map[string]any{"id": "0199cccc", "limit": 200}
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("paging does not end")
		}
		txt, isErr := mcpCall(t, cs, "read_session", args, &read)
		if isErr || len([]rune(txt)) > recallmcp.DefaultMaxResultChars || len(read.Items) < 50 && read.Older != "" {
			t.Fatalf("page %d: error %t, %d characters, %d items", pages, isErr, len([]rune(txt)), len(read.Items))
		}
		var page []string
		for _, it := range read.Items {
			page = append(page, it.Text)
		}
		got = append(page, got...)
		if read.Older == "" {
			break
		}
		args = map[string]any{"id": "0199cccc", "limit": 200, "before": read.Older}
	}
	if len(got) != n || got[0] != "line 00001" || got[n-1] != fmt.Sprintf("line %05d", n) {
		t.Fatalf("read %d items, first %q", len(got), got[0])
	}
	for i, s := range got {
		if s != fmt.Sprintf("line %05d", i+1) {
			t.Fatalf("item %d is %q", i+1, s)
		}
	}
	if txt, isErr := mcpCall(t, cs, "read_session", map[string]any{"id": "0199"}, nil); !isErr || !strings.Contains(txt, "matches 3 sessions") {
		t.Errorf("ambiguous prefix: error %t, %q", isErr, txt)
	}

	// Resources.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "recall://sessions/" + here + "/0199aaaa-cjk"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "我叫张三") {
		t.Errorf("resource: %v", err)
	}

	// No write tool, and nothing written.
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "title_session", Arguments: map[string]any{"id": "0199aaaa", "title": "x"}}); err == nil {
		t.Error("title_session ran without --allow-write")
	}
	if after := lastSeqs(t, st); !slices.Equal(before, after) {
		t.Errorf("the read-only server wrote: %v, then %v", before, after)
	}
}

// lastSeqs lists every session of st with its last seq.
func lastSeqs(t *testing.T, st recall.Store) []string {
	t.Helper()
	page, err := st.List(context.Background(), "", recall.ListOptions{Limit: -1, IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range page.Sessions {
		out = append(out, fmt.Sprintf("%s@%d", m.Key, m.LastSeq))
	}
	slices.Sort(out)
	return out
}

func TestMcpAllowWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.mcpStore()
	key := recall.Key{Project: "proj", Session: "0199dddd-write"}
	if _, err := recall.NewSession(st, key).Create(context.Background(), recall.CreateOptions{Items: []recall.Item{recall.Message("user", "hi")}}); err != nil {
		t.Fatal(err)
	}
	cs := e.mcpClient("--allow-write", "--all")
	var out recallmcp.ChangeOutput
	if txt, isErr := mcpCall(t, cs, "title_session", map[string]any{"id": "0199dddd", "title": "Greeting"}, &out); isErr {
		t.Fatal(txt)
	}
	if txt, isErr := mcpCall(t, cs, "pin_session", map[string]any{"id": "0199dddd"}, &out); isErr {
		t.Fatal(txt)
	}
	m, err := st.Stat(context.Background(), key)
	if err != nil || m.Title != "Greeting" || !m.Pinned {
		t.Errorf("after title_session and pin_session: %+v %v", m, err)
	}
	if txt, isErr := mcpCall(t, cs, "pin_session", map[string]any{"id": "nope"}, nil); !isErr || !strings.Contains(txt, "no session") {
		t.Errorf("pin an unknown session: error %t, %q", isErr, txt)
	}
}

func TestMcpUsage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fails(2, "unknown command", "mcp", "extra")
	e.fails(2, "--max-chars", "mcp", "--max-chars", "10")
	e.fails(2, "--all and --project", "mcp", "--all", "--project", e.dir)
	e.fails(1, "project directory", "mcp", "--project", filepath.Join(e.dir, "missing"))
}

// TestMcpBadLines: a line that is not JSON, or JSON that is no message,
// gets JSON-RPC's error answer, and the session goes on.
func TestMcpBadLines(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cmd := exec.Command(e.bin, "mcp")
	cmd.Dir = e.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(e.home, "user"), "RECALL_HOME=" + e.home}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() }) // when the test fails midway
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s: recall mcp closed its output (%v)\n%s", what, cmd.Wait(), stderr.String())
			}
			return l
		case <-time.After(time.Minute):
			t.Fatalf("%s: no answer within a minute", what)
		}
		return ""
	}
	for _, c := range []struct{ line, code string }{
		{"not json", "-32700"}, {`{"jsonrpc":"2.0","id":1,`, "-32700"}, {"42", "-32600"}, {`"initialize"`, "-32600"},
	} {
		fmt.Fprintln(stdin, c.line)
		if got := next(c.line); !strings.Contains(got, `"id":null`) || !strings.Contains(got, `"code":`+c.code) {
			t.Errorf("%q: answered %s, want error %s", c.line, got, c.code)
		}
	}
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if got := next("initialize"); !strings.Contains(got, `"id":7`) || !strings.Contains(got, `"result"`) {
		t.Errorf("initialize after the bad lines: %s", got)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("recall mcp: %v\n%s", err, stderr.String())
	}
}
