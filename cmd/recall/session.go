package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/title"
)

// chatSession is the state of recall chat: the store, the agent, and the
// session the conversation currently goes to.
type chatSession struct {
	app         *app
	st          recall.Store
	project     string
	interactive bool
	agent       *agent.Agent
	model       builtModel
	history     int

	// cancelAll ends the whole chat; cancelTurn, while a reply is being
	// generated, ends just that reply. Ctrl-C calls one of them.
	mu         sync.Mutex
	cancelAll  context.CancelFunc
	cancelTurn context.CancelFunc

	key recall.Key

	extras chatExtras // memory and compaction (chatextra.go)
	// workspaces keeps the tools in the current session's project folder
	// (workspace.go); nil: the tools stay as they are.
	workspaces *chatWorkspaces

	// recapTurns is how many turns resuming a session prints (--show-history);
	// hinted records that the model was named, which is said once.
	recapTurns int
	hinted     bool
}

// switchTo makes key the current session, titles it name when name is
// set, and reports how many items it restored.
func (c *chatSession) switchTo(ctx context.Context, key recall.Key, name string) error {
	c.key = key
	if err := c.extras.loadMemory(c.agent); err != nil {
		return err
	}
	m, err := c.st.Stat(ctx, key)
	exists := err == nil
	if err != nil && !errors.Is(err, recall.ErrNotFound) {
		return err
	}
	if exists && !m.Trashed.IsZero() {
		return withHint(fmt.Errorf("session %s is in the trash", key.Session),
			"'recall trash restore "+key.Session+"' brings it back")
	}
	c.followWorkspace(m, exists)
	if name != "" {
		if err := c.rename(ctx, name); err != nil {
			return err
		}
		m, _ = c.st.Stat(ctx, key)
	}
	if exists && m.Archived {
		// Resuming an archived session brings it back to the lists.
		if _, err := recall.NewSession(c.st, key).ChangeMeta(ctx, recall.MetaChange{Archived: new(false)}); err != nil {
			return err
		}
		c.app.notef("session %s was archived; it is listed again\n", key.Session)
	}
	what := "new session"
	if exists {
		what = "session"
	}
	line := fmt.Sprintf("%s %s", what, key.Session)
	if m.Title != "" {
		line += fmt.Sprintf(" %q", m.Title)
	}
	restored := count(m.ItemCount, "item")
	if c.history > 0 && m.ItemCount > c.history {
		// --history sends only the newest items; say how many.
		restored = fmt.Sprintf("%d of %s", c.history, restored)
	}
	if c.hinted {
		c.app.notef("%s: restored %s\n", line, restored)
	} else {
		c.app.notef("%s: restored %s (model: %s)\n", line, restored, c.model.label)
		c.hinted = true
	}
	if exists && c.recapTurns > 0 && c.interactive {
		return c.showHistory(ctx, c.recapTurns)
	}
	return nil
}

// rename sets the current session's title as a user title. A session
// that does not exist yet is created with it (and with its folder, as
// its first write would record it), so a title given before the first
// message (/new TITLE, --name) is kept even when no message follows.
func (c *chatSession) rename(ctx context.Context, title string) error {
	_, err := recall.NewSession(c.st, c.key).SetTitle(ctx, title, recall.TitleUser)
	if !errors.Is(err, recall.ErrNotFound) {
		return err
	}
	opts := recall.CreateOptions{Title: title}
	if w := c.workspaces; w != nil && w.record {
		opts.Metadata = folderMetadata(w.home)
	}
	_, err = recall.NewSession(c.st, c.key).Create(ctx, opts)
	if errors.Is(err, recall.ErrConflict) { // another process created it meanwhile
		_, err = recall.NewSession(c.st, c.key).SetTitle(ctx, title, recall.TitleUser)
		return err
	}
	if err == nil && opts.Metadata != nil {
		c.workspaces.record = false
	}
	return err
}

// send runs the agent on one user message in the current session,
// streaming the reply to stdout. The input and each turn are saved as soon
// as they exist (agent.Run), so an error or Ctrl-C loses at most the turn
// in flight.
func (c *chatSession) send(ctx context.Context, text string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Ctrl-C stops the reply, not the save of the message it answers:
	// a cancel that comes while the input is being written waits for that
	// write (at most inputSaveGrace), so "your message is saved" holds.
	saved := make(chan struct{})
	c.setTurn(func() {
		go func() {
			select {
			case <-saved:
			case <-time.After(inputSaveGrace):
			}
			cancel()
		}()
	})
	defer c.setTurn(nil)
	var once sync.Once
	onPersist := func(ctx context.Context, items []recall.Item) error {
		once.Do(func() { close(saved) })
		return c.onPersist(ctx, items)
	}

	out := &lineTracker{w: c.app.stdout}
	stopSpinner := func() {}
	if c.interactive {
		stopSpinner = startSpinner(c.app.stdout)
	}
	defer stopSpinner()
	res, err := agent.Run(ctx, c.agent, agent.UserText(text), c.extras.runOptions(c.st, c.key, agent.RunOptions{
		HistoryLimit: c.history,
		OnDelta: func(s string) {
			stopSpinner()
			out.write(s)
		},
		OnTool: func(ev agent.ToolEvent) {
			stopSpinner()
			out.endLine()
			status := fmt.Sprintf("%d bytes", len(ev.Output))
			if ev.Err != nil {
				status = "error: " + ev.Err.Error()
			}
			c.app.notef("[tool] %s %s -> %s\n", ev.Call.Name, ev.Call.Arguments, status)
		},
		OnPersist: onPersist,
		Titler:    c.model.titler,
	}))
	stopSpinner()
	out.endLine()
	if err != nil {
		c.titleFromMessage(ctx, text)
	}
	c.extras.report(c.app, c.key, res)
	if res != nil && res.Title != "" && c.interactive {
		c.app.notef("(titled %q)\n", res.Title)
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		select {
		case <-saved:
			return withHint(errors.New("interrupted; the reply in flight was not saved"), "your message is saved; send another or /undo it")
		default:
			return withHint(errors.New("interrupted before your message was saved"), "send it again")
		}
	}
	return err
}

// inputSaveGrace bounds how long Ctrl-C waits for the save of the message
// in flight before it cancels that save too (a store that hangs).
const inputSaveGrace = 10 * time.Second

// setTurn records the cancel function of the reply in flight (nil: none).
func (c *chatSession) setTurn(cancel context.CancelFunc) {
	c.mu.Lock()
	c.cancelTurn = cancel
	c.mu.Unlock()
}

// catchInterrupts handles Ctrl-C until stop is called. During a reply it
// stops the reply; the REPL then carries on in a terminal and ends when
// its input is piped. At an interactive prompt it only says how to leave;
// with piped input and no reply in flight it exits at once, as a pipeline
// stage should.
func (c *chatSession) catchInterrupts() (stop func()) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-sig:
			}
			c.mu.Lock()
			turn := c.cancelTurn
			c.mu.Unlock()
			switch {
			case turn != nil && c.interactive:
				turn()
			case turn != nil:
				c.cancelAll()
			case c.interactive:
				c.app.notef("\n(/exit or Ctrl-D leaves)\n> ")
			default:
				os.Exit(130) // the usual status of a process ended by SIGINT
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
	}
}

// onPersist records the workspace folder once the first write has
// created the session.
func (c *chatSession) onPersist(ctx context.Context, _ []recall.Item) error {
	return c.recordWorkspace(ctx)
}

// lineTracker writes streamed text and remembers whether the cursor is at
// the start of a line, so status lines never glue onto a reply.
type lineTracker struct {
	w       interface{ Write([]byte) (int, error) }
	midLine bool
}

func (l *lineTracker) write(s string) {
	if s == "" {
		return
	}
	_, _ = l.w.Write([]byte(s))
	l.midLine = !strings.HasSuffix(s, "\n")
}

func (l *lineTracker) endLine() {
	if l.midLine {
		_, _ = l.w.Write([]byte("\n"))
		l.midLine = false
	}
}

// titleFromMessage titles a session whose reply failed after the user's
// message was saved, from that message, rather than leaving it untitled.
func (c *chatSession) titleFromMessage(ctx context.Context, text string) {
	m, err := c.st.Stat(context.WithoutCancel(ctx), c.key)
	if err != nil || m.TitleSource != recall.TitleNone {
		return
	}
	if t := title.Clean(text, 0); t != "" {
		_, _ = recall.NewSession(c.st, c.key).SetTitle(context.WithoutCancel(ctx), t, recall.TitleAuto)
	}
}
