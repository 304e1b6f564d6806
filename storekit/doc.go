// Package storekit is the kit for writing a recall.Store: the helpers
// every backend in this module uses, exported so third-party stores behave
// the same way. An application developer never needs it; the recall
// package is their API.
//
// What a store does with each helper:
//
//   - Append: validate the batch with ValidateEntries before
//     anything is written, check the caller's recall.Guard with
//     Guard.Check under the same lock or transaction that assigns seqs,
//     and keep metadata with recall.Meta.Apply.
//   - Items and Pop: read the log from the end and reduce it with [Tail]
//     ([Backwards] for a log held in memory), so the cost is O(limit).
//   - Import: [ImportPlan] drops entries already held and checks that the
//     rest continue the log; the write is then guarded by the LastSeq the
//     plan was made against.
//   - Fork (optional, [Forker]): [ForkLog] builds the new log, which
//     the store writes in one step of its own; without it, recall.StoreSession.Fork
//     falls back to Load and Append.
//   - List: [CheckListOptions] validates the arguments; a store that
//     holds its metadata in memory filters with [Matches] and pages with
//     [Paginate]; one that sorts records itself orders them with
//     [CompareListOrder] and continues from a [Cursor].
//   - Purge (optional, [Purger]): [PurgeLog] builds the log a purge
//     leaves, which the store writes in one atomic step.
//   - Search (recall.Searcher): package search; search.Scan for a store
//     without an index.
//   - Cleanup, Projects and ReadItems (optional: [Cleaner],
//     [ProjectLister], [ItemPager]): the store answers from its own index
//     or in one query; without them the recall functions fall back to
//     List, Remove and Items.
//
// [Verify] and [VerifySession] check every invariant of a store's
// sessions from outside (`recall check` runs them).
//
// The conformance suite, storetest, checks the result.
package storekit
