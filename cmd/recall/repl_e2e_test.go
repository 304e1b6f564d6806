package main

// What a person sees in the REPL: the binary runs on a real
// pseudo-terminal (pty_test.go) and the tests type keys.

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fakeopenai"
)

// replLs lists the project's sessions, newest first, reading either shape
// of ls --json (a bare array or {"sessions": [...]}).
func replLs(e *env) []recall.Meta {
	e.t.Helper()
	r := e.ok("", "ls", "--json")
	var metas []recall.Meta
	if err := json.Unmarshal([]byte(r.stdout), &metas); err == nil {
		return metas
	}
	var page struct {
		Sessions []recall.Meta `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		e.t.Fatalf("ls --json: %v\n%s", err, r.stdout)
	}
	return page.Sessions
}

// userTexts returns the text of the user messages of the project's newest
// session.
func userTexts(e *env) []string {
	e.t.Helper()
	ms := replLs(e)
	if len(ms) == 0 {
		e.t.Fatal("no session stored")
	}
	_, items := e.show(ms[0].Key.Session)
	var out []string
	for _, it := range items {
		if it.Type() == "message" && it.Role() == "user" {
			out = append(out, it.Text())
		}
	}
	return out
}

// The line editor: typing, arrows, word and line deletion, history.
func TestReplLineEditor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.startPty("chat")
	p.reply("Ctrl-D leaves")
	// Left moves into the text: "helo" with "l" inserted before the "o".
	p.send("helo" + keyLeft + "l" + keyEnter)
	p.reply("You said: hello")
	// Ctrl-U drops the line, Ctrl-W the last word.
	p.send("garbage" + keyCtrlU + "one two" + keyCtrlW + "three" + keyEnter)
	p.reply("You said: one three")
	// Up recalls the last message; Home then types at its start.
	p.send(keyUp + keyHome + "again " + keyEnter)
	p.reply("You said: again one three")
	// Words that name keys are text.
	p.send("up" + keyEnter)
	p.reply("You said: up")
	p.send(keyUp + keyUp + keyEnter)
	p.reply("You said: again one three")
	p.send(keyCtrlD)
	code, out := p.wait()
	if code != 0 {
		t.Fatalf("Ctrl-D on an empty line: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "^[") || strings.Contains(out, "^L") {
		t.Errorf("raw key codes on screen:\n%s", out)
	}
	// The history is kept across runs, per project, in a file.
	p = e.startPty("chat")
	p.reply("Ctrl-D leaves")
	p.send(keyUp + keyEnter)
	p.reply("You said: again one three")
	p.send(keyCtrlD)
	if code, out := p.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	proj, err := project(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(historyFile(e.home, proj)); err != nil || !strings.Contains(string(b), `"again one three"`) {
		t.Errorf("history file: %v %q", err, b)
	}
	// Another project has its own history: Up finds nothing there.
	e.dir = t.TempDir()
	p = e.startPty("chat")
	p.reply("Ctrl-D leaves")
	p.send(keyUp + "fresh" + keyEnter)
	p.reply("You said: fresh")
	p.send(keyCtrlD)
	p.wait()
	if got := userTexts(e); len(got) != 1 || got[0] != "fresh" {
		t.Errorf("other project's messages %q, want [fresh]", got)
	}
}

// Multi-line input: Alt-Enter, a trailing backslash, and a paste whose
// newlines do not send it.
func TestReplMultiLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.startPty("chat")
	p.reply("Ctrl-D leaves")
	p.send("line one" + keyAltRet + "line two" + keyEnter)
	p.reply("You said: line one")
	p.send(`first\` + keyEnter + "second" + keyEnter)
	p.reply("You said: first")
	p.send(paste("pasted a\npasted b\n"))
	p.expect(". ") // the paste became three lines, unsent
	p.send(" end" + keyEnter)
	p.reply("You said: pasted a")
	p.send(keyCtrlD)
	if code, out := p.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	got := userTexts(e)
	want := []string{"line one\nline two", "first\nsecond", "pasted a\npasted b\n end"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("messages %q, want %q", got, want)
	}
}

// A message of several lines shows every line while it is written, typed
// or pasted. Ctrl-L repaints the screen whole, so what follows it is what
// the screen shows.
func TestReplMultiLineOnScreen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.startPty("chat")
	p.reply("Ctrl-D leaves")
	p.send("x1" + keyCtrlJ + "y2")
	p.expect("y2")
	p.send(keyCtrlL)
	p.expect("> x1", ". y2")
	p.send(keyEnter)
	p.reply("You said: x1")
	p.send(paste("p1\np2\np3"))
	p.expect("p3")
	p.send(keyCtrlL)
	p.expect("> p1", ". p2", ". p3")
	p.send(keyEnter)
	p.reply("You said: p1")
	p.leave()
	if got, want := userTexts(e), []string{"x1\ny2", "p1\np2\np3"}; !slices.Equal(got, want) {
		t.Errorf("messages %q, want %q", got, want)
	}
}

// Ctrl-C clears a line; twice on an empty line it leaves with 130.
// Ctrl-D with text does nothing.
func TestReplCtrlKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	p := e.startPty("chat")
	p.reply("Ctrl-D leaves")
	p.send("abc" + keyCtrlC + "xyz" + keyEnter)
	p.reply("You said: xyz")
	p.send("ab" + keyCtrlD + "cd" + keyEnter)
	p.reply("You said: abcd")
	p.send(keyCtrlC)
	p.reply("Ctrl-C again")
	p.send(keyCtrlC)
	code, out := p.wait()
	if code != 130 {
		t.Errorf("Ctrl-C twice: exit %d, want 130\n%s", code, out)
	}
	if got := userTexts(e); strings.Join(got, "|") != "xyz|abcd" {
		t.Errorf("messages %q, want [xyz abcd]", got)
	}
}

// A slow reply shows a spinner until the first token; Ctrl-C stops the
// reply, keeps the message, and the REPL goes on.
func TestReplSpinnerAndInterrupt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := fakeServer(t, e, "responses")
	srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		if isTitleRequest(r) {
			return fakeopenai.Reply{Text: "Slow one"}
		}
		if strings.Contains(r.LastUserText(), "slow") {
			return fakeopenai.Reply{Hang: true}
		}
		return fakeopenai.Echo(r)
	})
	p := e.startPty("chat")
	p.reply("Ctrl-D leaves")
	p.send("slow please" + keyEnter)
	p.expect("thinking")
	p.send(keyCtrlC)
	p.reply("interrupted")
	p.send("fast" + keyEnter)
	p.reply("echo: fast")
	p.send(keyCtrlD)
	if code, out := p.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if got := userTexts(e); strings.Join(got, "|") != "slow please|fast" {
		t.Errorf("messages %q", got)
	}
	// Piped, there is no spinner.
	r := e.ok("hello\n", "chat", "-c")
	if strings.Contains(r.stdout+r.stderr, "thinking") {
		t.Errorf("spinner in a pipe:\n%s%s", r.stdout, r.stderr)
	}
}

// Resuming prints the last turns; /history shows more; /sessions marks
// the current session; the model is named once.
func TestReplHistoryOnResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("one\ntwo\nthree\nfour\n", "chat")
	id := replLs(e)[0].Key.Session
	p := e.startPty("chat", "-c")
	p.expect("restored 8 items (model:")
	out := p.reply("You said: four")
	if strings.Contains(out, "You said: one") || !strings.Contains(out, "> two") || !strings.Contains(out, "1 turn earlier") {
		t.Errorf("resume should show the last 3 turns:\n%s", out)
	}
	p.send("/history 10" + keyEnter)
	p.expect("You said: one")
	p.reply("You said: four") // the last of the turns it shows
	p.send("/sessions" + keyEnter)
	p.reply("* ")
	p.send("/new" + keyEnter)
	out = p.reply("new session")
	p.send("/sessions" + keyEnter)
	out += p.reply("ITEMS")
	// /resume prints the last turns too.
	p.send("/resume " + id[:8] + keyEnter)
	out = p.expect("restored 8 items", "> two")
	out += p.reply("You said: four")
	p.send(keyCtrlD)
	code, all := p.wait()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, all)
	}
	if strings.Count(all, "(model:") != 1 {
		t.Errorf("the model is named %d times, want once:\n%s", strings.Count(all, "(model:"), all)
	}
	_ = out
	// --show-history 0 prints none.
	p = e.startPty("chat", "-c", "--show-history", "0")
	p.reply("Ctrl-D leaves")
	p.send(keyCtrlD)
	if _, all := p.wait(); strings.Contains(all, "You said") {
		t.Errorf("--show-history 0 printed turns:\n%s", all)
	}
}

// Resuming an archived session un-archives it, saying so.
func TestReplResumeArchived(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("hi\n", "chat")
	id := replLs(e)[0].Key.Session
	e.ok("", "archive", id)
	r := e.ok("", "chat", "-r", id)
	contains(t, "stderr", r.stderr, "was archived; it is listed again")
	if ms := replLs(e); len(ms) != 1 || ms[0].Archived {
		t.Errorf("after resuming, ls: %+v", ms)
	}
}

// A -p run whose model call fails keeps the message and titles the
// session from it.
func TestChatFailedPromptTitle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := fakeServer(t, e, "responses")
	srv.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		return fakeopenai.Reply{Status: 400, Error: "bad request"}
	})
	e.fails(1, "", "chat", "-p", "fix the flaky parser test")
	ms := replLs(e)
	if len(ms) != 1 || ms[0].Title != "fix the flaky parser test" || ms[0].TitleSource != recall.TitleAuto {
		t.Fatalf("sessions %+v", ms)
	}
}
