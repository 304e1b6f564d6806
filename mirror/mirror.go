// Package mirror is a recall.Store that writes to a local primary store and
// replicates every session, asynchronously, to a replica store: the local
// store stays the source of truth, and a team dashboard, a second machine or
// a backup reads the replica.
//
// The model is Litestream:
//
//   - A write goes to the primary only and is acknowledged when the primary
//     has it, durably under the primary's own policy. The write path does no
//     replica I/O: it marks the session dirty in memory and wakes a worker,
//     so an outage of the replica never slows the local path.
//   - Workers copy each dirty session's log with primary.Entries and
//     replica.Import. Every operation is an entry (the creation of an
//     empty session, items, pops, removed items, clears, titles, archive,
//     pin, labels, metadata, compactions, the fork origin), so replicating
//     the log replicates every operation. Import is idempotent by seq, so
//     a replay duplicates nothing. A guarded Append ([recall.Guard]) is
//     checked by the primary, atomically there; what it writes is
//     replicated like any other entry.
//   - The position of a session (the last seq the replica confirmed) is kept
//     in a small cursor file beside the primary ([Options.StateDir]). The
//     cursor is a cache: the replica's LastSeq is the authority. On a
//     conflict or any other doubt the position is reset from replica.Stat
//     and replication goes on from there.
//   - While the replica is down, retries back off exponentially with
//     jitter, and the backlog drains in order when it returns.
//
// Reads (Items, Stat, Load, Entries, List, Projects) come from the primary.
// Deletes (Remove, Cleanup) stay local unless [Options.PropagateDeletes]. A
// purge ([Store.Purge], when the primary can) stays local: the replica keeps
// the history it drops.
//
// The mirror owns both stores: [Store.Shutdown], the graceful Close(ctx),
// flushes what it can before ctx's deadline and closes them; Close does the
// same with [Options.CloseTimeout]. What is not replicated then (the replica
// is down, the process is killed) is safe in the primary: at its next start
// a mirror over the same primary and StateDir scans the primary and copies
// every session the cursor file does not show as complete.
//
// Guarantees and limits:
//
//   - The replica receives every entry of every session, in seq order, each
//     exactly once (replays are skipped by Import), whatever the failures.
//   - A replica that holds a different log under a session's key (the
//     session was removed and re-created locally, or someone else writes
//     to the replica), or a primary log purged below the replica's
//     position, is not overwritten: the session stops with ErrDiverged,
//     shown by Status. Whenever a position is taken from the replica, the
//     two logs are compared by content (kind, time, payload bytes and
//     usage) at their first entry, and at the replica's last one when it
//     is not the position the cursor expected, so a session re-created
//     within the same microsecond shows too. With PropagateDeletes a
//     removal owed to the replica is kept in the cursor file and made
//     before the session is copied again, so the replica of a session
//     removed and re-created converges to the new log, across restarts.
//   - A replica that loses data is refilled after an outage the mirror
//     sees, on the next write to a session, by Recheck, or by Sync. One
//     that loses data while the mirror sees no error and the session is
//     idle is not noticed by the cursor file alone.
//   - Writes made to the primary directly, not through the mirror, are
//     replicated at the next write through the mirror to that session, or
//     at the next start.
//
// [Sync] is the one-shot, resumable backfill the `recall mirror sync`
// command runs.
package mirror

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Options configure a mirror. The zero value works: it keeps the replication
// position in memory only and uses the defaults below.
type Options struct {
	// StateDir is the directory of the cursor file (cursors.json), which
	// records, for each session, the last seq the replica confirmed, so a
	// restarted process resumes without asking the replica about every
	// session. It belongs with the primary: the CLI uses
	// StateDir(home, replicaURL), that is <home>/mirror/<hash of the
	// replica URL>, one directory per replica. It is created if missing.
	// Default "": no cursor file; each start then finds the position of
	// every session from the replica (one Stat per session).
	StateDir string

	// ReplicaName names the replica in the cursor file and in status
	// reports, for example a URL without its secrets (see
	// storeurl.Redact).
	// Default "".
	ReplicaName string

	// PropagateDeletes makes a local Remove, and the sessions a local
	// Cleanup deletes, be removed from the replica too (asynchronously,
	// like writes). Default false: the replica keeps them, because it may
	// keep a longer history than the local store.
	PropagateDeletes bool

	// Delay is how long a session waits in the queue after its first
	// unreplicated write, so that a burst of writes is copied in one
	// batch: it trades a little lag for much less work per entry, and so
	// for less competition with the local writes. Flush does not shorten
	// it; Shutdown does. Default 100ms; negative: none.
	Delay time.Duration

	// Workers is the number of sessions replicated at the same time.
	// Default 4.
	Workers int

	// BatchSize is the number of entries read from the primary and
	// imported into the replica per call. Default 256.
	BatchSize int

	// RetryMin is the first delay after a failed replication; each further
	// failure doubles it, up to RetryMax, and the delay is jittered (a
	// random point in its upper half). Default 100ms.
	RetryMin time.Duration

	// RetryMax caps the retry delay. Default 30s.
	RetryMax time.Duration

	// CallTimeout bounds each call to the replica, so a replica that hangs
	// counts as down. Default 30s.
	CallTimeout time.Duration

	// SaveInterval is how often, at most, the cursor file is rewritten
	// while replication makes progress. A cursor that is behind only
	// costs an idempotent replay after a crash. Default 1s.
	SaveInterval time.Duration

	// CloseTimeout bounds the flush Close does before it closes the
	// stores; Shutdown takes a context instead. Default 5s.
	CloseTimeout time.Duration
}

func (o Options) withDefaults() Options {
	switch {
	case o.Delay == 0:
		o.Delay = 100 * time.Millisecond
	case o.Delay < 0:
		o.Delay = 0
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 256
	}
	if o.RetryMin <= 0 {
		o.RetryMin = 100 * time.Millisecond
	}
	if o.RetryMax <= 0 {
		o.RetryMax = 30 * time.Second
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = o.RetryMin
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.SaveInterval <= 0 {
		o.SaveInterval = time.Second
	}
	if o.CloseTimeout <= 0 {
		o.CloseTimeout = 5 * time.Second
	}
	return o
}

// Store is a recall.Store that writes to a primary store and replicates it
// to a replica in the background. It owns both stores: Close and Shutdown
// close them.
type Store struct {
	primary, replica recall.Store
	opts             Options
	state            *stateFile // nil without Options.StateDir

	// ctx is cancelled by Shutdown to stop the workers, after the flush.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// wake has room for one signal: a worker that finds work re-signals,
	// so several queued sessions wake several workers.
	wake chan struct{}
	// saveReq asks the saver goroutine to write the cursor file soon.
	saveReq chan struct{}

	mu       sync.Mutex
	closed   bool
	sessions map[recall.Key]*session
	queue    []recall.Key // runnable sessions, oldest mark first
	// changed is closed and replaced whenever replication progresses or
	// fails, so Flush can wait for it.
	changed chan struct{}
	// outage is the count of consecutive replica-wide failures; gate is
	// the time before which no session is sent to the replica.
	outage int
	// downFailures counts replica-wide failures since the start.
	downFailures int
	gate         time.Time
	downSince    time.Time
	// prober is the one session sent to the replica while it is down.
	prober    *session
	lastErr   string
	lastErrAt time.Time
	lastSync  time.Time
	scanning  bool
	scanErr   string
	// saveMu serialises writes of the cursor file.
	saveMu sync.Mutex

	// forgotten holds sessions removed locally since the cursor file was
	// last written, so a merge with the file on disk drops them.
	forgotten map[recall.Key]bool
	// copying counts the workers replicating a session, including one
	// removed locally meanwhile (no longer in sessions), whose copy may
	// still write to the replica: Flush waits for them too.
	copying int
}

// session is the replication state of one session.
type session struct {
	// head is the last seq the primary is known to hold; 0 when unknown.
	head int64
	// replicated is the last seq the replica confirmed (the cursor).
	replicated int64
	// epoch counts resets of the position; a copy that started in an
	// earlier epoch does not report its position.
	epoch int
	// verified is set once replicated has been read from, or confirmed
	// by, the replica in this process; until then it is a cached guess.
	verified bool
	// doubt: the replica may have lost what replicated says it holds (an
	// outage ended, or Recheck). Until a copy confirms the position, the
	// cursor file says so, so that a restart checks the session again
	// rather than trust the position.
	doubt bool
	// dirty: the primary may hold entries the replica lacks.
	dirty bool
	// remove: a replica.Remove is owed (PropagateDeletes).
	remove  bool
	queued  bool
	due     time.Time // when a queued session may be copied (Options.Delay)
	running bool
	// waiting: a retry timer will queue the session again.
	waiting bool
	// stuck: a failure retrying cannot fix (a diverged replica, a purged
	// primary log, an entry the replica refuses). It clears on the next
	// local write to the session.
	stuck     bool
	attempts  int
	retryAt   time.Time // when waiting ends
	lastErr   string
	lastErrAt time.Time
}

// A mirror has no Fork of its own: recall.StoreSession.Fork's fallback (Load, then
// Append guarded by IfNew) goes through the mirror, which replicates the
// new session like any other write.
var (
	_ recall.Store           = (*Store)(nil)
	_ recall.Searcher        = (*Store)(nil)
	_ storekit.Cleaner       = (*Store)(nil)
	_ storekit.ProjectLister = (*Store)(nil)
	_ storekit.ItemPager     = (*Store)(nil)
	_ storekit.Purger        = (*Store)(nil)
)

// New returns a Store over primary and replica and starts replicating. In
// the background it first enumerates every session of the primary (every
// project, archived ones and subagent records included) and queues those
// the cursor file does not show as fully replicated, so a backlog left by
// an earlier run, or sessions the replica has never seen, catch up.
//
// New fails only if the cursor file cannot be read or created; it does not
// contact the replica.
func New(primary, replica recall.Store, opts Options) (*Store, error) {
	if primary == nil || replica == nil {
		return nil, fmt.Errorf("mirror: new: %w: nil store", recall.ErrUnsupported)
	}
	opts = opts.withDefaults()
	s := &Store{
		primary:   primary,
		replica:   replica,
		opts:      opts,
		wake:      make(chan struct{}, 1),
		saveReq:   make(chan struct{}, 1),
		sessions:  map[recall.Key]*session{},
		changed:   make(chan struct{}),
		forgotten: map[recall.Key]bool{},
		scanning:  true,
	}
	var saved map[recall.Key]savedSession
	if opts.StateDir != "" {
		st, err := openStateFile(opts.StateDir)
		if err != nil {
			return nil, err
		}
		s.state = st
		_, saved, err = st.read()
		if errors.Is(err, recall.ErrCorrupt) {
			// The cursor file is a cache: start over from the replica's
			// positions, and say so in the status.
			s.lastErr, s.lastErrAt = err.Error(), time.Now()
		} else if err != nil {
			return nil, err
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if opts.PropagateDeletes {
		// Removals owed by an earlier run go first, before any write or
		// the scan can queue a copy of the session.
		s.mu.Lock()
		for k, ss := range saved {
			if ss.Remove {
				st := s.sessionLocked(k)
				st.remove, st.replicated, st.doubt = true, ss.Seq, true
				st.lastErr, st.lastErrAt = ss.LastError, ss.LastErrorAt
				s.enqueueLocked(k, st, false)
			}
		}
		s.mu.Unlock()
	}
	for range opts.Workers {
		s.wg.Go(s.worker)
	}
	if s.state != nil {
		s.wg.Go(s.saver)
	}
	s.wg.Go(func() { s.scan(s.ctx, saved) })
	return s, nil
}

// Primary returns the primary store. Writes made to it directly, not
// through the mirror, are replicated only after the next write through the
// mirror to the same session, or by the next start's scan.
func (s *Store) Primary() recall.Store { return s.primary }

// Replica returns the replica store.
func (s *Store) Replica() recall.Store { return s.replica }

// open reports ErrClosed after Close.
func (s *Store) open() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return recall.ErrClosed
	}
	return nil
}

// begin is what every method does first: a call under an ended context
// returns its error and changes nothing, even over a primary that would
// not check it; a call after Close returns ErrClosed.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	return s.open()
}

// Append implements recall.Store: it appends to the primary, which checks
// guard atomically with the write, returns once the primary has the batch,
// and replicates what was written later. A failed guard writes nothing,
// so nothing is replicated.
func (s *Store) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	seq, err := s.primary.Append(ctx, key, guard, entries...)
	if err == nil && len(entries) > 0 {
		s.mark(key, seq)
	}
	return seq, err
}

// Import implements recall.Store: it imports into the primary, which then
// replicates as usual.
func (s *Store) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	seq, err := s.primary.Import(ctx, key, entries...)
	if err == nil && len(entries) > 0 {
		s.mark(key, seq)
	}
	return seq, err
}

// Pop implements recall.Store.
func (s *Store) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	it, err := s.primary.Pop(ctx, key)
	if err == nil && it != nil {
		s.mark(key, 0) // the pop entry's seq is not returned; the worker reads it
	}
	return it, err
}

// Remove implements recall.Store. The replica keeps the session unless
// Options.PropagateDeletes.
func (s *Store) Remove(ctx context.Context, key recall.Key) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	if err := s.primary.Remove(ctx, key); err != nil {
		return err
	}
	s.forget(key)
	return nil
}

// Cleanup implements storekit.Cleaner on the primary (with its own Cleanup
// when it has one, recall.Cleanup's fallback otherwise). The sessions it
// deletes are removed from the replica too only with
// Options.PropagateDeletes; the replica's own cleanup is independent.
func (s *Store) Cleanup(ctx context.Context, opts recall.CleanupOptions) (recall.CleanupReport, error) {
	if err := s.begin(ctx); err != nil {
		return recall.CleanupReport{}, err
	}
	rep, err := recall.Cleanup(ctx, s.primary, opts)
	if !opts.DryRun {
		// A cleanup that failed part way removed some sessions already.
		for _, m := range rep.Removed {
			s.forget(m.Key)
		}
	}
	return rep, err
}

// Items implements recall.Store from the primary.
func (s *Store) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	if err := s.begin(ctx); err != nil {
		return nil, 0, err
	}
	return s.primary.Items(ctx, key, limit)
}

// Stat implements recall.Store from the primary.
func (s *Store) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if err := s.begin(ctx); err != nil {
		return recall.Meta{}, err
	}
	return s.primary.Stat(ctx, key)
}

// Load implements recall.Store from the primary.
func (s *Store) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	if err := s.begin(ctx); err != nil {
		return recall.Meta{}, nil, err
	}
	return s.primary.Load(ctx, key)
}

// Entries implements recall.Store from the primary.
func (s *Store) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	return s.primary.Entries(ctx, key, after, limit)
}

// List implements recall.Store from the primary.
func (s *Store) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	if err := s.begin(ctx); err != nil {
		return recall.Page{}, err
	}
	return s.primary.List(ctx, project, opts)
}

// Projects implements storekit.ProjectLister from the primary (with its own
// Projects when it has one, recall.Projects' fallback otherwise).
func (s *Store) Projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	return recall.Projects(ctx, s.primary)
}
