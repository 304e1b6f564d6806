package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
)

// TestPickerOnATerminal drives chat --resume's picker on a real
// terminal: offline sessions all get a fallback title, so each row shows
// its first prompt; Tab shows every project's sessions with their
// project; choosing one of another project moves the workspace to its
// folder; Esc and Ctrl-C leave with exit 130 and print nothing.
func TestPickerOnATerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "alpha question about parsing")
	e.ok("", "chat", "-p", "beta question about lunch")
	other := t.TempDir()
	if r := e.runIn(other, "", "chat", "-p", "gamma question in another project"); r.code != 0 {
		t.Fatalf("chat in the other project: exit %d\n%s", r.code, r.stderr)
	}
	otherReal, err := filepath.EvalSymlinks(other)
	if err != nil {
		t.Fatal(err)
	}

	for _, key := range []string{"\x1b", keyCtrlC} {
		p := e.startPty("chat", "-r")
		p.expect("this project (2)", "“beta question about lunch”", "“alpha question about parsing”")
		p.send(key)
		code, out := p.wait()
		if code != 130 {
			t.Errorf("leaving the picker with %q: exit %d, want 130", key, code)
		}
		if strings.Contains(out, "recall:") || strings.Contains(out, "restored") {
			t.Errorf("leaving the picker with %q printed something:\n%s", key, out)
		}
	}

	p := e.startPty("chat", "-r")
	p.expect("this project (2)")
	p.send("\t")
	p.expect("all projects (3)", "“gamma question in another project”")
	p.send("gamma")
	p.expect("> gamma")
	p.send(keyEnter)
	p.expect("workspace: " + otherReal)
	p.reply("restored 2 items")
	p.send(keyCtrlD)
	if code, out := p.wait(); code != 0 {
		t.Errorf("the REPL after the picker: exit %d\n%s", code, out)
	}
}

// TestSearchPickerOnATerminal drives search -i on a real terminal over
// more matching sessions than a page of hits holds: every one of them
// can be found and resumed, each with the text that matched shown whole
// under it; with --all the picker says so and shows each row's project,
// and Tab goes back to this project's.
func TestSearchPickerOnATerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := t.TempDir()
	here, err := recall.ProjectKey(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	elsewhere, err := recall.ProjectKey(other)
	if err != nil {
		t.Fatal(err)
	}
	seedNotes(t, e.home, here, "note", 61)
	seedNotes(t, e.home, elsewhere, "far-note", 2)

	p := e.startPty("search", "canned", "-i")
	p.expect("Resume a session of this project (61)") // the first page held 20 hits
	p.send("note-00")                                 // the oldest, last of all
	p.expect("> note-00", "note-00", "reply is canned. I see 0 earlier items. You said: question 00")
	p.send(keyEnter)
	p.reply("restored 2 items")
	p.send(keyCtrlD)
	if code, out := p.wait(); code != 0 {
		t.Errorf("the REPL after the search picker: exit %d\n%s", code, out)
	}

	p = e.startPty("search", "canned", "-i", "--all")
	p.expect("Resume a session of all projects (63)")
	p.send("far-note-00") // not the first row: a row the screen already shows is not drawn again
	p.expect("> far-note-00", "far-note-00", elsewhere[len(elsewhere)-20:], "reply is canned")
	p.send(keyCtrlU + "\t")
	p.expect("Resume a session of this project (61)")
	p.send("\x1b")
	if code, _ := p.wait(); code != 130 {
		t.Errorf("leaving the search picker: exit %d, want 130", code)
	}
}

// seedNotes writes n sessions titled name-00, name-01... into project
// of the file store in home, oldest first, each a question and the
// offline model's reply to it.
func seedNotes(t *testing.T, home, project, name string, n int) {
	t.Helper()
	st, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := range n {
		q := fmt.Sprintf("question %02d about parsing", i)
		items := []recall.Item{recall.Message("user", q), recall.Message("assistant",
			"[offline] No model is configured (set OPENAI_API_KEY), so this reply is canned. I see 0 earlier items. You said: "+q)}
		key := recall.Key{Project: project, Session: recall.NewSessionID()}
		if _, err := recall.NewSession(st, key).Create(context.Background(), recall.CreateOptions{Title: fmt.Sprintf("%s-%02d", name, i), Items: items}); err != nil {
			t.Fatal(err)
		}
	}
}
