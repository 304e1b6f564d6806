package main

import (
	"strings"
	"testing"
)

// TestCompleteResume: "chat --resume <Tab>" and "chat -r <Tab>" complete
// session IDs, as "--resume=<Tab>" does, though --resume's value is
// optional (cobra then completes it as chat's argument). The runs are
// cobra's __complete as the shells' scripts call it.
func TestCompleteResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "hello")
	id := e.ls()[0].Key.Session
	e.ok("", "rename", id, "Parser rewrite")
	for _, args := range [][]string{
		{"chat", "--resume", ""},
		{"chat", "-r", ""},
		{"chat", "--resume=" + id[:3]},
		{"chat", "-r", id[:3]},
		{"chat", "--fork", "-r", ""},
	} {
		r := e.ok("", append([]string{"__complete"}, args...)...)
		if !strings.Contains(r.stdout, id[:8]+"\tParser rewrite\n") {
			t.Errorf("completing %q: %q", args, r.stdout)
		}
	}
	// Neither a chat without --resume nor one whose --resume has its value
	// takes an argument: nothing to offer.
	for _, args := range [][]string{{"chat", ""}, {"chat", "-r", id, ""}, {"chat", "--resume=" + id, ""}} {
		if r := e.ok("", append([]string{"__complete"}, args...)...); strings.Contains(r.stdout, id[:8]) {
			t.Errorf("completing %q offers sessions: %q", args, r.stdout)
		}
	}
}
