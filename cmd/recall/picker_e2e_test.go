package main

import (
	"path/filepath"
	"strings"
	"testing"
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
