package sqlstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// cancelFirst is the context watcher of the PostgreSQL connections (pgx's
// ctxwatch.Handler). When the context of a statement in flight ends, it
// has the server cancel the statement (a cancel request), and only once
// the server has taken the request does it stop waiting for the
// connection: the call returns the server's "canceling statement" error,
// or fails on the deadline set then.
//
// pgx's default does it the other way round: it stops waiting at once,
// then closes the connection and sends the cancel request. A statement
// waiting for a lock (a write behind another transaction's row lock) then
// lives on in the server until the request lands; when the lock is
// released first, the statement runs, and commits if it is a statement of
// its own or a batch's implicit transaction (appendItems, popNewest):
// after its caller was told that the write was canceled and wrote nothing
// (storetest's Context/Blocked case caught it).
type cancelFirst struct {
	conn *pgconn.PgConn
	done chan struct{} // closed once the cancel request is over
}

const (
	// cancelRequestTimeout bounds the cancel request: a server that does
	// not take it by then is not waited for.
	cancelRequestTimeout = 2 * time.Second
	// cancelAnswerWait is how long the statement's answer (its error) is
	// waited for once the server took the cancel request; the connection
	// is dropped when it does not come.
	cancelAnswerWait = time.Second
	// cancelSettle is how long a connection whose statement was canceled
	// stays out of use after the request: the server may signal the
	// backend a moment after it took the request, and that signal must not
	// cancel the connection's next statement (pgx's own cancel-request
	// handler waits as long, for the same reason).
	cancelSettle = 100 * time.Millisecond
)

// newCancelFirst is pgconn.Config.BuildContextWatcherHandler.
func newCancelFirst(c *pgconn.PgConn) ctxwatch.Handler { return &cancelFirst{conn: c} }

// HandleCancel implements ctxwatch.Handler.
func (h *cancelFirst) HandleCancel(context.Context) {
	h.done = make(chan struct{})
	go func() {
		defer close(h.done)
		ctx, cancel := context.WithTimeout(context.Background(), cancelRequestTimeout)
		defer cancel()
		_ = h.conn.CancelRequest(ctx) // a failure leaves the deadline below
		_ = h.conn.Conn().SetDeadline(time.Now().Add(cancelAnswerWait))
		time.Sleep(cancelSettle)
	}()
}

// HandleUnwatchAfterCancel implements ctxwatch.Handler: it runs when the
// canceled call is over, and keeps the connection until the request is.
func (h *cancelFirst) HandleUnwatchAfterCancel() {
	<-h.done
	_ = h.conn.Conn().SetDeadline(time.Time{})
}
