package main

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/transcript"
)

// historyTurnsDefault is how many turns resuming a session shows.
const historyTurnsDefault = 3

// lastTurns returns the items of the newest n turns of items, a turn
// starting at a user message, and how many turns came before them.
func lastTurns(items []recall.Item, n int) (shown []recall.Item, earlier int) {
	var starts []int
	for i, it := range items {
		if it.Type() == "message" && it.Role() == "user" {
			starts = append(starts, i)
		}
	}
	if n <= 0 || len(items) == 0 {
		return nil, len(starts)
	}
	if len(starts) <= n {
		return items, 0
	}
	return items[starts[len(starts)-n]:], len(starts) - n
}

// writeRecap prints items as a short recap of a conversation: messages in
// full, after who spoke; tool calls and outputs cut to one line each.
func writeRecap(w io.Writer, items []recall.Item, earlier int) error {
	ew := &transcript.ErrWriter{W: w}
	if earlier > 0 {
		ew.Printf("… %s earlier (/history N shows more)\n", count(earlier, "turn"))
	}
	for _, it := range items {
		p := transcript.Describe(it)
		switch p.Kind {
		case "user":
			ew.Printf("> %s\n", indentLines(strings.TrimSpace(p.Text), ". "))
		case "assistant":
			ew.Printf("%s\n", strings.TrimSpace(p.Text))
		case "tool call":
			ew.Printf("  [tool] %s %s\n", p.Name, clip(p.Text, 60))
		case "tool output":
			ew.Printf("  [output] %s\n", clip(p.Text, 60))
		case "reasoning", "system", "developer":
			// not part of what was said
		default:
			ew.Printf("  [%s]\n", p.Kind)
		}
	}
	return ew.Err
}

// indentLines prefixes every line of s but the first with prefix.
func indentLines(s, prefix string) string {
	return strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// showHistory prints the newest n turns of the current session.
func (c *chatSession) showHistory(ctx context.Context, n int) error {
	items, _, err := c.st.Items(ctx, c.key, 0)
	if err != nil {
		return err
	}
	shown, earlier := lastTurns(recall.PlainItems(items), n)
	if len(shown) == 0 {
		return nil
	}
	return writeRecap(c.app.stdout, shown, earlier)
}

// historyCommand runs /history [N]: the newest N turns (default 20).
func (c *chatSession) historyCommand(ctx context.Context, arg string) error {
	n := 20
	if arg != "" {
		v, err := strconv.Atoi(arg)
		if err != nil || v <= 0 {
			return usageError("/history 10 shows the last 10 turns", "/history takes a number of turns, got %q", arg)
		}
		n = v
	}
	if _, err := c.st.Stat(ctx, c.key); errors.Is(err, recall.ErrNotFound) {
		c.app.notef("nothing said yet\n")
		return nil
	} else if err != nil {
		return err
	}
	return c.showHistory(ctx, n)
}
