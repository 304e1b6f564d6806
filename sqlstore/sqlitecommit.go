package sqlstore

import (
	"context"
	"errors"
	"runtime"
)

// Group commit on SQLite.
//
// SQLite runs one write transaction at a time, and a commit costs far more
// than the statements in it: it writes every page the transaction changed
// to the WAL, and an append changes five (the entries table and its key
// index, the session row and its two List indexes). So update does not run
// one transaction per call: calls queue, and whichever caller holds the
// writer token runs every queued call in one transaction, each inside its
// own savepoint, then commits once. With one caller at a time this is a
// plain transaction; with many, they share the cost of the commit.
//
// Each call still sees the state every earlier call left, is all or
// nothing (a failed call is rolled back to its savepoint and reports its
// own error, leaving the others alone), and returns only after the commit
// that made it durable: what it reports is what happened. A call whose
// context has ended when its turn comes, or by the time it has run, is
// such a failure (see run).

// writeCall is one update waiting in the queue.
type writeCall struct {
	ctx  context.Context
	fn   func(ctx context.Context, q querier) error
	err  error
	done chan struct{}
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

// commit queues fn and waits until a transaction that ran it has ended,
// running that transaction itself when no one else is.
func (b *liteBackend) commit(ctx context.Context, fn func(ctx context.Context, q querier) error) error {
	c := &writeCall{ctx: ctx, fn: fn, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	b.mu.Unlock()
	select {
	case <-c.done:
	case b.writer <- struct{}{}:
		// This goroutine is the writer now. Its own call is still queued
		// (only a writer takes calls from the queue, and the previous one
		// has finished), unless the previous writer took it just before
		// leaving: one round settles it either way.
		select {
		case <-c.done:
		default:
			// Let the callers the previous writer just released queue
			// their next calls first: measured, this triples the calls
			// per commit under contention, and costs one yield.
			runtime.Gosched()
			b.runQueued()
		}
		<-b.writer
	}
	return c.err
}

// runQueued runs every queued call in one transaction and reports to each.
func (b *liteBackend) runQueued() {
	b.mu.Lock()
	calls := b.queue
	b.queue = nil
	b.mu.Unlock()
	live := calls[:0]
	for _, c := range calls {
		if err := c.ctx.Err(); err != nil {
			c.err = err // given up before it ran: nothing was written
			close(c.done)
			continue
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	b.transactions.Add(1)
	b.calls.Add(int64(len(live)))
	err := b.runGroup(live)
	for _, c := range live {
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
// The first check matters because the group's BEGIN IMMEDIATE may have
// waited a long time (up to busy_timeout) for another connection's write
// lock, typically another process's: a caller that gave up meanwhile must
// not then write. The second keeps the contract that a write whose context
// ends before it commits changes nothing: the caller undoes what the
// function wrote (ROLLBACK TO its savepoint, or of the transaction).
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
// cannot change, even by another process, before the commit. The
// transaction does not end with any caller's context: it serves them all.
func (b *liteBackend) runGroup(calls []*writeCall) error {
	b.prepareWrites()
	tx, err := b.w.BeginTx(context.Background(), nil)
	if err != nil {
		return err
	}
	q := sqlQuerier{r: tx, tx: tx, cache: b.wstmts}
	if len(calls) == 1 {
		if calls[0].err = run(calls[0], q); calls[0].err != nil {
			_ = tx.Rollback()
			return nil
		}
		return tx.Commit()
	}
	ok := 0
	for _, c := range calls {
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
