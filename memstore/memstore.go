// Package memstore is an in-memory recall.Store, for tests and short-lived
// agents. It keeps every session's whole log, guarded by one mutex, and
// returns copies, so callers can never change what it holds.
package memstore

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// Options configure a Store. The zero value works.
type Options struct {
	// MaxItemSize is the largest item accepted, in bytes.
	// Default: recall.DefaultMaxItemSize (32 MiB).
	MaxItemSize int
}

// Store is an in-memory recall.Store.
type Store struct {
	opts Options

	mu       sync.Mutex
	closed   bool
	sessions map[recall.Key]*session
}

type session struct {
	meta    recall.Meta
	entries []recall.Entry
}

// What the store implements: the Store and every optional ability.
var (
	_ recall.Store           = (*Store)(nil)
	_ recall.Searcher        = (*Store)(nil)
	_ storekit.Cleaner       = (*Store)(nil)
	_ storekit.ProjectLister = (*Store)(nil)
	_ storekit.ItemPager     = (*Store)(nil)
	_ storekit.Purger        = (*Store)(nil)
	_ storekit.Rewriter      = (*Store)(nil)
)

// New returns an empty store.
func New(opts Options) *Store {
	return &Store{opts: opts, sessions: map[recall.Key]*session{}}
}

// lock takes the mutex after checking key and ctx; the caller unlocks.
// Every method goes through it (or lockAll), so a call under an ended
// context changes nothing.
func (s *Store) lock(ctx context.Context, key recall.Key) error {
	if err := key.Validate(); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	return s.lockAll(ctx)
}

// lockAll takes the mutex after checking ctx; the caller unlocks.
func (s *Store) lockAll(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memstore: %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return recall.ErrClosed
	}
	return nil
}

// lockWrite opens a write of entries to key (op names it in errors): it
// checks the entries before it takes the mutex, so a bad batch is refused
// without waiting for it, then returns key's session (nil when there is
// none) and its last seq. On success the caller holds the mutex and
// unlocks it.
func (s *Store) lockWrite(ctx context.Context, op string, key recall.Key, entries []recall.Entry) (*session, int64, error) {
	if err := storekit.ValidateEntries(entries, s.opts.MaxItemSize); err != nil {
		return nil, 0, fmt.Errorf("memstore: %s %s: %w", op, key, err)
	}
	if err := s.lock(ctx, key); err != nil {
		return nil, 0, err
	}
	sess := s.sessions[key]
	if sess == nil {
		return nil, 0, nil
	}
	return sess, sess.meta.LastSeq, nil
}

// appendLocked assigns seqs and times to entries and appends them.
func (s *Store) appendLocked(key recall.Key, entries []recall.Entry) int64 {
	sess := s.sessions[key]
	if sess == nil {
		sess = &session{meta: recall.Meta{Key: key}}
		s.sessions[key] = sess
	}
	now := storekit.Now()
	for _, e := range entries {
		e = e.Clone()
		e.Seq = sess.meta.LastSeq + 1
		if e.Time.IsZero() {
			e.Time = now
		}
		sess.entries = append(sess.entries, e)
		sess.meta.Apply(e)
	}
	return sess.meta.LastSeq
}

// Append implements recall.Store.
func (s *Store) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	sess, last, err := s.lockWrite(ctx, "append", key, entries)
	if err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	if err := guard.Check(sess != nil, last); err != nil {
		return 0, fmt.Errorf("memstore: append %s: %w", key, err)
	}
	if len(entries) == 0 {
		return last, nil
	}
	return s.appendLocked(key, entries), nil
}

// Items implements recall.Store.
func (s *Store) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	if err := s.lock(ctx, key); err != nil {
		return nil, 0, err
	}
	defer s.mu.Unlock()
	sess := s.sessions[key]
	if sess == nil {
		return nil, 0, nil
	}
	live, err := storekit.Tail(limit, storekit.Backwards(sess.entries))
	if err != nil {
		return nil, 0, err
	}
	for i := range live {
		live[i].Item = live[i].Item.Clone()
	}
	return live, sess.meta.LastSeq, nil
}

// ReadItems implements storekit.ItemPager: the log is in memory, and a page
// is found by binary search on its seqs.
func (s *Store) ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	if err := s.lock(ctx, key); err != nil {
		return recall.ItemPage{}, err
	}
	defer s.mu.Unlock()
	sess := s.sessions[key]
	if sess == nil {
		return recall.ItemPage{}, nil
	}
	items, more, err := storekit.ReadPage(storekit.SlicePages(sess.entries), opts)
	if err != nil {
		return recall.ItemPage{}, err
	}
	return recall.ItemPage{Items: items, More: more, LastSeq: sess.meta.LastSeq}, nil
}

// Pop implements recall.Store.
func (s *Store) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	if err := s.lock(ctx, key); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	sess := s.sessions[key]
	if sess == nil {
		return nil, nil
	}
	live, err := storekit.Tail(1, storekit.Backwards(sess.entries))
	if err != nil || len(live) == 0 {
		return nil, err
	}
	s.appendLocked(key, []recall.Entry{recall.NewEntry(recall.KindPop, live[0].Ref)})
	return live[0].Item.Clone(), nil
}

// Stat implements recall.Store.
func (s *Store) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if err := s.lock(ctx, key); err != nil {
		return recall.Meta{}, err
	}
	defer s.mu.Unlock()
	sess := s.sessions[key]
	if sess == nil {
		return recall.Meta{}, fmt.Errorf("memstore: %s: %w", key, recall.ErrNotFound)
	}
	return sess.meta.Clone(), nil
}

// Load implements recall.Store.
func (s *Store) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	if err := s.lock(ctx, key); err != nil {
		return recall.Meta{}, nil, err
	}
	defer s.mu.Unlock()
	sess := s.sessions[key]
	if sess == nil {
		return recall.Meta{}, nil, fmt.Errorf("memstore: %s: %w", key, recall.ErrNotFound)
	}
	return sess.meta.Clone(), cloneEntries(sess.entries), nil
}

// Entries implements recall.Store.
func (s *Store) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	if err := s.lock(ctx, key); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	sess := s.sessions[key]
	if sess == nil {
		return nil, fmt.Errorf("memstore: %s: %w", key, recall.ErrNotFound)
	}
	i, _ := slices.BinarySearchFunc(sess.entries, after+1, func(e recall.Entry, seq int64) int { return int(e.Seq - seq) })
	es := sess.entries[i:]
	if limit > 0 && len(es) > limit {
		es = es[:limit]
	}
	return cloneEntries(es), nil
}

func cloneEntries(es []recall.Entry) []recall.Entry {
	out := make([]recall.Entry, len(es))
	for i, e := range es {
		out[i] = e.Clone()
	}
	return out
}

// List implements recall.Store.
func (s *Store) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	if err := storekit.CheckListOptions(project, opts); err != nil {
		return recall.Page{}, fmt.Errorf("memstore: list: %w", err)
	}
	if err := s.lockAll(ctx); err != nil {
		return recall.Page{}, err
	}
	defer s.mu.Unlock()
	var metas []recall.Meta
	for _, sess := range s.sessions {
		if storekit.Matches(sess.meta, project, opts) {
			metas = append(metas, sess.meta)
		}
	}
	return storekit.Paginate(metas, opts)
}

// Projects implements storekit.ProjectLister.
func (s *Store) Projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	if err := s.lockAll(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	byName := map[string]*recall.ProjectInfo{}
	for k, sess := range s.sessions {
		if !k.IsMain() {
			continue
		}
		p := byName[k.Project]
		if p == nil {
			p = &recall.ProjectInfo{Project: k.Project}
			byName[k.Project] = p
		}
		p.Sessions++
		if sess.meta.Updated.After(p.Updated) {
			p.Updated = sess.meta.Updated
		}
	}
	out := make([]recall.ProjectInfo, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out, nil
}

// Remove implements recall.Store.
func (s *Store) Remove(ctx context.Context, key recall.Key) error {
	if err := s.lock(ctx, key); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if s.removeLocked(key) == 0 {
		return fmt.Errorf("memstore: remove %s: %w", key, recall.ErrNotFound)
	}
	return nil
}

// removeLocked deletes key and, for a main session, its subagent records.
func (s *Store) removeLocked(key recall.Key) int {
	n := 0
	for k := range s.sessions {
		if k == key || key.IsMain() && k.Parent() == key {
			delete(s.sessions, k)
			n++
		}
	}
	return n
}

// Cleanup implements storekit.Cleaner.
func (s *Store) Cleanup(ctx context.Context, opts recall.CleanupOptions) (recall.CleanupReport, error) {
	// The project filter is a key like any other: a bad one is refused,
	// not matched against nothing.
	if err := storekit.CheckListOptions(opts.Project, recall.ListOptions{}); err != nil {
		return recall.CleanupReport{}, fmt.Errorf("memstore: cleanup: %w", err)
	}
	if err := s.lockAll(ctx); err != nil {
		return recall.CleanupReport{}, err
	}
	defer s.mu.Unlock()
	var rep recall.CleanupReport
	for k, sess := range s.sessions {
		if !k.IsMain() || opts.Project != "" && k.Project != opts.Project || !sess.meta.Updated.Before(opts.OlderThan) {
			continue
		}
		if sess.meta.Pinned {
			rep.Kept++
			continue
		}
		rep.Removed = append(rep.Removed, sess.meta.Clone())
	}
	storekit.SortList(rep.Removed)
	if !opts.DryRun {
		for _, m := range rep.Removed {
			s.removeLocked(m.Key)
		}
	}
	return rep, nil
}

// Import implements recall.Store.
func (s *Store) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	sess, last, err := s.lockWrite(ctx, "import", key, entries)
	if err != nil {
		return 0, err
	}
	defer s.mu.Unlock()
	fresh, err := storekit.ImportPlan(last, entries)
	if err != nil {
		return 0, fmt.Errorf("memstore: import %s: %w", key, err)
	}
	if len(fresh) == 0 {
		return last, nil
	}
	if sess == nil {
		sess = &session{meta: recall.Meta{Key: key}}
		s.sessions[key] = sess
	}
	for _, e := range fresh {
		e = e.Clone()
		sess.entries = append(sess.entries, e)
		sess.meta.Apply(e)
	}
	return sess.meta.LastSeq, nil
}

// Close implements recall.Store. The sessions are dropped.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.sessions = nil
	return nil
}
