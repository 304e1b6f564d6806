package main

import (
	"context"
	"fmt"
	"time"

	"github.com/recallkit/recall"
)

// benchProject is the project every recall store keeps the sessions of a
// scope in.
const benchProject = "bench-project"

// storeSubject runs the workloads on any recall.Store through its public
// API: the Session handle for the per-conversation calls, Store for fork
// and list, the way an application uses it.
type storeSubject struct {
	store recall.Store
}

func (s *storeSubject) key(session string) recall.Key {
	return recall.Key{Project: benchProject, Session: session}
}

func (s *storeSubject) append(ctx context.Context, session string, items []recall.Item) error {
	return recall.NewSession(s.store, s.key(session)).AddItems(ctx, items...)
}

func (s *storeSubject) load(ctx context.Context, session string, limit int) ([]recall.Item, error) {
	return recall.NewSession(s.store, s.key(session)).GetItems(ctx, limit)
}

func (s *storeSubject) fork(ctx context.Context, src, dst string) error {
	_, err := recall.NewSession(s.store, s.key(src)).Fork(ctx, 0, s.key(dst))
	return err
}

func (s *storeSubject) pop(ctx context.Context, session string) (recall.Item, error) {
	return recall.NewSession(s.store, s.key(session)).PopItem(ctx)
}

func (s *storeSubject) list(ctx context.Context, limit int) ([]string, error) {
	page, err := s.store.List(ctx, benchProject, recall.ListOptions{Limit: limit})
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(page.Sessions))
	for i, m := range page.Sessions {
		ids[i] = m.Key.Session
	}
	return ids, nil
}

// seedAt writes the session through Import, the replication path, which
// keeps the entries' times: every entry is stamped updated.
func (s *storeSubject) seedAt(ctx context.Context, session string, items []recall.Item, updated time.Time) error {
	entries := recall.ItemEntries(items...)
	for i := range entries {
		entries[i].Seq = int64(i + 1)
		entries[i].Time = updated
	}
	_, err := s.store.Import(ctx, s.key(session), entries...)
	return err
}

func (s *storeSubject) close() error { return s.store.Close() }

// storeOpener adapts a function opening a recall.Store in a scope to
// contender.open.
func storeOpener(open func(ctx context.Context, scope string) (recall.Store, error)) func(context.Context, string) (subject, error) {
	return func(ctx context.Context, scope string) (subject, error) {
		st, err := open(ctx, scope)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", scope, err)
		}
		return &storeSubject{store: st}, nil
	}
}
