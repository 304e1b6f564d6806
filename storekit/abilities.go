package storekit

import (
	"context"

	"github.com/recallkit/recall"
)

// The optional abilities of a recall.Store besides Purger and
// recall.Searcher. Each is a method a store may have to do natively what a
// function of package recall otherwise does with the Store interface
// alone: the function finds the method through wrappers (recall.As) and
// calls it, the way database/sql finds the optional interfaces of
// database/sql/driver. A store declares what it implements with a
// compile-time check:
//
//	var _ storekit.Forker = (*Store)(nil)

// Forker is a fork written natively. Without it, recall.StoreSession.Fork loads the
// source's log, derives the view at atSeq with recall.Replay, and appends
// the fork's log to newKey in one batch guarded by recall.IfNew, which is
// atomic in every store.
type Forker interface {
	// Fork behaves as recall.StoreSession.Fork documents.
	Fork(ctx context.Context, key recall.Key, atSeq int64, newKey recall.Key) (recall.Meta, error)
}

// Cleaner is a recall.Cleanup with CleanupOptions.Purge written
// natively, typically as one query or under one lock: it deletes the
// sessions for good, those in the trash too, whatever opts.Purge says.
// recall.Cleanup uses it only for a purge (a move to the trash is an
// append, guarded per session). Without it, recall.Cleanup lists the
// sessions (List with IncludeArchived, and with Trashed) and removes each
// that qualifies with Remove. That fallback is not atomic: a session that
// becomes active between the list and its removal is removed all the same.
type Cleaner interface {
	// Cleanup behaves as recall.Cleanup with opts.Purge documents.
	Cleanup(ctx context.Context, opts recall.CleanupOptions) (recall.CleanupReport, error)
}

// ProjectLister is the list of projects read natively (from an index or
// with one query). Without it, recall.Projects lists every main session
// with List and counts them per project.
type ProjectLister interface {
	// Projects behaves as recall.Projects documents.
	Projects(ctx context.Context) ([]recall.ProjectInfo, error)
}

// ItemPager reads one page of a session's view by position, in time
// proportional to the page (and the pop, remove, clear and compaction
// entries of the view), not to the session. Without it, recall.StoreSession.ReadItems
// reads the newest Limit+1 items with Items when that covers the page and
// the whole view otherwise.
type ItemPager interface {
	// ReadItems behaves as recall.StoreSession.ReadItems documents.
	ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error)
}
