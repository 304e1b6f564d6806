// Package memory is recall's memory layer: what an agent keeps across
// sessions, distilled from its conversations.
//
// An [Extractor] is called each time agent.Run persists items, with the
// items just written ([Hook] adapts one to agent.RunOptions.OnPersist).
// The built-in one, [Notes], asks a cheap model for short notes worth
// keeping (decisions, rules, pitfalls) at the end of every exchange and
// appends them to the project's memory [File], MEMORY.md, which sits next
// to the project's sessions in the file store. When a session starts, the
// notes go into the agent's system prompt ([Instructions]), so a new
// conversation knows what earlier ones settled.
//
// Memory is off unless a program turns it on: `recall chat --memory`.
// See docs/MEMORY.md.
package memory

import (
	"context"
	"strings"

	"github.com/recallkit/recall"
)

// Extractor distils memories from a conversation as it is persisted.
type Extractor interface {
	// Extract is called after every write to the session with the items
	// just written, oldest first: the user's input, then each turn (the
	// model's items and the tool outputs). It may keep items until an
	// exchange is complete. The items are copies. An error stops the run
	// that called it (see agent.RunOptions.OnPersist); the items are
	// stored already.
	Extract(ctx context.Context, items []recall.Item) error
}

// Hook returns the function that plugs e into agent.RunOptions.OnPersist.
// next, when not nil, is called first (another hook already in place).
func Hook(e Extractor, next func(ctx context.Context, items []recall.Item) error) func(ctx context.Context, items []recall.Item) error {
	return func(ctx context.Context, items []recall.Item) error {
		if next != nil {
			if err := next(ctx, items); err != nil {
				return err
			}
		}
		return e.Extract(ctx, items)
	}
}

// MaxInjectBytes bounds how much of the memory Instructions puts in a
// system prompt: the newest notes are kept, whole lines, when the file is
// longer.
const MaxInjectBytes = 16 << 10

// Instructions returns base (an agent's system prompt) with the memory
// text (a memory file's content, without the heading Append writes)
// appended under a heading of its own, or base alone when memory holds no
// notes. Of a memory longer than MaxInjectBytes only its end is used.
func Instructions(base, memory string) string {
	if len(bullets(memory)) == 0 {
		return base
	}
	memory = strings.TrimSpace(strings.TrimPrefix(memory, header)) // the file's own heading is ours below
	if len(memory) > MaxInjectBytes {
		memory = memory[len(memory)-MaxInjectBytes:]
		if i := strings.IndexByte(memory, '\n'); i >= 0 {
			memory = memory[i+1:]
		}
		memory = "(older notes left out)\n" + memory
	}
	var b strings.Builder
	b.WriteString(base)
	if base != "" {
		b.WriteString("\n\n")
	}
	b.WriteString("## Project memory\n\nNotes kept from earlier sessions in this project: decisions, rules and pitfalls. " +
		"Follow them unless the user says otherwise.\n\n")
	b.WriteString(memory)
	b.WriteString("\n")
	return b.String()
}

// Instructions returns base with the notes of f appended (see the
// function Instructions): the system prompt of a session that starts now.
func (f *File) Instructions(base string) (string, error) {
	text, err := f.Read()
	if err != nil {
		return base, err
	}
	return Instructions(base, text), nil
}
