// Package compact keeps long conversations within a model's context by
// compaction: the older part of a session's view is replaced by something
// shorter (a summary), while the newest items are kept verbatim.
//
// [Session] wraps a session of a store and implements
// agent.CompactionAware. A compaction is recorded as one compaction entry
// in the session's log: its items (the summary, then the items kept) are
// the view from then on, and the entries it replaces stay in the log, so
// exports and `recall show --full` still see them. A store that implements
// storekit.Purger can remove them later, explicitly.
//
// What replaces the older items is a [Compactor]'s business:
//
//   - [Summarizer] (the default) asks a model for a summary and stores it
//     as one user message;
//   - [Server] uses a server's own compact endpoint, such as the OpenAI
//     Responses API's POST /v1/responses/compact (*openai.Model), which
//     returns opaque items;
//   - [Fallback] tries one, then the next when the first is unsupported.
//
// The cut between older and kept items never separates a function call
// from its output, nor a reasoning item from the item after it ([Cut]).
// A compaction never loses an item appended while the model was
// summarizing: its entry is guarded by the log's last seq, a
// compare-and-swap the store enforces, and it is retried when it loses.
//
// agent.Run triggers compaction when the estimated tokens of the history
// exceed RunOptions.CompactTokens (see agent.EstimateTokens); `recall
// compact ID` and /compact in `recall chat` trigger it by hand. See
// docs/COMPACTION.md.
package compact
