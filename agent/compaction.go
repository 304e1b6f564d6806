package agent

import (
	"context"

	"github.com/recallkit/recall"
)

// CompactionAware is an optional ability of a Session: it can replace the
// older part of its history by something shorter (a summary), so that a
// long conversation still fits the model's context. The result is written
// as a compaction entry: the entries it replaces stay in the log, so
// exports and `recall show --full` still see them, while GetItems returns
// the compacted view. compact.Session is the implementation recall ships.
//
// Callers find it by type assertion, the way database/sql/driver finds
// its optional interfaces:
//
//	if ca, ok := sess.(agent.CompactionAware); ok {
//		res, err := ca.RunCompaction(ctx, agent.CompactionArgs{KeepLast: 10})
//	}
//
// If a Session does not implement CompactionAware, nothing compacts it:
// agent.Run sends the whole history (bounded by RunOptions.HistoryLimit
// only), and `recall compact` fails with ErrUnsupported.
type CompactionAware interface {
	// RunCompaction compacts the session now, or does nothing and reports
	// Compacted false when the view is under the trigger (see
	// CompactionArgs) or holds nothing older than the items kept.
	//
	// It must never lose an item appended while it works: it writes its
	// compaction entry with Through set to the LastSeq it read, so the
	// store refuses the entry (ErrConflict) after any concurrent append,
	// and it then reads the log again and retries a bounded number of
	// times. An error that wraps ErrConflict means it gave up.
	RunCompaction(ctx context.Context, args CompactionArgs) (CompactionResult, error)
}

// CompactionArgs say how RunCompaction compacts. The zero value compacts
// with the implementation's defaults when its own policy says so.
type CompactionArgs struct {
	// Force compacts even when the view is under the trigger, as a person
	// asking for it (/compact, `recall compact`) means. Default: false.
	Force bool
	// KeepLast is the least number of newest items kept verbatim after
	// the summary. More are kept when the cut would separate a
	// function_call from its output or a reasoning item from the item that
	// follows it. Default (0): the implementation's (compact.DefaultKeepLast).
	// Negative: keep none beyond what those rules require.
	KeepLast int
	// TriggerTokens, when positive and Force is false, compacts only when
	// the view's agent.EstimateTokens exceeds it. It is checked against the view
	// as read, again at every retry, so two callers racing to compact the
	// same session compact it once. Default (0): the implementation's own
	// policy decides.
	TriggerTokens int
	// Instructions is extra guidance for the summary ("keep every API
	// decision"). Compactors that take none ignore it. Default: none.
	Instructions string
}

// CompactionResult reports what RunCompaction did.
type CompactionResult struct {
	// Compacted is false when nothing was written.
	Compacted bool `json:"compacted"`
	// Seq is the compaction entry's seq, or 0.
	Seq int64 `json:"seq,omitempty"`
	// Before and After count the items of the view before and after.
	Before int `json:"before"`
	After  int `json:"after"`
	// Summarized counts the older items replaced; Kept the newest items
	// kept verbatim.
	Summarized int `json:"summarized"`
	Kept       int `json:"kept"`
	// TokensBefore and TokensAfter are agent.EstimateTokens of the view before
	// and after.
	TokensBefore int `json:"tokens_before"`
	TokensAfter  int `json:"tokens_after"`
	// Strategy names the compactor that ran ("summary", "openai").
	Strategy string `json:"strategy,omitempty"`
	// Retries counts the times the compaction entry lost a race with a
	// concurrent write and was planned again.
	Retries int `json:"retries,omitempty"`
	// Usage is the token usage of the model calls the compaction made. It
	// is also recorded on the compaction entry, so recall.Meta.Usage counts it.
	Usage recall.Usage `json:"usage"`
	// NoGain is true when a compaction was made but not written because
	// its view would not have had fewer estimated tokens than
	// TokensBefore: compaction only shrinks. TokensAfter is then
	// TokensBefore, and TokensWouldBe what the compacted view would have
	// taken.
	NoGain        bool `json:"no_gain"`
	TokensWouldBe int  `json:"tokens_would_be,omitempty"`
}

// StoreBacked is an optional ability of a Session: it names the Store and
// Key it lives in, so a caller can write entries beside its items. agent.Run
// uses it to record token usage on the items of a turn, to title the
// session, to compact it, and to keep subagent records under it.
// *recall.StoreSession, and every Session that embeds one (compact.Session), has
// it; a wrapper Session should forward it.
//
// If a Session does not implement StoreBacked, agent.Run falls back to
// AddItems alone: the items are stored, but without usage, no title is
// set, and subagent runs keep no record.
type StoreBacked interface {
	Store() recall.Store
	Key() recall.Key
}

var _ StoreBacked = (*recall.StoreSession)(nil)
