package sqlstore

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
)

// Group commit on SQLite.
//
// SQLite runs one write transaction at a time, and a commit costs far more
// than the statements in it: it writes every page the transaction changed
// to the WAL, and an append changes five (the entries table and its key
// index, the session row and its two List indexes). So update does not run
// one transaction per call: calls queue, and whichever caller takes the
// writer token starts a goroutine that runs every queued call in one
// transaction, each inside its own savepoint, then commits once. With one
// caller at a time this is a plain transaction; with many, they share the
// cost of the commit.
//
// Each call still sees the state every earlier call left, is all or
// nothing (a failed call is rolled back to its savepoint and reports its
// own error, leaving the others alone), and returns only after the commit
// that made it durable: what it reports is what happened.
//
// A caller whose context ends before its call has started running returns
// the context's error at once, and the call never runs (see abandon): it
// does not wait for the queue, nor for BEGIN IMMEDIATE, which waits up to
// busy_timeout for a write lock another connection (typically another
// process) holds. That is why the transaction runs on its own goroutine
// rather than on a caller's, so the caller can leave while it waits
// (unless the caller that starts it has a context that cannot end: it
// runs it itself, as it would wait anyway). When every call of a group
// has been given up, the BEGIN's own wait ends too.
// A call whose context ends once it has started is rolled back and reports
// the context's error after its group ends (see run), which takes the
// time of its statements and the commit, not of a lock.

// writeCall is one update waiting in the queue.
type writeCall struct {
	ctx  context.Context
	fn   func(ctx context.Context, q querier) error
	err  error
	done chan struct{}
	// state is callQueued until a group's transaction claims the call to
	// run it (callClaimed) or its caller gives it up (callAbandoned),
	// whichever comes first.
	state atomic.Int32
	// group is the group that took the call from the queue, under
	// liteBackend.mu.
	group *writeGroup
}

const (
	callQueued int32 = iota
	callClaimed
	callAbandoned
)

// writeGroup is the calls one transaction took from the queue.
type writeGroup struct {
	// waiting counts its calls not given up, under liteBackend.mu;
	// cancel ends the BEGIN's wait for the write lock when it drops to 0,
	// which a claimed call never lets it do.
	waiting int
	cancel  context.CancelFunc
}

// update runs fn in the next group transaction; see above. fn returning
// errRetry runs it again in a later one.
func (b *liteBackend) update(ctx context.Context, fn func(ctx context.Context, q querier) error) error {
	var err error
	for range maxAttempts {
		if err = b.commit(ctx, fn); !errors.Is(err, errRetry) {
			return err
		}
	}
	return err
}

// commit queues fn and waits until a transaction that ran it has ended, or
// until ctx ends before it started running. Whoever takes the writer token
// runs the queue (see runWriter); every caller still waiting competes for
// the token again once it is given back.
func (b *liteBackend) commit(ctx context.Context, fn func(ctx context.Context, q querier) error) error {
	c := &writeCall{ctx: ctx, fn: fn, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	for {
		select {
		case <-c.done:
			return c.err
		case <-ctx.Done():
			if b.abandon(c) {
				return ctx.Err()
			}
			<-c.done // running: it reports the context's error, or its commit
			return c.err
		case b.writer <- struct{}{}:
			if ctx.Done() == nil {
				b.runWriter() // a caller that cannot give up may as well wait in it
			} else {
				go b.runWriter()
			}
		}
	}
}

// runWriter runs the queue in one group and gives the writer token back.
func (b *liteBackend) runWriter() {
	// Let the callers the previous group just released queue their next
	// calls first: measured, this triples the calls per commit under
	// contention, and costs one yield.
	runtime.Gosched()
	b.runQueued()
	<-b.writer
}

// abandon gives c up, and reports whether it did: not when a transaction
// has claimed it to run. The last call of a group given up ends the
// group's wait for the write lock.
func (b *liteBackend) abandon(c *writeCall) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !c.state.CompareAndSwap(callQueued, callAbandoned) {
		return false
	}
	if g := c.group; g != nil {
		if g.waiting--; g.waiting == 0 {
			g.cancel()
		}
	}
	return true
}

// claim takes c to run it, unless its caller gave it up; a claimed call
// counts as waiting in its group for good, so the group's BEGIN is never
// canceled once a call will run in its transaction.
func (c *writeCall) claim() bool { return c.state.CompareAndSwap(callQueued, callClaimed) }

// runQueued runs every queued call in one transaction and reports to each.
// The transaction's BEGIN waits for the write lock under a context that
// the group's callers can end only when one of them can give up at all:
// otherwise it is context.Background(), which costs database/sql and the
// driver no goroutine watching it.
func (b *liteBackend) runQueued() {
	g := &writeGroup{cancel: func() {}}
	ctx, cancelable := context.Background(), false
	b.mu.Lock()
	calls := b.queue[:0] // the queue's array is the group's from here on
	for _, c := range b.queue {
		if c.state.Load() == callQueued {
			c.group = g
			calls = append(calls, c)
			cancelable = cancelable || c.ctx.Done() != nil
		}
	}
	b.queue = nil
	g.waiting = len(calls)
	if cancelable {
		ctx, g.cancel = context.WithCancel(ctx)
	}
	b.mu.Unlock()
	defer g.cancel()
	if len(calls) == 0 {
		return
	}
	b.transactions.Add(1)
	b.calls.Add(int64(len(calls)))
	err := b.runGroup(ctx, calls)
	if err == nil {
		b.bg.committed()
	}
	for _, c := range calls {
		if err != nil && c.err == nil {
			c.err = err // the transaction failed: the call's writes are gone
		}
		close(c.done)
	}
}

// run runs c's function, and reports c's context's error instead, writing
// nothing, when the context has ended before the function ran or by the
// time it returned.
//
// The first check catches a caller whose context ended but who has not
// given the call up yet. The second keeps the contract that a write whose
// context ends before it commits changes nothing: the caller undoes what
// the function wrote (ROLLBACK TO its savepoint, or of the transaction).
//
// The function's own context is not canceled: modernc.org/sqlite cancels
// a statement with sqlite3_interrupt, and an interrupted write rolls back
// the whole transaction, which would take the other calls of the group
// with it.
func run(c *writeCall, q querier) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	if err := c.fn(context.WithoutCancel(c.ctx), q); err != nil {
		return err
	}
	return c.ctx.Err()
}

// runGroup runs calls in one transaction on the writer connection. It
// begins IMMEDIATE (_txlock=immediate): the transaction holds the
// database's write lock from its first statement, so what a call reads
// cannot change, even by another process, before the commit. The BEGIN
// waits for the lock under ctx, which ends when every call has been given
// up meanwhile; past the BEGIN, the calls its callers gave up are
// skipped, and the transaction ends with no caller's context: it serves
// them all (ctx is never canceled once a call is claimed).
func (b *liteBackend) runGroup(ctx context.Context, calls []*writeCall) error {
	b.prepareWrites()
	tx, err := b.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	q := sqlQuerier{r: tx, tx: tx, cache: b.wstmts}
	ok := 0
	for _, c := range calls {
		if !c.claim() {
			continue // given up: its caller has left
		}
		if len(calls) == 1 {
			if c.err = run(c, q); c.err == nil {
				ok++
			}
			break
		}
		if _, err := tx.Stmt(b.savepoint).Exec(); err != nil {
			_ = tx.Rollback()
			return err
		}
		if c.err = run(c, q); c.err != nil {
			if _, err := tx.Stmt(b.rollbackTo).Exec(); err != nil {
				_ = tx.Rollback()
				return err
			}
		} else {
			ok++
		}
		if _, err := tx.Stmt(b.release).Exec(); err != nil {
			_ = tx.Rollback()
			return err
		}
	}
	if ok == 0 {
		_ = tx.Rollback()
		return nil
	}
	return tx.Commit()
}
