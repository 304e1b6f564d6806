package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memory"
)

func isNoteRequest(r fakeopenai.Request) bool    { return r.Instructions() == memory.Prompt }
func isSummaryRequest(r fakeopenai.Request) bool { return r.Instructions() == compact.Prompt }

// agentRequests returns the requests of the chat agent itself: not for a
// title, a memory note or a summary.
func agentRequests(srv *fakeopenai.Server) []fakeopenai.Request {
	var out []fakeopenai.Request
	for _, r := range srv.Requests() {
		if !isTitleRequest(r) && !isNoteRequest(r) && !isSummaryRequest(r) {
			out = append(out, r)
		}
	}
	return out
}

// memoryServer is fakeServer (speaking api) whose memory requests answer
// a note about what the user said, and summary requests a summary.
func memoryServer(t *testing.T, e *env, api string) *fakeopenai.Server {
	srv := fakeServer(t, e, api)
	srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		switch {
		case isTitleRequest(r):
			return fakeopenai.Reply{Text: "A title"}
		case isNoteRequest(r) && strings.Contains(r.LastUserText(), "User: we deploy on Fridays"):
			return fakeopenai.Reply{Text: "- Deploys happen on Fridays."}
		case isNoteRequest(r):
			return fakeopenai.Reply{Text: "NONE"}
		case isSummaryRequest(r):
			return fakeopenai.Reply{Text: "the user said hello several times"}
		}
		return fakeopenai.Echo(r)
	})
	return srv
}

// `recall chat --memory` writes MEMORY.md next to the project's sessions,
// and a new session's first request carries its notes.
func TestChatMemory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := memoryServer(t, e, "responses")
	proj, err := recall.ProjectKey(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.home, "projects", proj, memory.FileName)

	// Off by default: no note request, no file.
	e.ok("", "chat", "-p", "we deploy on Fridays")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("MEMORY.md exists without --memory: %v", err)
	}
	for _, r := range srv.Requests() {
		if isNoteRequest(r) {
			t.Fatal("a note request without --memory")
		}
	}

	e.ok("", "chat", "--memory", "-p", "we deploy on Fridays")
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "- Deploys happen on Fridays.\n") {
		t.Fatalf("MEMORY.md = %q, %v", b, err)
	}
	r := e.ok("", "memory", "show")
	contains(t, "memory show", r.stdout, "- Deploys happen on Fridays.")
	contains(t, "memory show stderr", r.stderr, path)

	before := len(agentRequests(srv))
	e.ok("", "chat", "--memory", "-p", "hello again")
	reqs := agentRequests(srv)
	if len(reqs) != before+1 {
		t.Fatalf("%d agent requests, want %d", len(reqs), before+1)
	}
	first := reqs[before]
	if !strings.Contains(first.Instructions(), "Deploys happen on Fridays.") || !strings.Contains(first.Instructions(), "project directory") {
		t.Errorf("the new session's first request has instructions %q", first.Instructions())
	}
	if len(first.Input()) != 1 {
		t.Errorf("the new session's first request sent %d items", len(first.Input()))
	}
	// NONE adds nothing; notes are not repeated
	if notes, _ := (&memory.File{Path: path}).Notes(); len(notes) != 1 {
		t.Errorf("notes %q", notes)
	}
	// Without --memory the notes are not sent.
	e.ok("", "chat", "-p", "no memory")
	reqs = agentRequests(srv)
	if strings.Contains(reqs[len(reqs)-1].Instructions(), "Fridays") {
		t.Errorf("memory sent without --memory")
	}
}

func TestMemoryShowAndEdit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.ok("", "memory", "show")
	contains(t, "memory show stderr", r.stderr, "no memory yet")
	if r.stdout != "" {
		t.Errorf("memory show of nothing printed %q", r.stdout)
	}
	// The editor: a script that appends a note to the file it is given.
	e.vars = append(e.vars, `EDITOR=sh -c 'printf -- "- Use tabs.\n" >> "$1"' sh`)
	r = e.ok("", "memory", "edit")
	contains(t, "memory edit stderr", r.stderr, "saved ")
	r = e.ok("", "memory", "show", "--json")
	var v struct {
		Path  string   `json:"path"`
		Notes []string `json:"notes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || !slices.Equal(v.Notes, []string{"Use tabs."}) {
		t.Fatalf("memory show --json = %s, %v", r.stdout, err)
	}
	proj, _ := recall.ProjectKey(e.dir)
	if v.Path != filepath.Join(e.home, "projects", proj, memory.FileName) {
		t.Errorf("memory path %s", v.Path)
	}
	e.vars = append(e.vars, "EDITOR=false")
	e.fails(1, "editor", "memory", "edit")
}

// sessionWith makes a session of n exchanges through the fake server and
// returns its ID.
func sessionWith(t *testing.T, e *env, n int) string {
	t.Helper()
	e.ok("", "chat", "-p", "hello 0")
	for i := 1; i < n; i++ {
		e.ok("", "chat", "-c", "-p", "hello "+string(rune('0'+i)))
	}
	ms := e.ls()
	if len(ms) != 1 {
		t.Fatalf("%d sessions", len(ms))
	}
	return ms[0].Key.Session
}

func TestCompactCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := memoryServer(t, e, "chat") // no compact endpoint: a summary
	id := sessionWith(t, e, 4)

	r := e.ok("", "compact", id, "--keep", "2")
	contains(t, "compact", r.stdout, "compacted "+id+": 8 items -> 3 (6 summarized, 2 kept")
	_, items := e.show(id)
	if len(items) != 3 || !strings.HasPrefix(items[0].Text(), compact.SummaryPrefix+"the user said hello") || items[1].Text() != "hello 3" {
		t.Fatalf("view after compact: %q", texts(items))
	}
	// The next reply is sent the compacted view.
	e.ok("", "chat", "-c", "-p", "after")
	reqs := agentRequests(srv)
	if msgs := reqs[len(reqs)-1].Messages(); len(msgs) != 5 || msgs[0].Role != "system" || !strings.HasPrefix(msgs[1].Text, compact.SummaryPrefix) {
		t.Errorf("after compaction the model got %+v", msgs) // the system prompt, the summary, 2 kept, the input
	}
	// --full still shows what was compacted; jsonl keeps every entry.
	r = e.ok("", "show", id, "--full")
	contains(t, "show --full", r.stdout, "hello 0")
	contains(t, "show --full", r.stdout, "\nCompacted (summary): the 6 items before this point were replaced by 1 summary item and the newest 2 items kept.\n")
	r = e.ok("", "show", id, "--format", "jsonl")
	if n := strings.Count(r.stdout, "\n"); n < 12 {
		t.Errorf("jsonl has %d entries", n)
	}

	// --purge removes the replaced entries for good, without compacting
	// again; the view stays.
	r = e.ok("", "compact", id, "--purge")
	contains(t, "compact --purge", r.stdout, "purged ")
	if strings.Contains(r.stdout, "compact") {
		t.Errorf("compact --purge compacted again:\n%s", r.stdout)
	}
	r = e.ok("", "show", id, "--format", "jsonl")
	var firstEntry recall.Entry
	json.Unmarshal([]byte(strings.SplitN(r.stdout, "\n", 2)[0]), &firstEntry)
	if firstEntry.Kind != recall.KindCompaction {
		t.Errorf("after --purge the log starts with %s", firstEntry.Kind)
	}
	m, after := e.show(id)
	if len(after) != 5 || m.Title != "A title" {
		t.Errorf("after purge: %q, title %q", texts(after), m.Title)
	}
	r = e.ok("", "show", id, "--full")
	if strings.Contains(r.stdout, "hello 0") {
		t.Errorf("--full still shows purged items")
	}

	// Without a model there is nothing to summarize with.
	e.vars = nil
	e.fails(1, "needs a model", "compact", id)
}

// On the Responses API, the server's compact endpoint is used: the view
// becomes the server's items (the user messages and an opaque compaction
// item), and the next request carries them.
func TestCompactCommandWithEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := memoryServer(t, e, "responses")
	id := sessionWith(t, e, 3)
	r := e.ok("", "compact", id, "--keep", "2", "--json")
	var v struct {
		Compaction agent.CompactionResult `json:"compaction"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Compaction.Strategy != "openai" || v.Compaction.Summarized != 4 {
		t.Fatalf("compact --json = %s, %v", r.stdout, err)
	}
	e.ok("", "chat", "-c", "-p", "after")
	reqs := agentRequests(srv)
	in := reqs[len(reqs)-1].Input()
	// hello 0, hello 1 (kept by the server), the compaction item, the 2
	// items kept, the input
	if len(in) != 6 || !strings.Contains(string(in[2]), `"type":"compaction"`) {
		t.Errorf("after compaction the model got %s", in)
	}
}

func TestChatCompacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := memoryServer(t, e, "chat")
	// The first message is long: a compaction is written only when it
	// shrinks the session.
	first := "one" + strings.Repeat(", and more", 40)
	r := e.ok("/compact\n"+first+"\ntwo\nthree\nfour\nfive\nsix\n/compact keep the greetings\nseven\n", "chat")
	// /compact keeps the newest 10 items: nothing to do at first, then
	// the oldest 2 of 12 are summarized
	contains(t, "stderr", r.stderr, "nothing to compact")
	contains(t, "stderr", r.stderr, ": 12 items -> 11 (2 summarized, 10 kept")
	var summary fakeopenai.Request
	for _, q := range srv.Requests() {
		if isSummaryRequest(q) {
			summary = q
		}
	}
	if !strings.Contains(summary.LastUserText(), "keep the greetings") {
		t.Errorf("/compact's instructions did not reach the summary request")
	}
	reqs := agentRequests(srv)
	if msgs := reqs[len(reqs)-1].Messages(); len(msgs) != 13 || !strings.HasPrefix(msgs[1].Text, compact.SummaryPrefix) || msgs[12].Text != "seven" {
		t.Errorf("after /compact the model got %+v", msgs) // the system prompt, the summary, 10 kept, the input
	}

	// --compact-tokens compacts before a reply once the history is large
	r = e.ok("", "chat", "-c", "--compact-tokens", "100", "-p", "five")
	contains(t, "stderr", r.stderr, "(compacted ")
	reqs = agentRequests(srv)
	if msgs := reqs[len(reqs)-1].Messages(); len(msgs) != 13 || !strings.HasPrefix(msgs[1].Text, compact.SummaryPrefix) {
		t.Errorf("after --compact-tokens the model got %+v", msgs)
	}
}

func TestShowSubagents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "parent message")
	id := e.ls()[0].Key.Session
	st, err := filestore.Open(filestore.Options{Dir: e.home})
	if err != nil {
		t.Fatal(err)
	}
	proj, _ := recall.ProjectKey(e.dir)
	ctx := context.Background()
	for i, text := range []string{"first task", "second task"} {
		k := recall.Key{Project: proj, Session: id, Subpath: "subagents/helper-" + string(rune('1'+i))}
		if err := recall.NewSession(st, k).AddItems(ctx, recall.Message("user", text), recall.Message("assistant", "did "+text)); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	if ms := e.ls(); len(ms) != 1 {
		t.Fatalf("ls lists %d sessions; records are not main sessions", len(ms))
	}
	r := e.ok("", "show", id)
	if strings.Contains(r.stdout, "first task") {
		t.Errorf("show without --subagents prints records")
	}
	r = e.ok("", "show", id, "--subagents")
	contains(t, "show --subagents", r.stdout, "═══ subagent subagents/helper-1 (2 items) ═══")
	contains(t, "show --subagents", r.stdout, "did second task")
	if i, j := strings.Index(r.stdout, "helper-1"), strings.Index(r.stdout, "helper-2"); i > j {
		t.Errorf("records out of order")
	}
	r = e.ok("", "show", id, "--subagents", "--json")
	var v struct {
		Subagents []subagentRecord `json:"subagents"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Subagents) != 2 || len(v.Subagents[1].Items) != 2 {
		t.Errorf("show --subagents --json = %s, %v", r.stdout, err)
	}
	// moving the parent to the trash keeps the records; purging it
	// removes them
	e.ok("", "rm", id)
	if _, err := os.Stat(filepath.Join(e.home, "projects", proj, id)); err != nil {
		t.Errorf("records gone after rm to the trash: %v", err)
	}
	e.ok("", "rm", "--purge", id)
	if _, err := os.Stat(filepath.Join(e.home, "projects", proj, id)); !os.IsNotExist(err) {
		t.Errorf("records left after rm --purge: %v", err)
	}
}
