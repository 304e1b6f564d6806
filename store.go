package recall

import (
	"context"
	"time"
)

// Store holds many sessions. Every implementation is safe for concurrent
// use by multiple goroutines; the file store is also safe across processes.
//
// Every method returns ctx.Err() (wrapped) and changes nothing when ctx
// ends before its write commits.
//
// What every store does the same way over these methods is written once,
// as functions of this package that use a store's own method when it has
// one (Searcher, and the optional abilities in package storekit, found
// through wrappers by As) and a documented fallback when it does not:
// Search, Fork, Cleanup, Projects, ReadItems, and the lifecycle helpers
// (Create, SetTitle, ChangeMeta, RemoveItem).
//
// Conformance is checked by storetest.Run, which every backend passes;
// package storekit has the helpers a backend author needs.
type Store interface {
	// Append writes entries to the end of key's log as one atomic batch
	// and returns the seq of the last one. The store assigns Seq, and Time
	// when it is zero.
	//
	// The guard is checked atomically with the write (see Guard): a
	// failed guard writes nothing and returns an error wrapping
	// ErrNotFound or ErrConflict. The zero Guard creates the session if
	// it does not exist. An empty batch writes nothing; it returns the
	// current last seq (0 for a missing session) after checking the guard.
	//
	// Every entry is validated before anything is written (see
	// ValidateEntries): a bad item fails the whole batch with
	// ErrInvalidItem or ErrTooLarge.
	Append(ctx context.Context, key Key, guard Guard, entries ...Entry) (int64, error)

	// Items returns the newest limit items of the session's view, oldest
	// first (limit <= 0 returns all of them), together with the LastSeq of
	// the log they were read from: the view and the seq are one
	// consistent snapshot. A session that does not exist has no items:
	// Items returns nil, 0 and no error. The items are copies.
	Items(ctx context.Context, key Key, limit int) ([]LiveItem, int64, error)

	// Pop atomically removes the newest item, by appending a pop entry, and
	// returns it. It returns nil and no error when the session is empty or
	// does not exist.
	Pop(ctx context.Context, key Key) (Item, error)

	// Stat returns the session's metadata, or ErrNotFound.
	Stat(ctx context.Context, key Key) (Meta, error)

	// Load returns the session's metadata and its whole log in Seq order,
	// read as one consistent snapshot, or ErrNotFound.
	Load(ctx context.Context, key Key) (Meta, []Entry, error)

	// Entries returns up to limit entries (all when limit <= 0) with Seq
	// greater than after, in Seq order: a page of the log, for replication
	// and export. A session that does not exist yields ErrNotFound.
	Entries(ctx context.Context, key Key, after int64, limit int) ([]Entry, error)

	// List returns one page of session metadata, newest-updated first
	// (ties broken by project, then ID), without reading any items. An
	// empty project lists every project. See ListOptions.
	List(ctx context.Context, project string, opts ListOptions) (Page, error)

	// Remove deletes a session and every subagent record under it, or, for
	// a key with a Subpath, that one record. It returns ErrNotFound when
	// there is nothing to remove.
	Remove(ctx context.Context, key Key) error

	// Import appends entries that already carry their Seq and Time, as
	// replicated from another store. It is idempotent by seq: entries at
	// or below the session's LastSeq are skipped. The rest must continue
	// the log without a gap (the write is guarded by the LastSeq they
	// continue, see storekit.ImportPlan), or Import returns ErrConflict
	// and writes nothing. It returns the session's LastSeq afterwards.
	Import(ctx context.Context, key Key, entries ...Entry) (int64, error)

	// Close releases the store's resources. Calls after Close return
	// ErrClosed.
	Close() error
}

// ListOptions selects a page of List.
type ListOptions struct {
	// Limit is the page size. Default (0): DefaultListLimit. Negative: no limit.
	Limit int
	// Cursor continues from a previous Page.Next. Default: the first page.
	Cursor string
	// IncludeArchived lists archived sessions too. Default: they are left out.
	IncludeArchived bool
	// Parent, when set, lists the subagent records under that session ID
	// instead of the project's main sessions. It needs a project.
	Parent string
	// Pinned lists only pinned sessions (Meta.Pinned). It combines with
	// the other options, and a cursor pages within the pinned listing.
	// Stores keep an index of pinned sessions, so such a listing costs
	// about the number of pinned sessions, not of the project's
	// sessions: a caller that shows pinned sessions first lists them
	// with it. Default: every session.
	Pinned bool
	// Trashed lists only the sessions in the trash (Meta.Trashed set),
	// archived ones included, in the same order and with the same
	// cursors as any List. Default: sessions in the trash are left out
	// of every listing.
	Trashed bool
}

// Page is one page of List.
type Page struct {
	Sessions []Meta `json:"sessions"`
	// Next is the cursor of the following page, or "" on the last page.
	Next string `json:"next,omitempty"`
}

// ProjectInfo describes one project of a store.
type ProjectInfo struct {
	Project  string    `json:"project"`
	Sessions int       `json:"sessions"`
	Updated  time.Time `json:"updated"`
}

// CleanupOptions selects what Cleanup, or EmptyTrash, removes.
type CleanupOptions struct {
	// OlderThan is the cutoff: sessions last updated before it go (for
	// EmptyTrash: moved to the trash before it). The zero time removes
	// nothing.
	OlderThan time.Time
	// DryRun reports without deleting.
	DryRun bool
	// Project limits the cleanup to one project. Default: every project.
	Project string
	// Purge deletes the sessions at once. Default: they are moved to
	// the trash (StoreSession.Trash), which EmptyTrash empties. EmptyTrash
	// always deletes and ignores it.
	Purge bool
}

// CleanupReport is what Cleanup or EmptyTrash removed (or would remove).
type CleanupReport struct {
	// Removed are the sessions moved to the trash (Cleanup) or deleted
	// (Cleanup with Purge, EmptyTrash), as they were listed.
	Removed []Meta `json:"removed"`
	// Kept counts sessions past the cutoff that were kept because
	// they are pinned.
	Kept int `json:"kept_pinned"`
}
