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

// repl reads messages until /exit or end of input: a line that starts
// with "/" is a command, any other is sent to the agent. In a terminal the
// line editor reads them (lineedit.go); piped input is read line by line,
// a line ending in "\" continuing on the next, without prompts. Errors are
// reported and the REPL goes on.
func (c *chatSession) repl(ctx context.Context) error {
	in := bufio.NewReader(c.app.stdin)
	var ed *lineEditor
	if c.interactive {
		ed = newLineEditor(c.app.stdin, c.app.stdout, historyFile(c.app.historyHome(), c.project))
		c.app.notef("type a message, or /help for commands; Alt-Enter adds a line, Ctrl-D leaves\n")
	}
	interrupted := false // the last edit ended with Ctrl-C on an empty line
	for {
		var (
			line string
			err  error
		)
		if ed != nil {
			line, err = ed.read(ctx)
		} else {
			line, err = c.readLine(in)
		}
		if errors.Is(err, errInterrupt) {
			if interrupted {
				return &cliError{err: errors.New("interrupted"), code: replInterruptCode}
			}
			interrupted = true
			c.app.notef("(Ctrl-C again or Ctrl-D to leave)\n")
			continue
		}
		interrupted = false
		if errors.Is(err, io.EOF) && line == "" {
			return nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read input: %w", err)
		}
		if ed != nil && strings.TrimSpace(line) != "" {
			if err := ed.add(line); err != nil {
				c.app.notef("%s\n", errorLine(err))
			}
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

// readLine reads one logical line of piped input, joining lines that end
// in a backslash.
func (c *chatSession) readLine(in *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		s, err := in.ReadString('\n')
		s = strings.TrimRight(s, "\r\n")
		if cont, ok := strings.CutSuffix(s, `\`); ok && err == nil {
			b.WriteString(cont + "\n")
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
	case "/rewind":
		return c.rewind(ctx, arg)
	case "/redo":
		n, err := redoSession(ctx, c.st, c.key)
		if err != nil {
			return err
		}
		c.app.notef("%s back in the view\n", count(n, "item"))
		return nil
	case "/compact":
		return c.extras.compactNow(ctx, c, arg)
	case "/history":
		return c.historyCommand(ctx, arg)
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
		return writeSessionsMarked(c.app.stdout, metas, c.key)
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

// replCommands lists the slash commands: /help prints it, and recall chat's
// help shows it indented, so the two never disagree.
const replCommands = `/new [TITLE]      start a new session
/branch [TITLE]   fork the session here and switch to the fork
/rename TITLE     set the session's title
/undo             remove your last message and everything after it
/rewind [ITEM]    go back to just after an item (no ITEM: pick one)
/redo             bring back what the last /rewind took out
/clear            clear the session (the log keeps the old items)
/compact [TEXT]   summarize the older part of the session (TEXT: what to keep)
/sessions         list this project's sessions
/resume [ID]      switch to another session (no ID: pick one)
/history [N]      print the last N turns (default 20)
/help             list the commands
/exit             leave (Ctrl-D too)
`

// replHelp is what /help prints: the commands, then the keys of the line
// editor.
const replHelp = replCommands + `Keys: Enter sends; Alt-Enter (or a line ending in \) adds a line; Up/Down
recall earlier messages; Ctrl-C clears the line or stops a reply, twice on
an empty line leaves; Ctrl-D on an empty line leaves.
`

// writeSessionsMarked lists metas as writeSessions does, with a "*"
// before the current session.
func writeSessionsMarked(w io.Writer, metas []recall.Meta, current recall.Key) error {
	var b strings.Builder
	if err := writeSessions(&b, metas, nil, columns{}); err != nil {
		return err
	}
	lines := strings.SplitAfter(b.String(), "\n")
	var out strings.Builder
	for i, l := range lines {
		switch {
		case l == "":
		case i > 0 && i <= len(metas) && metas[i-1].Key == current:
			out.WriteString("* " + l)
		default:
			out.WriteString("  " + l)
		}
	}
	_, err := io.WriteString(w, out.String())
	return err
}
