package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/memory"
)

// envCompactTokens is the default of recall chat --compact-tokens.
const envCompactTokens = "RECALL_COMPACT_TOKENS"

// chatExtras are the memory and compaction settings of recall chat.
type chatExtras struct {
	// base is the agent's system prompt without the memory.
	base string
	// mem is the project's memory file and notes its extractor; nil when
	// memory is off (the default).
	mem   *memory.File
	notes *memory.Notes
	// compactor compacts the session; nil when the model cannot (offline).
	compactor compact.Compactor
	// compactTokens triggers compaction before a reply (0: never).
	compactTokens int
}

// compactTokensDefault returns --compact-tokens' default: $RECALL_COMPACT_TOKENS, else 0.
func compactTokensDefault() int {
	n, err := strconv.Atoi(os.Getenv(envCompactTokens))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// newChatExtras prepares memory (when useMemory) and compaction for a
// chat whose agent is ag. cheap is the model that writes memory notes.
func newChatExtras(ctx context.Context, c *chatSession, useMemory bool, compactTokens int, cheap agent.Model) (chatExtras, error) {
	x := chatExtras{base: c.agent.Instructions, compactTokens: compactTokens}
	if comp, err := compactor(c.agent.Model); err == nil {
		x.compactor = comp
	}
	if !useMemory {
		return x, nil
	}
	f, err := c.app.projectMemory(ctx, c.project)
	if err != nil {
		return x, err
	}
	x.mem = f
	x.notes = &memory.Notes{
		Model: cheap,
		File:  f,
		OnNote: func(note string) {
			if c.interactive {
				c.app.notef("(noted in memory: %s)\n", note)
			}
		},
		OnError: func(err error) { c.app.notef("recall: memory: %v\n", err) },
	}
	return x, nil
}

// loadMemory puts the project's memory, as it is now, into ag's system
// prompt, for the session being opened. Notes added during the session
// reach the next one.
func (x *chatExtras) loadMemory(ag *agent.Agent) error {
	if x.mem == nil {
		return nil
	}
	instr, err := x.mem.Instructions(x.base)
	if err != nil {
		return err
	}
	ag.Instructions = instr
	return nil
}

// session returns the handle of key's session: one that can compact
// itself when the model can summarize.
func (x *chatExtras) session(st recall.Store, key recall.Key) recall.Session {
	if x.compactor == nil {
		return recall.NewSession(st, key)
	}
	return compact.NewSession(st, key, x.compactor, compact.Options{})
}

// runOptions completes the options of a reply in key's session: the
// session, automatic compaction, and the memory hook after the chat's own.
func (x *chatExtras) runOptions(st recall.Store, key recall.Key, opts agent.RunOptions) agent.RunOptions {
	opts.Session = x.session(st, key)
	opts.CompactTokens = x.compactTokens
	if x.notes != nil {
		opts.OnPersist = memory.Hook(x.notes, opts.OnPersist)
	}
	return opts
}

// report tells the user about a compaction a reply triggered.
func (x *chatExtras) report(a *app, key recall.Key, res *agent.Result) {
	if res != nil && res.Compaction != nil {
		a.notef("(%s)\n", describeCompaction(key.Session, *res.Compaction))
	}
}

// compactNow runs /compact [INSTRUCTIONS] on c's current session.
func (x *chatExtras) compactNow(ctx context.Context, c *chatSession, instructions string) error {
	if x.compactor == nil {
		_, err := compactor(c.agent.Model)
		return err
	}
	sess, ok := x.session(c.st, c.key).(agent.CompactionAware)
	if !ok {
		return fmt.Errorf("compact: %w", recall.ErrUnsupported)
	}
	// Ctrl-C stops the summary as it stops a reply.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c.setTurn(cancel)
	defer c.setTurn(nil)
	res, err := sess.RunCompaction(ctx, agent.CompactionArgs{Force: true, Instructions: instructions})
	if errors.Is(err, context.Canceled) {
		return withHint(errors.New("compaction interrupted; the session is unchanged"), "run /compact again")
	}
	if err != nil {
		return err
	}
	c.app.notef("%s\n", describeCompaction(c.key.Session, res))
	return nil
}
