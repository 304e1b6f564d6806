package mirror

import (
	"context"
	"fmt"
	"sync"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Lazy returns a store that opens the store open returns on first use, so
// that a mirror can start while its replica is unreachable (opening a
// Redis or PostgreSQL store fails when the server is down). A failed open
// fails that call, like any replica error, and the next call tries again;
// the mirror's backoff spaces the attempts. Close closes the store if it
// was opened.
func Lazy(open func(ctx context.Context) (recall.Store, error)) recall.Store {
	return &lazy{open: open}
}

type lazy struct {
	open func(ctx context.Context) (recall.Store, error)

	mu     sync.Mutex
	st     recall.Store
	closed bool
}

// lazy has no Fork of its own (recall.StoreSession.Fork's fallback works through it);
// Search, Cleanup and Projects reach the store's own, when it has them,
// through recall.Search, recall.Cleanup and recall.Projects.
var (
	_ recall.Store           = (*lazy)(nil)
	_ recall.Searcher        = (*lazy)(nil)
	_ storekit.Cleaner       = (*lazy)(nil)
	_ storekit.ProjectLister = (*lazy)(nil)
)

// Search implements recall.Searcher with the store's own Search.
func (l *lazy) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	st, err := l.get(ctx)
	if err != nil {
		return recall.SearchPage{}, err
	}
	return recall.Search(ctx, st, opts)
}

// get returns the store, opening it if needed. The lock is held during the
// open, so concurrent callers wait for one attempt rather than race.
func (l *lazy) get(ctx context.Context) (recall.Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, recall.ErrClosed
	}
	if l.st != nil {
		return l.st, nil
	}
	st, err := l.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("mirror: open replica: %w", err)
	}
	l.st = st
	return st, nil
}

func (l *lazy) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	st, err := l.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.Append(ctx, key, guard, entries...)
}

func (l *lazy) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, 0, err
	}
	return st.Items(ctx, key, limit)
}

func (l *lazy) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.Pop(ctx, key)
}

func (l *lazy) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	st, err := l.get(ctx)
	if err != nil {
		return recall.Meta{}, err
	}
	return st.Stat(ctx, key)
}

func (l *lazy) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	st, err := l.get(ctx)
	if err != nil {
		return recall.Meta{}, nil, err
	}
	return st.Load(ctx, key)
}

func (l *lazy) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return st.Entries(ctx, key, after, limit)
}

func (l *lazy) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	st, err := l.get(ctx)
	if err != nil {
		return recall.Page{}, err
	}
	return st.List(ctx, project, opts)
}

func (l *lazy) Projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	st, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return recall.Projects(ctx, st)
}

func (l *lazy) Remove(ctx context.Context, key recall.Key) error {
	st, err := l.get(ctx)
	if err != nil {
		return err
	}
	return st.Remove(ctx, key)
}

func (l *lazy) Cleanup(ctx context.Context, opts recall.CleanupOptions) (recall.CleanupReport, error) {
	st, err := l.get(ctx)
	if err != nil {
		return recall.CleanupReport{}, err
	}
	return recall.Cleanup(ctx, st, opts)
}

func (l *lazy) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	st, err := l.get(ctx)
	if err != nil {
		return 0, err
	}
	return st.Import(ctx, key, entries...)
}

// Close closes the store if it was opened; later calls return ErrClosed.
func (l *lazy) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return recall.ErrClosed
	}
	l.closed = true
	if l.st == nil {
		return nil
	}
	return l.st.Close()
}
