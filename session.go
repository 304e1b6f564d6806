package recall

import (
	"context"
	"errors"
)

// Session is one conversation, as an agent loop sees it. It matches the
// session protocol of the OpenAI Agents SDK, so a loop written against it
// runs on any store.
type Session interface {
	// GetItems returns the newest limit items, oldest first; limit <= 0
	// returns all. The slice and the items are copies.
	GetItems(ctx context.Context, limit int) ([]Item, error)
	// AddItems appends items as one atomic batch. An empty call is a no-op.
	AddItems(ctx context.Context, items ...Item) error
	// PopItem removes and returns the newest item; nil, nil when empty.
	PopItem(ctx context.Context) (Item, error)
	// Clear removes every item. The log keeps them; the view starts over.
	Clear(ctx context.Context) error
}

// StoreSession is the Session of one key in a Store.
type StoreSession struct {
	store Store
	key   Key
}

var _ Session = (*StoreSession)(nil)

// NewSession returns the Session for key in store. Nothing is written until
// the first AddItems; key is validated by the store on each call.
func NewSession(store Store, key Key) *StoreSession {
	return &StoreSession{store: store, key: key}
}

// Key returns the session's key.
func (s *StoreSession) Key() Key { return s.key }

// Store returns the store the session lives in.
func (s *StoreSession) Store() Store { return s.store }

// GetItems implements Session.
func (s *StoreSession) GetItems(ctx context.Context, limit int) ([]Item, error) {
	live, _, err := s.store.Items(ctx, s.key, limit)
	if err != nil {
		return nil, err
	}
	return PlainItems(live), nil // Store.Items already returns copies
}

// AddItems implements Session.
func (s *StoreSession) AddItems(ctx context.Context, items ...Item) error {
	if len(items) == 0 {
		return nil
	}
	_, err := s.store.Append(ctx, s.key, Guard{}, ItemEntries(items...)...)
	return err
}

// PopItem implements Session.
func (s *StoreSession) PopItem(ctx context.Context) (Item, error) {
	return s.store.Pop(ctx, s.key)
}

// Clear implements Session: it appends a clear entry, so the view starts
// over while the log keeps every earlier entry. Clearing a session that
// does not exist is a no-op.
func (s *StoreSession) Clear(ctx context.Context) error {
	_, err := s.store.Append(ctx, s.key, IfExists(), Entry{Kind: KindClear})
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}
