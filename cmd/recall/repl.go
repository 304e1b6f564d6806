package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/sessionref"
	"github.com/recallkit/recall/internal/undo"
)

// errExit is returned by a slash command that ends the REPL.
var errExit = errors.New("exit")

// repl reads lines from stdin until /exit or end of input: a line that
// starts with "/" is a command, any other is sent to the agent. A line
// ending in "\" continues on the next. Errors are reported and the REPL
// goes on; piped input is processed the same way, without prompts.
func (c *chatSession) repl(ctx context.Context) error {
	in := bufio.NewReader(c.app.stdin)
	if c.interactive {
		c.app.notef("type a message, or /help for commands\n")
	}
	for {
		line, err := c.readLine(in)
		if errors.Is(err, io.EOF) && line == "" {
			if c.interactive {
				c.app.notef("\n")
			}
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read input: %w", err)
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if strings.HasPrefix(line, "/") {
			err = c.command(ctx, line)
		} else {
			err = c.send(ctx, line)
		}
		if errors.Is(err, errExit) {
			return nil
		}
		if ctx.Err() != nil {
			return err // interrupted with piped input: stop the pipeline
		}
		if err != nil {
			c.app.notef("%s\n", errorLine(err))
		}
	}
}

// readLine prompts (in a terminal) and reads one logical line, joining
// lines that end in a backslash.
func (c *chatSession) readLine(in *bufio.Reader) (string, error) {
	var b strings.Builder
	prompt := "> "
	for {
		if c.interactive {
			fmt.Fprint(c.app.stdout, prompt)
		}
		s, err := in.ReadString('\n')
		s = strings.TrimRight(s, "\r\n")
		if cont, ok := strings.CutSuffix(s, `\`); ok && err == nil {
			b.WriteString(cont + "\n")
			prompt = ". "
			continue
		}
		b.WriteString(s)
		return b.String(), err
	}
}

// command runs one slash command.
func (c *chatSession) command(ctx context.Context, line string) error {
	name, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	switch name {
	case "/exit", "/quit", "/q":
		return errExit
	case "/help", "/?":
		c.app.printf("%s", replHelp)
		return nil
	case "/new":
		return c.switchTo(ctx, c.newKey(), arg)
	case "/branch":
		m, err := c.st.Stat(ctx, c.key)
		if errors.Is(err, recall.ErrNotFound) {
			return withHint(errors.New("nothing to branch yet"), "send a message first")
		}
		if err != nil {
			return err
		}
		fork, err := forkSession(ctx, c.st, m, 0, arg)
		if err != nil {
			return err
		}
		c.app.notef("branched %s into %s\n", m.Key.Session, fork.Key.Session)
		return c.switchTo(ctx, fork.Key, "")
	case "/rename":
		if arg == "" {
			return usageError("/rename TITLE", "/rename needs a title")
		}
		if err := c.rename(ctx, arg); err != nil {
			return err
		}
		c.app.notef("renamed to %q\n", strings.Join(strings.Fields(arg), " "))
		return nil
	case "/undo":
		removed, err := undo.LastTurn(ctx, c.st, c.key)
		if err != nil {
			return err
		}
		if len(removed) == 0 {
			c.app.notef("nothing to undo\n")
			return nil
		}
		c.app.notef("undid your last message %q (%s removed)\n", clip(removed[0].Text(), 60), count(len(removed), "item"))
		return nil
	case "/compact":
		return c.extras.compactNow(ctx, c, arg)
	case "/clear":
		if err := recall.NewSession(c.st, c.key).Clear(ctx); err != nil {
			return err
		}
		c.app.notef("cleared; the model starts afresh (the log keeps the old items)\n")
		return nil
	case "/sessions", "/ls":
		metas, err := sessionref.All(ctx, c.st, c.project, false)
		if err != nil {
			return err
		}
		if len(metas) == 0 {
			c.app.notef("no sessions in this project yet\n")
			return nil
		}
		return writeSessions(c.app.stdout, metas, nil, false)
	case "/resume":
		var (
			m   recall.Meta
			err error
		)
		if arg == "" {
			m, err = c.pick(ctx)
		} else {
			m, err = sessionref.Resolve(ctx, c.st, c.project, arg)
		}
		if errors.Is(err, errNoChoice) {
			return nil
		}
		if err != nil {
			return err
		}
		return c.switchTo(ctx, m.Key, "")
	}
	return usageError("/help lists the commands", "unknown command %s", name)
}

// clip cuts s to n runes for a status line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

const replHelp = `/new [TITLE]      start a new session
/branch [TITLE]   fork the session here and switch to the fork
/rename TITLE     set the session's title
/undo             remove your last message and everything after it
/clear            clear the session (the log keeps the old items)
/compact [TEXT]   summarize the older part of the session (TEXT: what to keep)
/sessions         list this project's sessions
/resume [ID]      switch to another session (no ID: pick one)
/exit             leave (Ctrl-D too)
A line ending in \ continues on the next line.
`
