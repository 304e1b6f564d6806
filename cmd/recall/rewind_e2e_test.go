package main

import (
	"regexp"
	"slices"
	"testing"
)

// TestRewindRedo: recall rewind lists the items with their refs and sets
// the view back to one; recall redo brings the rest back, byte for byte;
// refused rewinds and redos say why; the REPL's /rewind and /redo do the
// same.
func TestRewindRedo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "one")
	e.ok("", "chat", "-c", "-p", "two")
	short := e.shortIDs()[0]
	_, before := e.show(short)
	if len(before) != 4 {
		t.Fatalf("the session holds %d items, want 4: %q", len(before), texts(before))
	}

	// The listing names each item by its ref; the first reply's is taken.
	r := e.ok("", "rewind", short)
	m := regexp.MustCompile(`(?m)^\s+(\d+)\s+assistant\s`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("rewind's listing shows no assistant item:\n%s", r.stdout)
	}
	contains(t, "rewind's listing", r.stdout, "one")
	r = e.ok("", "rewind", short, "--to", m[1])
	contains(t, "rewind", r.stdout, "2 items out of the view")
	if _, items := e.show(short); !slices.EqualFunc(texts(items), texts(before[:2]), func(a, b string) bool { return a == b }) {
		t.Errorf("after the rewind the view is %q, want %q", texts(items), texts(before[:2]))
	}
	r = e.ok("", "redo", short)
	contains(t, "redo", r.stdout, "2 items back in the view")
	if _, items := e.show(short); !slices.EqualFunc(items, before, slices.Equal) {
		t.Errorf("after the redo the view is %q, want %q", texts(items), texts(before))
	}
	e.fails(1, "nothing to redo", "redo", short)
	e.fails(1, "not in the session's view", "rewind", short, "--to", "999")
	e.fails(2, "want an item's ref", "rewind", short, "--to", "x")

	// The REPL: list, rewind to the start, redo.
	r = e.ok("/rewind\n/rewind 0\n/redo\n/redo\n", "chat", "-c")
	contains(t, "/rewind's listing", r.stdout, "/rewind ITEM keeps that item")
	contains(t, "/rewind 0", r.stderr, "rewound to the start: 4 items out of the view")
	contains(t, "/redo", r.stderr, "4 items back in the view")
	contains(t, "the second /redo", r.stderr, "nothing to redo")
	if _, items := e.show(short); !slices.EqualFunc(items, before, slices.Equal) {
		t.Errorf("after /rewind and /redo the view is %q, want %q", texts(items), texts(before))
	}
}

// TestRewindPickerOnATerminal: /rewind with no item on a terminal picks
// one with the arrows; Esc leaves it with nothing changed.
func TestRewindPickerOnATerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "alpha question")
	e.ok("", "chat", "-c", "-p", "beta question")
	short := e.shortIDs()[0]
	_, before := e.show(short)

	p := e.startPty("chat", "-c")
	p.reply("restored 4 items")
	p.send("/rewind" + keyEnter)
	p.expect("Rewind to just after which item?", "alpha question", "beta question", ">        6  assistant")
	p.send("\x1b")
	p.reply("")
	p.send("/rewind" + keyEnter)
	p.expect("Rewind to just after which item?")
	p.send(keyUp + keyUp)
	p.send(keyEnter)
	p.reply("2 items out of the view")
	p.send(keyCtrlD)
	if code, out := p.wait(); code != 0 {
		t.Fatalf("the REPL: exit %d\n%s", code, out)
	}
	if _, items := e.show(short); !slices.EqualFunc(items, before[:2], slices.Equal) {
		t.Errorf("after the picked rewind the view is %q, want %q", texts(items), texts(before[:2]))
	}
}
