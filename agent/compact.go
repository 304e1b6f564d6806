package agent

import (
	"context"
	"fmt"

	"github.com/recallkit/recall"
)

// compact runs the compaction RunOptions.CompactTokens asks for, before
// the input is saved, and returns the history to send: the compacted
// view when it compacted, else history unchanged. An error is returned
// with history unchanged, so the caller can still save the input.
func (res *Result) compact(ctx context.Context, opts RunOptions, history, input []recall.Item) ([]recall.Item, error) {
	if opts.CompactTokens <= 0 || opts.Session == nil {
		return history, nil
	}
	inTokens := EstimateTokens(input...)
	if EstimateTokens(history...)+inTokens <= opts.CompactTokens {
		return history, nil
	}
	ca, ok := opts.Session.(CompactionAware)
	if !ok {
		return history, nil
	}
	// The session checks the trigger again on the whole view, which the
	// input is not part of yet; a run racing another over one session
	// thus compacts it once.
	cr, err := ca.RunCompaction(ctx, CompactionArgs{
		KeepLast:      opts.CompactKeepLast,
		TriggerTokens: max(opts.CompactTokens-inTokens, 1),
	})
	if err != nil {
		return history, fmt.Errorf("compact session: %w", err)
	}
	if !cr.Compacted {
		return history, nil
	}
	res.Compaction = &cr
	h, err := opts.Session.GetItems(ctx, opts.HistoryLimit)
	if err != nil {
		return history, fmt.Errorf("load compacted history: %w", err)
	}
	return TrimOrphans(h), nil
}

// EstimateTokens estimates the tokens items take in a model's context: one
// token per 4 bytes of their JSON, rounded up. It is the rule of thumb
// OpenAI gives for English text; it needs no tokenizer and is the same for
// every model, which is what a compaction trigger needs. It over-counts
// JSON-heavy items (tool calls, their structure) and under-counts text in
// scripts with multi-byte characters (a CJK character is 3 bytes and often
// a token of its own), so leave a margin below the model's real limit.
func EstimateTokens(items ...recall.Item) int {
	n := 0
	for _, it := range items {
		n += len(it)
	}
	return (n + 3) / 4
}
