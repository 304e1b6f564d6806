package encrypt

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"sync"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
	"github.com/recallkit/recall/storekit"
)

// Options configure Wrap. The zero value works.
type Options struct {
	// MaxItemSize is the largest item, before sealing, that Append and
	// Import accept (recall.ErrTooLarge otherwise). A sealed item is
	// about 4/3 of the item plus 200 bytes: the wrapped store's own limit
	// applies to that, so an item near both limits fails there, with the
	// same error and nothing written. Default: recall.DefaultMaxItemSize.
	MaxItemSize int
}

// Store is a recall.Store that seals the conversation text of every
// session (items, titles, the items of compactions) before it reaches
// the store it wraps, and opens it on the way out. See the package
// documentation for what is sealed and what is not.
//
// It has no Unwrap method, on purpose: an optional ability found on the
// wrapped store (recall.As) would read ciphertext or write plaintext.
// It implements the abilities that are sound over sealed data itself
// (recall.Searcher, storekit.Cleaner, storekit.ProjectLister,
// storekit.Purger when the wrapped store purges: see Wrap), and lets the root
// helpers fall back to the Store methods for the rest (Fork, ReadItems).
type Store struct {
	inner recall.Store
	keys  KeyProvider
	max   int

	mu       sync.Mutex
	write    map[recall.Key]*dataKey    // the data key each session is written with
	open     map[string]cipher.AEAD     // opened data keys, by session, KEK and wrapped key
	rewraps  map[recall.Key]*rewrapScan // rewrap entries read from each session
	prompts  map[promptKey]promptScan   // Meta.FirstPrompt of sessions, see meta.go
	checked  map[recall.Key]bool        // sessions whose key was checked before a write
	projects map[string]bool            // projects whose key was checked before a write
}

var (
	_ recall.Store           = (*Store)(nil)
	_ recall.Searcher        = (*Store)(nil)
	_ storekit.Cleaner       = (*Store)(nil)
	_ storekit.ProjectLister = (*Store)(nil)
	_ storekit.Purger        = purgingStore{}
	_ storekit.Rewriter      = (*Store)(nil)
)

// cacheMax bounds each cache of a Store; a full cache is emptied.
const cacheMax = 1 << 14

// Wrap returns a store that seals what it writes to inner with the keys
// keys gives for each project (a Keyring for one key everywhere): a
// *Store, or, when inner is a storekit.Purger, a store that is one too
// (Of returns its *Store). The returned store owns inner: its Close
// closes inner.
func Wrap(inner recall.Store, keys KeyProvider, opts Options) recall.Store {
	if opts.MaxItemSize <= 0 {
		opts.MaxItemSize = recall.DefaultMaxItemSize
	}
	s := &Store{inner: inner, keys: keys, max: opts.MaxItemSize,
		write: map[recall.Key]*dataKey{}, open: map[string]cipher.AEAD{},
		rewraps: map[recall.Key]*rewrapScan{}, prompts: map[promptKey]promptScan{},
		checked: map[recall.Key]bool{}, projects: map[string]bool{}}
	if p, ok := recall.As[storekit.Purger](inner); ok {
		return purgingStore{s, p}
	}
	return s
}

// Of returns the *Store that st is (Wrap's result), and whether it is one.
func Of(st recall.Store) (*Store, bool) {
	switch s := st.(type) {
	case *Store:
		return s, true
	case purgingStore:
		return s.Store, true
	}
	return nil, false
}

// purgingStore is a Store over a store that purges.
type purgingStore struct {
	*Store
	p storekit.Purger
}

// keyring returns project's keys.
func (s *Store) keyring(ctx context.Context, project string) (Keyring, error) {
	r, err := s.keys.Keys(ctx, project)
	if err != nil {
		if errors.Is(err, ErrNoKey) || errors.Is(err, ErrBadKey) {
			return Keyring{}, err
		}
		return Keyring{}, fmt.Errorf("%w: project %s: %w", ErrNoKey, project, err)
	}
	return r, nil
}

// writeKey returns the data key new payloads of key are sealed with: one
// made at the session's first write in this process, wrapped under the
// project's current KEK.
func (s *Store) writeKey(ctx context.Context, key recall.Key) (*dataKey, error) {
	ring, err := s.keyring(ctx, key.Project)
	if err != nil {
		return nil, err
	}
	if ring.Current.IsZero() {
		return nil, fmt.Errorf("%w: project %s has no current key to write with", ErrNoKey, key.Project)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if dk := s.write[key]; dk != nil && dk.kid == ring.Current.id {
		return dk, nil
	}
	dk, err := newDataKey(ring.Current, key)
	if err != nil {
		return nil, err
	}
	if len(s.write) >= cacheMax {
		clear(s.write)
	}
	s.write[key] = dk
	return dk, nil
}

// dataKeyFor opens the data key of key wrapped under the KEK kid: with
// that KEK when the keyring has it, else with the rewrap a rotation
// recorded in the session's log (see Rotate).
func (s *Store) dataKeyFor(ctx context.Context, key recall.Key, kid, wrapped string) (cipher.AEAD, error) {
	id := key.Project + "\x00" + key.Session + "\x00" + key.Subpath + "\x00" + kid + "\x00" + wrapped
	s.mu.Lock()
	a := s.open[id]
	s.mu.Unlock()
	if a != nil {
		return a, nil
	}
	ring, err := s.keyring(ctx, key.Project)
	if err != nil {
		return nil, err
	}
	kek, ok := ring.find(kid)
	if !ok {
		kid2, wrapped2, found, err := s.rewrapped(ctx, key, ring, kid, wrapped)
		if err != nil {
			return nil, err
		}
		if !found {
			if ring.Current.IsZero() && len(ring.Old) == 0 {
				return nil, fmt.Errorf("%w: %s is sealed under key %s, and no key is given for project %s", ErrNoKey, key, kid, key.Project)
			}
			return nil, fmt.Errorf("%w: %s is sealed under key %s; the keys given are %s", ErrWrongKey, key, kid, ring.ids())
		}
		kek, _ = ring.find(kid2)
		wrapped = wrapped2
	}
	dek, err := unwrapDataKey(kek, key, wrapped)
	if err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	a = newGCM(dek)
	s.mu.Lock()
	if len(s.open) >= cacheMax {
		clear(s.open)
	}
	s.open[id] = a
	s.mu.Unlock()
	return a, nil
}

// checkWrite makes sure, once per session and process, that the
// session's newest item and title open with the keys given, so a wrong
// key is an error before anything is written, not a session sealed
// under two keys. A session that does not exist yet is checked against
// the newest session of its project, once per project.
func (s *Store) checkWrite(ctx context.Context, key recall.Key) error {
	s.mu.Lock()
	done := s.checked[key]
	s.mu.Unlock()
	if done {
		return nil
	}
	exists, err := s.probe(ctx, key)
	if err != nil {
		return err
	}
	s.mu.Lock()
	projectDone := s.projects[key.Project]
	s.mu.Unlock()
	if !exists && !projectDone {
		p, err := s.inner.List(ctx, key.Project, recall.ListOptions{Limit: 1, IncludeArchived: true})
		if err != nil {
			return err
		}
		for _, m := range p.Sessions {
			if _, err := s.probe(ctx, m.Key); err != nil {
				return err
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.checked) >= cacheMax {
		clear(s.checked)
		clear(s.projects)
	}
	s.checked[key] = true
	s.projects[key.Project] = true
	return nil
}

// probe opens key's newest item and its title, and reports whether the
// session exists.
func (s *Store) probe(ctx context.Context, key recall.Key) (bool, error) {
	m, err := s.inner.Stat(ctx, key)
	if errors.Is(err, recall.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	o := opener{s, ctx, key}
	if _, err := o.title(m.Title); err != nil {
		return true, err
	}
	items, _, err := s.inner.Items(ctx, key, 1)
	if err != nil {
		return true, err
	}
	for _, l := range items {
		if _, err := o.item(l.Item); err != nil {
			return true, err
		}
	}
	return true, nil
}

// seal validates a batch as the wrapped store would, checks the key, and
// returns the batch sealed.
func (s *Store) seal(ctx context.Context, key recall.Key, entries []recall.Entry) ([]recall.Entry, error) {
	if err := key.Validate(); err != nil {
		return nil, err
	}
	if err := storekit.ValidateEntries(entries, s.max); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.checkWrite(ctx, key); err != nil {
		return nil, err
	}
	dk, err := s.writeKey(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make([]recall.Entry, len(entries))
	for i, e := range entries {
		out[i] = sealEntry(dk, key, e.Clone())
	}
	return out, nil
}

// Append implements recall.Store: the batch is sealed, then appended.
func (s *Store) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	if len(entries) == 0 {
		return s.inner.Append(ctx, key, guard)
	}
	sealed, err := s.seal(ctx, key, entries)
	if err != nil {
		return 0, fmt.Errorf("encrypt: append %s: %w", key, err)
	}
	return s.inner.Append(ctx, key, guard, sealed...)
}

// Import implements recall.Store: the entries are sealed, keeping their
// seqs and times, then imported.
func (s *Store) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	if len(entries) == 0 {
		return s.inner.Import(ctx, key)
	}
	sealed, err := s.seal(ctx, key, entries)
	if err != nil {
		return 0, fmt.Errorf("encrypt: import %s: %w", key, err)
	}
	return s.inner.Import(ctx, key, sealed...)
}

// Items implements recall.Store.
func (s *Store) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	items, last, err := s.inner.Items(ctx, key, limit)
	if err != nil {
		return nil, 0, err
	}
	o := opener{s, ctx, key}
	for i, l := range items {
		if items[i].Item, err = o.item(l.Item); err != nil {
			return nil, 0, err
		}
	}
	return items, last, nil
}

// Pop implements recall.Store. The pop is written before the item is
// opened, as Pop is one atomic step of the wrapped store; an item that
// does not open is an error, and the pop stays.
func (s *Store) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	if err := s.checkWrite(ctx, key); err != nil {
		return nil, fmt.Errorf("encrypt: pop %s: %w", key, err)
	}
	it, err := s.inner.Pop(ctx, key)
	if err != nil || it == nil {
		return it, err
	}
	return opener{s, ctx, key}.item(it)
}

// Stat implements recall.Store.
func (s *Store) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	m, err := s.inner.Stat(ctx, key)
	if err != nil {
		return m, err
	}
	return s.reveal(ctx, m, nil)
}

// Load implements recall.Store.
func (s *Store) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	m, entries, err := s.inner.Load(ctx, key)
	if err != nil {
		return m, nil, err
	}
	if entries, err = s.openEntries(ctx, key, entries); err != nil {
		return recall.Meta{}, nil, err
	}
	if m, err = s.reveal(ctx, m, entries); err != nil {
		return recall.Meta{}, nil, err
	}
	return m, entries, nil
}

// Entries implements recall.Store.
func (s *Store) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	entries, err := s.inner.Entries(ctx, key, after, limit)
	if err != nil {
		return nil, err
	}
	return s.openEntries(ctx, key, entries)
}

func (s *Store) openEntries(ctx context.Context, key recall.Key, entries []recall.Entry) ([]recall.Entry, error) {
	o := opener{s, ctx, key}
	for i, e := range entries {
		var err error
		if entries[i], err = o.entry(e); err != nil {
			return nil, fmt.Errorf("encrypt: %s: %w", key, err)
		}
	}
	return entries, nil
}

// List implements recall.Store.
func (s *Store) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	p, err := s.inner.List(ctx, project, opts)
	if err != nil {
		return p, err
	}
	if err := s.revealPage(ctx, p.Sessions); err != nil {
		return recall.Page{}, err
	}
	return p, nil
}

// Remove implements recall.Store.
func (s *Store) Remove(ctx context.Context, key recall.Key) error {
	err := s.inner.Remove(ctx, key)
	s.forget(key)
	return err
}

// forget drops what the caches hold of key (a session removed or purged).
func (s *Store) forget(key recall.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rewraps, key)
	delete(s.checked, key)
	for k := range s.prompts {
		if k.key == key || key.IsMain() && k.key.Parent() == key {
			delete(s.prompts, k)
		}
	}
}

// Close implements recall.Store: it closes the wrapped store.
func (s *Store) Close() error { return s.inner.Close() }

// Search implements recall.Searcher: the wrapped store's index holds only
// ciphertext, so Search scans (search.Scan): it lists the sessions,
// opens each in memory and matches its text. Nothing opened is written
// anywhere. Its cost grows with the sessions searched, not with the hits.
func (s *Store) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	return search.Scan(ctx, s, opts)
}

// Cleanup implements storekit.Cleaner with the wrapped store's Cleanup
// (which reads only metadata) and opens the titles it reports.
func (s *Store) Cleanup(ctx context.Context, opts recall.CleanupOptions) (recall.CleanupReport, error) {
	if !opts.DryRun {
		// A session is gone once the wrapped store removed it: a dry
		// run first reads the first prompts of those it will remove
		// (reveal keeps them in its cache).
		dry := opts
		dry.DryRun = true
		if _, err := s.Cleanup(ctx, dry); err != nil {
			return recall.CleanupReport{}, err
		}
	}
	rep, err := recall.Cleanup(ctx, s.inner, opts)
	for i, m := range rep.Removed {
		var rerr error
		if rep.Removed[i], rerr = s.reveal(ctx, m, nil); rerr != nil {
			return recall.CleanupReport{}, rerr
		}
		if !opts.DryRun {
			s.forget(m.Key)
		}
	}
	return rep, err
}

// Projects implements storekit.ProjectLister with the wrapped store's:
// projects hold no sealed text.
func (s *Store) Projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	return recall.Projects(ctx, s.inner)
}

// Purge implements storekit.Purger with the wrapped store's: the purged
// log keeps its entries sealed as they are.
func (s purgingStore) Purge(ctx context.Context, key recall.Key) (storekit.PurgeResult, error) {
	if err := s.checkWrite(ctx, key); err != nil {
		return storekit.PurgeResult{}, fmt.Errorf("encrypt: purge %s: %w", key, err)
	}
	res, err := s.p.Purge(ctx, key)
	s.forget(key)
	return res, err
}

// Rewrite implements storekit.Rewriter with the wrapped store's, when it
// has one: the replacements and the appended entries are sealed as an
// Append seals them (with the session's data key), so the wrapped store
// never sees the plaintext of a rewrite either. A wrapped store that
// cannot rewrite is recall.ErrUnsupported.
func (s *Store) Rewrite(ctx context.Context, key recall.Key, rw storekit.Rewrite) (recall.Meta, error) {
	inner, ok := recall.As[storekit.Rewriter](s.inner)
	if !ok {
		return recall.Meta{}, fmt.Errorf("encrypt: rewrite %s: the wrapped store cannot rewrite its logs: %w", key, recall.ErrUnsupported)
	}
	var err error
	sealed := storekit.Rewrite{IfLastSeq: rw.IfLastSeq}
	if sealed.Replace, err = s.seal(ctx, key, rw.Replace); err == nil {
		sealed.Append, err = s.seal(ctx, key, rw.Append)
	}
	if err != nil {
		return recall.Meta{}, fmt.Errorf("encrypt: rewrite %s: %w", key, err)
	}
	m, err := inner.Rewrite(ctx, key, sealed)
	s.forget(key)
	if err != nil {
		return recall.Meta{}, err
	}
	return s.reveal(ctx, m, nil)
}
