package sqlstore

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
)

// Work off the append's path on SQLite.
//
// Two kinds of work used to fall on whichever append met them, so that one
// append in a few dozen took three to five times as long as the others
// (docs/BENCHMARKS.md, "Durable turns on a long session"):
//
//   - SQLite's automatic WAL checkpoint, which the connection that commits
//     runs once the WAL holds 1,000 pages: it copies them into the
//     database file and syncs it, in the committing call;
//   - the search rows of a session its appends left searchLag entries
//     behind (see searchbehind.go), which that append wrote, all of them.
//
// Both now run on a goroutine of the store, after the commit that made
// them due. The checkpoint is a PASSIVE one on a connection of its own,
// which copies what it can without taking the write lock, so appends go
// on meanwhile; the writer's wal_autocheckpoint is raised to walBound
// pages, a bound on the WAL's growth past which the writer checkpoints
// itself as before. The WAL grows that far when the goroutine falls
// behind (a reader holding an old snapshot, a long import), and under
// appends that follow each other so closely that no checkpoint finds it
// wholly copied, which SQLite needs to start it over from its first page:
// then the writer's checkpoint copies only the pages written since the
// goroutine's last one, once per walBound pages. The search rows are written by a write
// transaction of their own, through the group commit like any write
// (update), so a session's rows are written by none of its appends; an
// append that finds its session hardLag entries behind (the goroutine
// has not kept up, or the store is closing) writes them itself, so the
// rows never trail further.
//
// Neither changes what is durable or what a crash leaves: a checkpoint
// copies committed pages (SQLite's own crash-safe step, whoever runs it),
// and the entries and their search_behind mark are still written by the
// one commit that appends them; a catch-up that never runs leaves the
// mark for the next one or for a search (catchUpSearch).

// checkpointEvery is how many write transactions the store commits
// between two background checkpoints: about 5 to 7 WAL pages each for a
// small append, so a checkpoint copies a few hundred pages.
const checkpointEvery = 32

// walBound is the writer's wal_autocheckpoint, in pages (32 MiB at
// SQLite's 4 KiB page): the WAL's size past which the writer checkpoints
// itself, as every SQLite connection does at 1,000 pages by default.
const walBound = 8192

// hardLagFactor times searchLag is how many entries a session's rows may
// trail its log before an append writes them itself (see trailSearch).
const hardLagFactor = 4

// liteBackground runs a SQLite store's checkpoints and search catch-ups;
// see above.
type liteBackground struct {
	ctx  context.Context // ended by close
	stop context.CancelFunc
	wg   sync.WaitGroup
	// ckpt is the checkpoint's own connection (database/sql opens it at
	// the first checkpoint).
	ckpt *sql.DB
	// commits counts write transactions since the last checkpoint was
	// asked for; kick asks the goroutine for a checkpoint (checkpoint)
	// or for search rows (search), and is never blocked on.
	commits    atomic.Int64
	checkpoint chan struct{}
	search     chan struct{}

	mu  sync.Mutex
	due map[int64]bool // sids whose rows are to be written
	// off stops the goroutine's search catch-ups (closing): appends write
	// the rows themselves.
	off bool
	// hold, locked by a test, holds the goroutine's work back;
	// checkpoints counts those it ran (a test's).
	hold        sync.Mutex
	checkpoints atomic.Int64
}

// startBackground starts b's background goroutine; ckpt is the
// connection it checkpoints on.
func (b *liteBackend) startBackground(ckpt *sql.DB) {
	g := &b.bg
	g.ckpt = ckpt
	g.ckpt.SetMaxOpenConns(1)
	g.ctx, g.stop = context.WithCancel(context.Background())
	g.checkpoint, g.search = make(chan struct{}, 1), make(chan struct{}, 1)
	g.due = map[int64]bool{}
	g.wg.Go(b.background)
}

// background is the goroutine: it checkpoints and writes search rows as
// asked, until close.
func (b *liteBackend) background() {
	g := &b.bg
	for {
		select {
		case <-g.ctx.Done():
			return
		case <-g.checkpoint:
			// An error (a lock another process holds, a full disk)
			// leaves the pages in the WAL for the next checkpoint,
			// or for the writer's own past walBound.
			g.hold.Lock()
			if _, err := g.ckpt.ExecContext(g.ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err == nil {
				g.checkpoints.Add(1)
			}
			g.hold.Unlock()
		case <-g.search:
			b.catchUpDue()
		}
	}
}

// committed counts a write transaction just committed, and asks for a
// checkpoint every checkpointEvery of them.
func (g *liteBackground) committed() {
	if g.checkpoint == nil || g.commits.Add(1) < checkpointEvery {
		return
	}
	g.commits.Store(0)
	select {
	case g.checkpoint <- struct{}{}:
	default: // one is asked for already
	}
}

// searchDue asks the goroutine to write session sid's search rows once
// the transaction that calls it has committed, and reports whether it
// will: not when it is off (the caller writes them).
func (g *liteBackground) searchDue(sid int64) bool {
	if g.search == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.off {
		return false
	}
	g.due[sid] = true
	select {
	case g.search <- struct{}{}:
	default:
	}
	return true
}

// catchUpDue writes the search rows of the sessions asked for, each in a
// write transaction of its own. A transaction that fails leaves the
// session's mark for the next catch-up.
func (b *liteBackend) catchUpDue() {
	g := &b.bg
	g.hold.Lock()
	defer g.hold.Unlock()
	g.mu.Lock()
	due := g.due
	g.due = map[int64]bool{}
	g.mu.Unlock()
	for sid := range due {
		if g.ctx.Err() != nil {
			return
		}
		_ = b.update(g.ctx, func(ctx context.Context, q querier) error {
			return b.catchUpRange(ctx, q, sid-1, sid)
		})
	}
}

// closeBackground stops the goroutine and waits for it; appends made
// after it write their search rows themselves.
func (b *liteBackend) closeBackground() {
	g := &b.bg
	if g.stop == nil {
		return
	}
	g.mu.Lock()
	g.off = true
	g.mu.Unlock()
	g.stop()
	g.wg.Wait()
	g.ckpt.Close()
}
