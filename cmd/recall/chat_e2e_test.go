package main

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/provider/offline"
)

// reply is the offline model's answer, as printed.
func reply(earlier int, said string) string { return offline.Reply(earlier, said) + "\n" }

func TestChatContinueRestoresTheSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Run 1 creates a session.
	r := e.ok("", "chat", "-p", "my first question")
	if r.stdout != reply(0, "my first question") {
		t.Fatalf("run 1 stdout = %q", r.stdout)
	}
	contains(t, "run 1 stderr", r.stderr, "new session")
	contains(t, "run 1 stderr", r.stderr, "restored 0 items")

	// Run 2, a new process, continues it: the model sees the earlier items.
	r = e.ok("", "chat", "--continue", "-p", "and a second one")
	if r.stdout != reply(2, "and a second one") {
		t.Fatalf("run 2 stdout = %q", r.stdout)
	}
	contains(t, "run 2 stderr", r.stderr, "restored 2 items")
	r = e.ok("", "chat", "-c", "-p", "third")
	if r.stdout != reply(4, "third") {
		t.Fatalf("run 3 stdout = %q", r.stdout)
	}

	ms := e.ls()
	if len(ms) != 1 || ms[0].ItemCount != 6 {
		t.Fatalf("ls = %+v, want one session of 6 items", ms)
	}
	_, items := e.show(ms[0].Key.Session)
	want := []string{
		"user: my first question", "assistant: " + offline.Reply(0, "my first question"),
		"user: and a second one", "assistant: " + offline.Reply(2, "and a second one"),
		"user: third", "assistant: " + offline.Reply(4, "third"),
	}
	if got := texts(items); !slices.Equal(got, want) {
		t.Fatalf("items =\n%q\nwant\n%q", got, want)
	}

	// Another directory is another project: nothing to continue there.
	other := t.TempDir()
	r = e.runIn(other, "", "chat", "--continue", "-p", "elsewhere")
	if r.code != 0 || r.stdout != reply(0, "elsewhere") {
		t.Fatalf("continue in another project: exit %d, stdout %q", r.code, r.stdout)
	}
	contains(t, "stderr", r.stderr, "no earlier session in this project to continue; starting a new one")
	if n := len(e.ls()); n != 1 {
		t.Errorf("ls in the first project lists %d sessions, want 1", n)
	}
	if n := len(e.ls("--all")); n != 2 {
		t.Errorf("ls --all lists %d sessions, want 2", n)
	}
	// --history sends only the newest items.
	r = e.ok("", "chat", "-c", "--history", "3", "-p", "short memory")
	contains(t, "stderr", r.stderr, "restored 3 of 6 items")
	if r.stdout != reply(3, "short memory") {
		t.Errorf("--history 3: stdout %q", r.stdout)
	}

	// --project names the project without changing directory.
	r = e.ok("", "chat", "-c", "--project", other, "-p", "again")
	if r.stdout != reply(2, "again") {
		t.Errorf("--project: stdout %q", r.stdout)
	}
}

func TestChatResumeByPrefixAndTitle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "alpha")
	e.ok("", "chat", "-p", "beta")
	ms := e.ls()
	if len(ms) != 2 {
		t.Fatalf("ls = %d sessions, want 2", len(ms))
	}
	alpha := ms[1] // newest first
	short := e.shortIDs()[1]
	if !strings.HasPrefix(alpha.Key.Session, short) || len(short) >= len(alpha.Key.Session) {
		t.Fatalf("short ID %q is not a proper prefix of %s", short, alpha.Key.Session)
	}

	// By unique prefix, in both flag spellings.
	for _, args := range [][]string{{"--resume", short}, {"-r", short}, {"--resume=" + short}} {
		r := e.ok("", append([]string{"chat", "-p", "more"}, args...)...)
		contains(t, "stderr", r.stderr, alpha.Key.Session)
		if !strings.Contains(r.stderr, "restored ") {
			t.Errorf("resume %q: stderr does not say what it restored: %s", args, r.stderr)
		}
	}
	_, items := e.show(alpha.Key.Session)
	if len(items) != 8 || items[6].Text() != "more" || items[7].Text() != offline.Reply(6, "more") {
		t.Fatalf("after three resumes, alpha holds %q", texts(items))
	}

	// By exact title.
	e.ok("", "rename", short, "Alpha work")
	r := e.ok("", "chat", "--resume", "Alpha work", "-p", "by title")
	if r.stdout != reply(8, "by title") {
		t.Errorf("resume by title: stdout %q", r.stdout)
	}
	contains(t, "stderr", r.stderr, `"Alpha work": restored 8 items`)

	// A prefix two sessions share is ambiguous; an unknown one is not
	// found.
	e.plant(e.dir, nil, "0123abcd-1111-4111-8111-111111111111", "0123abcd-2222-4222-8222-222222222222")
	checkFailure(t, e.run("", "chat", "-r", "0123abcd", "-p", "x"), 1, "matches 2 sessions", nil)
	checkFailure(t, e.run("", "chat", "-r", "no-such-session", "-p", "x"), 1, `no session matches "no-such-session"`, nil)

	// --fork continues in a copy and leaves the original alone.
	r = e.ok("", "chat", "-r", "Alpha work", "--fork", "--name", "Alpha fork", "-p", "in the fork")
	if r.stdout != reply(10, "in the fork") {
		t.Errorf("fork: stdout %q", r.stdout)
	}
	contains(t, "fork stderr", r.stderr, `"Alpha fork": restored 10 items`)
	orig, _ := e.show("Alpha work")
	fork, _ := e.show("Alpha fork")
	if orig.ItemCount != 10 || fork.ItemCount != 12 || fork.ForkedFrom == nil || fork.ForkedFrom.Key.Session != alpha.Key.Session {
		t.Errorf("after --fork: original %d items, fork %d items from %+v", orig.ItemCount, fork.ItemCount, fork.ForkedFrom)
	}
}

func TestChatResumeOutsideTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fails(1, "no sessions to resume", "chat", "--resume")
	e.ok("", "chat", "-p", "one")
	e.ok("", "chat", "-p", "two")
	for _, args := range [][]string{{"chat", "--resume"}, {"chat", "-r"}, {"chat", "-r", "-p", "hi"}} {
		r := e.fails(2, "--resume without an ID needs a terminal", args...)
		// The list goes to stdout, so the user can pick an ID from it.
		ids := e.shortIDs()
		for _, id := range ids {
			contains(t, "stdout", r.stdout, id)
		}
	}
	if n := len(e.ls()); n != 2 {
		t.Errorf("a failed --resume changed the store: %d sessions", n)
	}
}

func TestChatUndoInTheREPL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.ok("one\ntwo\n/undo\nthree\n", "chat")
	want := reply(0, "one") + reply(2, "two") + reply(2, "three")
	if r.stdout != want {
		t.Fatalf("stdout =\n%s\nwant\n%s", r.stdout, want)
	}
	contains(t, "stderr", r.stderr, `undid your last message "two" (2 items removed)`)
	_, items := e.show(e.shortIDs()[0])
	wantItems := []string{"user: one", "assistant: " + offline.Reply(0, "one"), "user: three", "assistant: " + offline.Reply(2, "three")}
	if got := texts(items); !slices.Equal(got, wantItems) {
		t.Fatalf("items after /undo = %q, want %q", got, wantItems)
	}

	// /undo twice more empties the session; a third has nothing to undo.
	r = e.ok("/undo\n/undo\n/undo\n", "chat", "-c")
	contains(t, "stderr", r.stderr, "nothing to undo")
	if ms := e.ls(); len(ms) != 1 || ms[0].ItemCount != 0 {
		t.Fatalf("after undoing everything: %+v", ms)
	}
}

func TestChatREPLCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := strings.Join([]string{
		"hello",
		"/rename Main line",
		"/branch Side",
		"side message",
		"/sessions",
		"/resume Main line",
		"/clear",
		"after clear",
		"/new",
		"fresh",
		"/bogus",
		"/rename",
		"a long \\",
		"message",
		"/help",
		"/exit",
		"never sent",
	}, "\n") + "\n"
	r := e.ok(script, "chat")
	want := reply(0, "hello") + reply(2, "side message")
	if !strings.HasPrefix(r.stdout, want) {
		t.Fatalf("stdout starts\n%s\nwant\n%s", r.stdout, want)
	}
	for _, s := range []string{
		"Main line", "Side", // the /sessions table
		reply(0, "after clear"), reply(0, "fresh"), reply(2, "a long \nmessage"),
		"/branch [TITLE]", // /help
	} {
		contains(t, "stdout", r.stdout, s)
	}
	for _, s := range []string{
		`renamed to "Main line"`,
		`"Side": restored 2 items`,
		`"Main line": restored 2 items`,
		"cleared",
		"recall: unknown command /bogus; hint: /help lists the commands",
		"recall: /rename needs a title; hint: /rename TITLE",
	} {
		contains(t, "stderr", r.stderr, s)
	}
	if strings.Contains(r.stdout, "never sent") {
		t.Error("a line after /exit was sent")
	}

	main, mainItems := e.show("Main line")
	side, _ := e.show("Side")
	if got := texts(mainItems); !slices.Equal(got, []string{"user: after clear", "assistant: " + offline.Reply(0, "after clear")}) {
		t.Errorf("Main line after /clear holds %q", got)
	}
	if side.ItemCount != 4 || side.ForkedFrom == nil || side.ForkedFrom.Key != main.Key {
		t.Errorf("Side: %d items, forked from %+v; want 4 items from %s", side.ItemCount, side.ForkedFrom, main.Key)
	}
	if n := len(e.ls()); n != 3 {
		t.Errorf("ls lists %d sessions, want 3 (main, side, fresh)", n)
	}
}

func TestChatNameAndTitles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.ok("", "chat", "--name", "Named  at\tstart", "-p", "hi")
	contains(t, "stderr", r.stderr, `new session`)
	ms := e.ls()
	if len(ms) != 1 || ms[0].Title != "Named at start" || ms[0].TitleSource != "user" {
		t.Fatalf("--name: %+v", ms)
	}
	// A user title is never replaced by an automatic one on later runs.
	e.ok("", "chat", "-c", "-p", "more")
	if m, _ := e.show("Named at start"); m.Title != "Named at start" || m.TitleSource != "user" {
		t.Errorf("after a second run the title is %q (%s)", m.Title, m.TitleSource)
	}
	// --name on a resumed session renames it.
	e.ok("", "chat", "-c", "--name", "Renamed", "-p", "x")
	if ms := e.ls(); ms[0].Title != "Renamed" {
		t.Errorf("--name with --continue: title %q", ms[0].Title)
	}
}

// A title given before the first message (/new TITLE, --name) is kept
// when no message follows: the session is created with it, and with its
// folder.
func TestChatTitleBeforeFirstMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := e.folder()
	r := e.ok("/new Kept title\n", "chat")
	contains(t, "stderr", r.stderr, `new session`)
	e.ok("", "chat", "--name", "Named only")
	got := map[string]int{}
	for _, m := range e.ls() {
		got[m.Title] = m.ItemCount
		if m.TitleSource != recall.TitleUser || m.Metadata[cwdKey] != dir {
			t.Errorf("session %q: title source %q, folder %q (want user, %q)", m.Title, m.TitleSource, m.Metadata[cwdKey], dir)
		}
	}
	if len(got) != 2 || got["Kept title"] != 0 || got["Named only"] != 0 {
		t.Errorf("sessions (title: items) %v, want the two titled ones, empty", got)
	}
}

func TestChatPromptFromStdin(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if r := e.ok("the whole prompt\n", "chat", "-p", "-"); r.stdout != reply(0, "the whole prompt") {
		t.Errorf("-p -: stdout %q", r.stdout)
	}
	if r := e.ok("some diff\n", "chat", "-c", "-p", "review this"); r.stdout != reply(2, "review this\n\nsome diff") {
		t.Errorf("-p with piped input: stdout %q", r.stdout)
	}
	// Without -p, piped lines are REPL input: one line is one prompt.
	if r := e.ok("just one line\n", "chat", "-c"); r.stdout != reply(4, "just one line") {
		t.Errorf("piped REPL: stdout %q", r.stdout)
	}
	e.fails(2, "empty prompt", "chat", "-p", "-")
}

func TestChatConcurrentContinue(t *testing.T) {
	t.Parallel()
	// Several "recall chat -c" on one session at once: every message and
	// reply is kept, none is torn, and recall check (run at cleanup) passes.
	e := newEnv(t)
	e.ok("", "chat", "-p", "start")
	const n = 5
	errs := make(chan string, n)
	for i := range n {
		go func() {
			r := e.run("", "chat", "-c", "-p", fmt.Sprint("parallel ", i))
			if r.code != 0 {
				errs <- r.stderr
				return
			}
			errs <- ""
		}()
	}
	for range n {
		if msg := <-errs; msg != "" {
			t.Error(msg)
		}
	}
	ms := e.ls()
	if len(ms) != 1 || ms[0].ItemCount != 2+2*n {
		t.Fatalf("after %d concurrent runs: %+v", n, ms)
	}
	_, items := e.show(ms[0].Key.Session)
	seen := map[string]bool{}
	for _, it := range items {
		if it.Role() == "user" {
			seen[it.Text()] = true
		}
	}
	for i := range n {
		if !seen[fmt.Sprint("parallel ", i)] {
			t.Errorf("message %d is missing", i)
		}
	}
}
