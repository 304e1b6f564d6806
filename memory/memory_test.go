package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/memory"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/provider/openai"
)

func TestFileAppend(t *testing.T) {
	ctx := context.Background()
	f := memory.ForProject(filepath.Join(t.TempDir(), "projects", "p"))
	if text, err := f.Read(); text != "" || err != nil {
		t.Fatalf("Read of a missing file = %q, %v", text, err)
	}
	added, err := f.Append(ctx, "Use tabs.", "  - The API is v2 ", "", "use TABS")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(added, "|") != "Use tabs.|The API is v2" {
		t.Errorf("added %q", added)
	}
	if added, _ := f.Append(ctx, "the api is v2."); added != nil {
		t.Errorf("a duplicate was added: %q", added)
	}
	notes, err := f.Notes()
	if err != nil || strings.Join(notes, "|") != "Use tabs.|The API is v2" {
		t.Errorf("Notes = %q, %v", notes, err)
	}
	text, _ := f.Read()
	if !strings.HasPrefix(text, "# Project memory") || !strings.HasSuffix(text, "- Use tabs.\n- The API is v2\n") {
		t.Errorf("file:\n%s", text)
	}
}

// Concurrent appends (each with its own file and lock, as separate
// processes have) never interleave nor lose a note.
func TestFileConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), memory.FileName)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			f := &memory.File{Path: path}
			for i := range 20 {
				if _, err := f.Append(ctx, fmt.Sprintf("note %d of writer %d", i, w), fmt.Sprintf("second line %d/%d", w, i)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	text, _ := os.ReadFile(path)
	notes, _ := (&memory.File{Path: path}).Notes()
	if len(notes) != 8*20*2 {
		t.Fatalf("%d notes, want %d", len(notes), 8*20*2)
	}
	if strings.Count(string(text), "# Project memory") != 1 {
		t.Errorf("the header was written more than once")
	}
	// the two notes of one append are adjacent
	for i := 0; i < len(notes); i += 2 {
		var w, n int
		fmt.Sscanf(notes[i], "note %d of writer %d", &n, &w)
		if notes[i+1] != fmt.Sprintf("second line %d/%d", w, n) {
			t.Fatalf("appends interleaved at note %d: %q, %q", i, notes[i], notes[i+1])
		}
	}
}

func TestFileEdit(t *testing.T) {
	ctx := context.Background()
	f := &memory.File{Path: filepath.Join(t.TempDir(), memory.FileName)}
	f.Append(ctx, "one", "two")
	// an append while the editor is open is kept, after the edit
	err := f.Edit(ctx, func(text string) (string, error) {
		if _, err := f.Append(ctx, "three"); err != nil {
			t.Fatal(err)
		}
		return strings.Replace(text, "- one\n", "", 1), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if notes, _ := f.Notes(); strings.Join(notes, ",") != "two,three" {
		t.Errorf("after the edit: %q", notes)
	}
	// two edits at once: the second is refused, nothing lost
	err = f.Edit(ctx, func(text string) (string, error) {
		if err := f.Edit(ctx, func(string) (string, error) { return "- mine\n", nil }); err != nil {
			t.Fatal(err)
		}
		return text + "- theirs\n", nil
	})
	if !errors.Is(err, recall.ErrConflict) {
		t.Errorf("a conflicting edit = %v, want ErrConflict", err)
	}
	if notes, _ := f.Notes(); strings.Join(notes, ",") != "mine" {
		t.Errorf("after the conflict: %q", notes)
	}
	// an editor that fails writes nothing
	boom := errors.New("editor failed")
	if err := f.Edit(ctx, func(string) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Errorf("Edit = %v", err)
	}
	if notes, _ := f.Notes(); strings.Join(notes, ",") != "mine" {
		t.Errorf("after a failed edit: %q", notes)
	}
	if m, _ := filepath.Glob(f.Path + ".tmp-*"); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

func TestInstructions(t *testing.T) {
	if got := memory.Instructions("base", ""); got != "base" {
		t.Errorf("no memory: %q", got)
	}
	if got := memory.Instructions("base", "# Project memory\n\njust a header\n"); got != "base" {
		t.Errorf("memory without notes: %q", got)
	}
	got := memory.Instructions("base", "- keep it short\n")
	if !strings.HasPrefix(got, "base\n\n## Project memory") || !strings.Contains(got, "- keep it short") {
		t.Errorf("with memory: %q", got)
	}
	var long strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&long, "- note number %d\n", i)
	}
	got = memory.Instructions("", long.String())
	if len(got) > memory.MaxInjectBytes+500 || !strings.Contains(got, "note number 1999") || strings.Contains(got, "note number 10\n") {
		t.Errorf("long memory: %d bytes", len(got))
	}
	if !strings.Contains(got, "(older notes left out)\n- note number") {
		t.Errorf("long memory not cut on a line")
	}
}

func TestParseNotes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"NONE", ""},
		{"- NONE", ""},
		{"Here you go:\n- a\n* b\nnot a note\n-c", "a|b"},
		{"- 1\n- 2\n- 3\n- 4\n- 5\n- 6", "1|2|3|4|5"},
	} {
		if got := strings.Join(memory.ParseNotes(c.in), "|"); got != c.want {
			t.Errorf("ParseNotes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if n := memory.ParseNotes("- " + strings.Repeat("é", 400)); len([]rune(n[0])) != 301 {
		t.Errorf("a long note is %d runes", len([]rune(n[0])))
	}
}

// Notes runs once per exchange, at its end, and its notes reach the next
// session's system prompt.
func TestNotesThroughRun(t *testing.T) {
	ctx := context.Background()
	srv := fakeopenai.New()
	defer srv.Close()
	m, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "k", Model: "fake", API: openai.APIResponses, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	f := &memory.File{Path: filepath.Join(t.TempDir(), memory.FileName)}
	var added []string
	var failures []error
	notes := &memory.Notes{Model: m, File: f, OnNote: func(n string) { added = append(added, n) }, OnError: func(err error) { failures = append(failures, err) }}
	isNote := func(r fakeopenai.Request) bool { return r.Instructions() == memory.Prompt }
	srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		switch {
		case isNote(r):
			return fakeopenai.Reply{Text: "- The user prefers Go.\n- Deploys go through CI."}
		case strings.Contains(string(r.Input()[len(r.Input())-1]), "function_call_output"):
			return fakeopenai.Reply{Text: "done"}
		}
		return fakeopenai.Reply{ToolCalls: []fakeopenai.ToolCall{{Name: "look"}}}
	})
	a := &agent.Agent{Name: "t", Model: m, Tools: []agent.Tool{agent.Func("look", "looks", nil, func(context.Context, json.RawMessage) (string, error) { return "seen", nil })}}
	store := memstore.New(memstore.Options{})
	sess := recall.NewSession(store, recall.Key{Project: "p", Session: "one"})
	if _, err := agent.Run(ctx, a, agent.UserText("I like Go"), agent.RunOptions{Session: sess, OnPersist: memory.Hook(notes, nil)}); err != nil {
		t.Fatal(err)
	}
	var noteReqs []fakeopenai.Request
	for _, r := range srv.Requests() {
		if isNote(r) {
			noteReqs = append(noteReqs, r)
		}
	}
	if len(noteReqs) != 1 || len(failures) != 0 {
		t.Fatalf("%d note requests (want 1, after the last turn), failures %v", len(noteReqs), failures)
	}
	for _, want := range []string{"User: I like Go", "Tool call look", "Tool output: seen", "Assistant: done"} {
		if !strings.Contains(noteReqs[0].LastUserText(), want) {
			t.Errorf("note request lacks %q:\n%s", want, noteReqs[0].LastUserText())
		}
	}
	if strings.Join(added, "|") != "The user prefers Go.|Deploys go through CI." {
		t.Errorf("notes added %q", added)
	}

	// A new session starts with the notes in its system prompt.
	instr, err := f.Instructions("You help.")
	if err != nil {
		t.Fatal(err)
	}
	b := &agent.Agent{Name: "t", Instructions: instr, Model: m}
	srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		if isNote(r) {
			return fakeopenai.Reply{Text: "NONE"}
		}
		return fakeopenai.Reply{Text: "hello"}
	})
	if _, err := agent.Run(ctx, b, agent.UserText("hi"), agent.RunOptions{Session: recall.NewSession(store, recall.Key{Project: "p", Session: "two"}), OnPersist: memory.Hook(notes, nil)}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	first := reqs[len(reqs)-2] // then its note request
	if !strings.Contains(first.Instructions(), "- The user prefers Go.") || !strings.HasPrefix(first.Instructions(), "You help.") {
		t.Errorf("the new session's first request has instructions %q", first.Instructions())
	}
	if !strings.Contains(reqs[len(reqs)-1].LastUserText(), "Existing notes:\n- The user prefers Go.") {
		t.Errorf("the note request does not show the existing notes")
	}
	if n, _ := f.Notes(); len(n) != 2 {
		t.Errorf("NONE added notes: %q", n)
	}

	// A failing model never fails the run.
	srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		if isNote(r) {
			return fakeopenai.Reply{Status: 400, Error: "nope"}
		}
		return fakeopenai.Reply{Text: "hello"}
	})
	if _, err := agent.Run(ctx, b, agent.UserText("hi"), agent.RunOptions{Session: sess, OnPersist: memory.Hook(notes, nil)}); err != nil {
		t.Fatalf("a memory failure failed the run: %v", err)
	}
	if len(failures) != 1 {
		t.Errorf("failures reported: %v", failures)
	}
}
