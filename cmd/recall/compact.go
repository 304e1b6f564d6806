package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/compact"
	"github.com/recallkit/recall/provider/offline"
	"github.com/recallkit/recall/storekit"
)

// compactFlags are the flags of recall compact.
type compactFlags struct {
	keep         int
	instructions string
	purge        bool
	model        modelFlags
}

func newCompactCmd(a *app) *cobra.Command {
	var f compactFlags
	cmd := &cobra.Command{
		Use:   "compact ID",
		Short: "Summarize the older part of a session to shrink what the model is sent",
		Long: `Compact a session: its older items are replaced, in what the model sees, by
a summary the model writes, and the newest items are kept as they are (at
least --keep, more when the cut would separate a tool call from its output).
On OpenAI's Responses API the server's own compact endpoint is used instead
of a summary.

A compaction only shrinks: when the summary would not take fewer tokens
than what it replaces, nothing is written and compact says so.

The replaced items stay in the session's log: 'recall show ID --full' and
'recall show ID --format jsonl' still show them. 'recall compact ID --purge'
then removes what earlier compactions replaced, for good, rewriting the log
(file store and mem:// only), without compacting again and without a model;
the session's title, labels and state are kept.

Compaction asks the model configured as for 'recall chat' (OPENAI_API_KEY,
OPENAI_BASE_URL, RECALL_MODEL or the flags below). 'recall chat' compacts
by itself past --compact-tokens, and /compact compacts by hand.`,
		Example: `  recall compact 0199a3f2-1b
  recall compact 0199a3f2-1b --keep 4 --instructions "keep every API decision"
  recall compact 0199a3f2-1b --purge`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.compact(cmd.Context(), argv[0], f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&f.keep, "keep", compact.DefaultKeepLast, "keep at least the newest `N` items verbatim")
	fl.StringVar(&f.instructions, "instructions", "", "extra guidance for the summary, e.g. \"keep the API decisions\"")
	fl.BoolVar(&f.purge, "purge", false, "do not compact: remove from the log, for good, what earlier compactions replaced")
	f.model.register(fl)
	return cmd
}

func (a *app) compact(ctx context.Context, ref string, f compactFlags) error {
	if f.keep < 0 {
		return usageError("--keep 0 summarizes everything", "--keep must not be negative")
	}
	if f.purge {
		return a.purge(ctx, ref)
	}
	model, err := f.model.build()
	if err != nil {
		return err
	}
	c, err := compactor(model.model)
	if err != nil {
		return err
	}
	st, m, err := a.resolve(ctx, ref)
	if err != nil {
		return err
	}
	keep := f.keep
	if keep == 0 {
		keep = -1 // CompactionArgs: 0 is the default, negative keeps none
	}
	res, err := compact.NewSession(st, m.Key, c, compact.Options{}).RunCompaction(ctx, agent.CompactionArgs{
		Force: true, KeepLast: keep, Instructions: f.instructions,
	})
	if err != nil {
		return fmt.Errorf("compact %s: %w", m.Key.Session, err)
	}
	if a.json {
		return a.printJSON(compactJSON{Session: m.Key.Session, Compaction: &res})
	}
	a.printf("%s\n", describeCompaction(m.Key.Session, res))
	return nil
}

// compactJSON is the shape of compact --json: the compaction made, or
// (with --purge) what the purge dropped; the other is null.
type compactJSON struct {
	Session    string                  `json:"session"`
	Compaction *agent.CompactionResult `json:"compaction"`
	Purge      *storekit.PurgeResult   `json:"purge"`
}

// purge removes from the log of ref what its compactions replaced,
// without compacting again (compaction and purge are separate steps).
func (a *app) purge(ctx context.Context, ref string) error {
	st, m, err := a.resolve(ctx, ref)
	if err != nil {
		return err
	}
	p, ok := recall.As[storekit.Purger](st)
	if !ok {
		return withHint(fmt.Errorf("purge %s: %w: this store cannot rewrite a log", m.Key.Session, recall.ErrUnsupported),
			"the file store (the default) and mem:// can purge")
	}
	pr, err := p.Purge(ctx, m.Key)
	if err != nil {
		return fmt.Errorf("purge %s: %w", m.Key.Session, err)
	}
	if a.json {
		return a.printJSON(compactJSON{Session: m.Key.Session, Purge: &pr})
	}
	if pr.Dropped == 0 {
		a.printf("%s: nothing to purge (no compaction replaced anything; 'recall compact %s' compacts it first)\n", m.Key.Session, m.Key.Session)
		return nil
	}
	a.printf("purged %d replaced log entries of %s\n", pr.Dropped, m.Key.Session)
	return nil
}

// describeCompaction is the status line of a compaction.
func describeCompaction(id string, r agent.CompactionResult) string {
	switch {
	case r.NoGain:
		return fmt.Sprintf("%s: not compacted: the summary would not shrink it (~%d -> ~%d tokens); nothing written",
			id, r.TokensBefore, r.TokensWouldBe)
	case !r.Compacted:
		return fmt.Sprintf("%s: nothing to compact (%s, all kept)", id, count(r.Before, "item"))
	}
	return fmt.Sprintf("compacted %s: %s -> %d (%d summarized, %d kept; ~%d -> ~%d tokens; %s)",
		id, count(r.Before, "item"), r.After, r.Summarized, r.Kept, r.TokensBefore, r.TokensAfter, r.Strategy)
}

// compactor returns what compacts sessions for model: the server's
// compact endpoint where it has one, else a summary by the model. The
// offline model cannot summarize, so it is refused.
func compactor(model agent.Model) (compact.Compactor, error) {
	if _, ok := model.(offline.Model); ok {
		return nil, withHint(errors.New("compaction needs a model to summarize, and none is configured"),
			"set OPENAI_API_KEY (and OPENAI_BASE_URL for another server)")
	}
	sum := &compact.Summarizer{Model: model}
	if e, ok := model.(compact.Endpoint); ok {
		return compact.Fallback(compact.Server(e), sum), nil
	}
	return sum, nil
}
