package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/recallkit/recall"
)

// Titler names a session from its conversation. Title must always return
// a usable title (falling back to a default on failure); title.Generator
// is the implementation recall ships.
type Titler interface {
	Title(ctx context.Context, items []recall.Item) string
}

// RunOptions configure Run. The zero value runs the loop without a
// session.
type RunOptions struct {
	// Session holds the conversation. Nil runs without history and
	// persists nothing.
	//
	// When the session implements StoreBacked, as
	// *recall.StoreSession and compact.Session do, Run writes through the
	// store so that token usage is recorded with the items, the session
	// can be titled, and subagent runs keep records under it. Otherwise
	// (a wrapper Session that does not forward StoreBacked) Run falls
	// back to AddItems: usage is not recorded, the session is not
	// titled, and SubagentTool keeps no records.
	Session recall.Session
	// HistoryLimit is how many of the newest stored items are sent to the
	// model. Default (0): all of them.
	HistoryLimit int
	// MaxTurns bounds the model calls of the run. Default (0):
	// DefaultMaxTurns.
	MaxTurns int
	// OnDelta receives the model's text as it streams, for UIs.
	OnDelta func(text string)
	// OnTool is told about every tool call once it has run, for UIs.
	OnTool func(ToolEvent)
	// OnPersist is called after every write to the session with the items
	// just written: first the input, then each turn. This is where a
	// memory layer plugs in. An error stops the run and is returned; the
	// items it was called with are already stored.
	OnPersist func(ctx context.Context, items []recall.Item) error
	// Titler titles the session after a completed run when it has no
	// title yet. The title is stored as an auto title, which never
	// replaces a user title. Default (nil): sessions are not titled.
	Titler Titler
	// CompactTokens, when positive, keeps what the model is sent within a
	// budget: when the estimated tokens of the history loaded plus the
	// input exceed it, Run compacts the session before the first model
	// call and sends the compacted view. The estimate is
	// agent.EstimateTokens, a token per 4 bytes of item JSON. The session
	// must implement CompactionAware (compact.Session does);
	// others are sent as they are. Default (0): Run never compacts.
	CompactTokens int
	// CompactKeepLast is the CompactionArgs.KeepLast of those
	// compactions: the newest items kept verbatim. Default (0): the
	// session's default (compact.DefaultKeepLast).
	CompactKeepLast int
}

// Result is what a Run did. Run returns it even with an error; it then
// describes what was persisted before the failure.
type Result struct {
	// History is the number of stored items sent to the model before the
	// input (after TrimOrphans).
	History int
	// Items are the items this run added, in order: the input, then each
	// completed turn's items.
	Items []recall.Item
	// Output is the text of the last assistant message the run produced.
	Output string
	// Usage sums the usage the model reported over the run's turns.
	Usage recall.Usage
	// Turns counts the completed turns.
	Turns int
	// Title is the title this run gave the session, or "" when it gave
	// none.
	Title string
	// Compaction is what the compaction this run triggered did (see
	// RunOptions.CompactTokens), or nil when it triggered none.
	Compaction *CompactionResult
}

// Run runs the agent on input as the next exchange of opts.Session:
//
//  1. it loads the newest HistoryLimit items and drops orphaned call
//     halves (TrimOrphans), since models reject them; when they and the
//     input exceed CompactTokens, it compacts the session and loads the
//     compacted view instead;
//  2. it saves the input before the model is called (even when the
//     compaction failed; the error is then returned);
//  3. it appends each turn right after the turn completes, as one batch:
//     the model's items followed by the tool outputs, with the turn's usage
//     on the model's last item. A function_call is thus never stored
//     without its output, and a crash loses at most the turn in flight;
//  4. after every write it calls OnPersist with the items written;
//  5. after a completed run it titles the session if it has no title.
//
// The history is sent to the model but not returned; the session is the
// record. An error from titling is returned with a complete Result.
func Run(ctx context.Context, a *Agent, input []recall.Item, opts RunOptions) (*Result, error) {
	res := &Result{}
	if err := a.check(); err != nil {
		return res, err
	}
	if err := recall.ValidateItems(input, 0); err != nil {
		return res, fmt.Errorf("agent %s: input: %w", a.Name, err)
	}
	var history []recall.Item
	if opts.Session != nil {
		h, err := opts.Session.GetItems(ctx, opts.HistoryLimit)
		if err != nil {
			return res, fmt.Errorf("agent %s: load history: %w", a.Name, err)
		}
		history = TrimOrphans(h)
	}
	// Tools (SubagentTool) find the session of the run they serve here.
	ctx = withSession(ctx, opts.Session)
	history, cerr := res.compact(ctx, opts, history, input)
	res.History = len(history)

	p := persister{sess: opts.Session, hook: opts.OnPersist}
	err := p.persist(ctx, input, 0, recall.Usage{}, func() { res.Items = append(res.Items, input...) })
	if err != nil {
		return res, fmt.Errorf("agent %s: input: %w", a.Name, err)
	}
	if cerr != nil {
		return res, fmt.Errorf("agent %s: %w", a.Name, cerr)
	}

	_, err = Loop(ctx, a, slices.Concat(history, input), LoopOptions{
		MaxTurns: opts.MaxTurns,
		OnDelta:  opts.OnDelta,
		OnTool:   opts.OnTool,
		OnTurn: func(ctx context.Context, t Turn) error {
			err := p.persist(ctx, t.Items(), len(t.Reply), t.Usage, func() {
				res.Items = append(res.Items, t.Items()...)
				res.Usage.Add(t.Usage)
				res.Turns = t.N
			})
			if err != nil {
				return fmt.Errorf("agent %s: turn %d: %w", a.Name, t.N, err)
			}
			return nil
		},
	})
	res.Output = LastAssistantText(res.Items[len(input):])
	if err != nil {
		return res, err
	}
	if opts.Titler != nil {
		if err := res.title(ctx, opts, history); err != nil {
			return res, fmt.Errorf("agent %s: title session: %w", a.Name, err)
		}
	}
	return res, nil
}

// title names an untitled store-backed session from its conversation.
func (res *Result) title(ctx context.Context, opts RunOptions, history []recall.Item) error {
	sb, ok := opts.Session.(StoreBacked)
	if !ok {
		return nil
	}
	store, key := sb.Store(), sb.Key()
	m, err := store.Stat(ctx, key)
	if errors.Is(err, recall.ErrNotFound) {
		return nil // nothing was stored, so there is nothing to name
	}
	if err != nil {
		return err
	}
	if m.TitleSource != recall.TitleNone {
		return nil
	}
	t := opts.Titler.Title(ctx, slices.Concat(history, res.Items))
	if t == "" {
		return nil
	}
	// SetTitle leaves a user title alone, even one set while the titler
	// ran, and Meta.Apply enforces the same rule on replay.
	m, err = recall.NewSession(store, key).SetTitle(ctx, t, recall.TitleAuto)
	if err != nil {
		return err
	}
	if m.TitleSource == recall.TitleAuto {
		res.Title = m.Title
	}
	return nil
}

// persister writes items to a session and calls the memory hook.
type persister struct {
	sess recall.Session
	hook func(context.Context, []recall.Item) error
}

// persist writes items as one batch, calls saved once they are stored,
// then calls the hook. usage belongs to the model's output, the first
// nModel items; it is recorded on the last of them.
func (p persister) persist(ctx context.Context, items []recall.Item, nModel int, usage recall.Usage, saved func()) error {
	if len(items) == 0 || p.sess == nil {
		saved()
		return nil
	}
	if sb, ok := p.sess.(StoreBacked); ok {
		entries := recall.ItemEntries(items...)
		if !usage.IsZero() && nModel > 0 {
			u := usage
			entries[nModel-1].Usage = &u
		}
		if _, err := sb.Store().Append(ctx, sb.Key(), recall.Guard{}, entries...); err != nil {
			return fmt.Errorf("save: %w", err)
		}
	} else if err := p.sess.AddItems(ctx, items...); err != nil {
		return fmt.Errorf("save: %w", err)
	}
	saved()
	if p.hook != nil {
		if err := p.hook(ctx, recall.CloneItems(items)); err != nil {
			return fmt.Errorf("persist hook: %w", err)
		}
	}
	return nil
}
