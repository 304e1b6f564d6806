package main

import (
	"bufio"
	"fmt"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/age"
)

// confirmRemoval shows the sessions a command is about to delete (for
// good when purge, else to the trash) and asks the user (y/N) when stdin
// and stderr are a terminal. yes skips the question. Without a terminal there is nobody to ask: the command needs
// --yes, and fails as a usage error (exit 2) without it. It returns false
// when the user said no.
func (a *app) confirmRemoval(cmdName string, metas []recall.Meta, yes, purge bool) (bool, error) {
	if yes || len(metas) == 0 {
		return true, nil
	}
	if !isTerminal(a.stdin) || !isTerminal(a.stderr) {
		hint := "pass --yes to delete without a question"
		if cmdName == "gc" {
			hint += " ('recall gc --dry-run' shows what would go)"
		}
		return false, usageError(hint,
			"%s would delete %s and asks first, but there is no terminal to ask in", cmdName, count(len(metas), "session"))
	}
	now := time.Now()
	for _, m := range metas {
		a.notef("  %s, updated %s, %s\n", describe(m), age.Ago(m.Updated, now), count(m.ItemCount, "item"))
	}
	question := fmt.Sprintf("Move %s to the trash?", count(len(metas), "session"))
	if purge {
		question = fmt.Sprintf("Delete %s for good?", count(len(metas), "session"))
	}
	return a.askYes(question, "nothing deleted"), nil
}

// askYes asks question on stderr, followed by "[y/N]", and reads the
// answer from stdin: true for y or yes, in any case; for anything else it
// prints the line no ("nothing deleted") on stderr and returns false.
func (a *app) askYes(question, no string) bool {
	a.notef("%s [y/N] ", question)
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	a.notef("%s\n", no)
	return false
}
