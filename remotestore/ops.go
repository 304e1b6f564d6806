package remotestore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/storewire"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/storekit"
)

// keyQuery returns the query that names key.
func keyQuery(key recall.Key) url.Values {
	q := url.Values{"project": {key.Project}, "session": {key.Session}}
	if key.Subpath != "" {
		q.Set("subpath", key.Subpath)
	}
	return q
}

// checkKey refuses a bad key before it is sent.
func checkKey(op string, key recall.Key) error {
	if err := key.Validate(); err != nil {
		return fmt.Errorf("remotestore: %s: %w", op, err)
	}
	return nil
}

// Append implements recall.Store: the server's store checks guard and
// writes the batch in one atomic step.
func (s *Store) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	if err := checkKey("append "+key.String(), key); err != nil {
		return 0, err
	}
	var out storewire.LastSeq
	err := s.post(ctx, "append "+key.String(), "append",
		storewire.Append{Key: key, Guard: guard, Entries: storewire.FromEntries(entries)}, &out)
	return out.LastSeq, err
}

// Import implements recall.Store.
func (s *Store) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	if err := checkKey("import "+key.String(), key); err != nil {
		return 0, err
	}
	var out storewire.LastSeq
	err := s.post(ctx, "import "+key.String(), "import",
		storewire.Import{Key: key, Entries: storewire.FromEntries(entries)}, &out)
	return out.LastSeq, err
}

// Items implements recall.Store: the view's newest limit items (all for
// limit <= 0), read newest first a page at a time with ReadItems.
func (s *Store) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	page, err := s.ReadItems(ctx, key, recall.ItemPageOptions{Limit: limit})
	if err != nil || len(page.Items) == 0 {
		return nil, page.LastSeq, err
	}
	slices.Reverse(page.Items)
	return page.Items, page.LastSeq, nil
}

// Pop implements recall.Store.
func (s *Store) Pop(ctx context.Context, key recall.Key) (recall.Item, error) {
	if err := checkKey("pop "+key.String(), key); err != nil {
		return nil, err
	}
	var out storewire.Popped
	if err := s.post(ctx, "pop "+key.String(), "pop", storewire.KeyBody{Key: key}, &out); err != nil {
		return nil, err
	}
	return storewire.ItemOf(out.Item), nil
}

// Stat implements recall.Store.
func (s *Store) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	if err := checkKey("stat "+key.String(), key); err != nil {
		return recall.Meta{}, err
	}
	var m recall.Meta
	err := s.get(ctx, "stat "+key.String(), "stat", keyQuery(key), &m)
	return m, err
}

// Load implements recall.Store. It pages through the log
// (storewire.MaxEntries entries a request) and derives the metadata from
// it with recall.Replay, so the two are one snapshot: the log is append
// only, and each page continues the one before. A session removed and
// made again, or purged, between two pages of one Load can mix two logs;
// a log of up to storewire.MaxEntries entries is read in one request.
func (s *Store) Load(ctx context.Context, key recall.Key) (recall.Meta, []recall.Entry, error) {
	es, err := s.Entries(ctx, key, 0, 0)
	if err != nil {
		return recall.Meta{}, nil, err
	}
	m, _ := recall.Replay(key, es)
	return m, es, nil
}

// Entries implements recall.Store, a page of the server's at a time.
func (s *Store) Entries(ctx context.Context, key recall.Key, after int64, limit int) ([]recall.Entry, error) {
	op := "entries " + key.String()
	if err := checkKey(op, key); err != nil {
		return nil, err
	}
	var all []recall.Entry
	for {
		n := storewire.MaxEntries
		if limit > 0 {
			n = min(n, limit-len(all))
		}
		q := keyQuery(key)
		q.Set("after", strconv.FormatInt(after, 10))
		q.Set("limit", strconv.Itoa(n))
		var out storewire.EntriesPage
		if err := s.get(ctx, op, "entries", q, &out); err != nil {
			return nil, err
		}
		es := storewire.Entries(out.Entries)
		all = append(all, es...)
		if !out.More || len(es) == 0 || limit > 0 && len(all) >= limit {
			if all == nil {
				all = []recall.Entry{}
			}
			return all, nil
		}
		after = es[len(es)-1].Seq
	}
}

// List implements recall.Store; Page.Next is the server's cursor.
func (s *Store) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	op := "list " + project
	if project != "" {
		if err := checkKey(op, recall.Key{Project: project, Session: "x"}); err != nil {
			return recall.Page{}, err
		}
	}
	q := url.Values{"project": {project}}
	set := func(name string, v string, on bool) {
		if on {
			q.Set(name, v)
		}
	}
	set("cursor", opts.Cursor, opts.Cursor != "")
	set("parent", opts.Parent, opts.Parent != "")
	set("archived", "true", opts.IncludeArchived)
	set("pinned", "true", opts.Pinned)
	set("trashed", "true", opts.Trashed)
	return s.list(ctx, op, q, opts)
}

// list reads the listing q and opts ask for, a server's page at a time
// (server.Options.StorePage), each going on at the cursor of the one
// before: its pages are those of any paged listing, so a session changed
// in between may be missed or listed twice, as when a person pages.
func (s *Store) list(ctx context.Context, op string, q url.Values, opts recall.ListOptions) (recall.Page, error) {
	limit := opts.Limit
	if limit == 0 {
		limit = recall.DefaultListLimit
	}
	var all recall.Page
	for {
		if limit > 0 {
			q.Set("limit", strconv.Itoa(limit-len(all.Sessions)))
		}
		var page recall.Page
		if err := s.get(ctx, op, "list", q, &page); err != nil {
			return recall.Page{}, err
		}
		all.Sessions, all.Next = append(all.Sessions, page.Sessions...), page.Next
		if page.Next == "" || len(page.Sessions) == 0 || limit > 0 && len(all.Sessions) >= limit {
			if all.Sessions == nil {
				all.Sessions = []recall.Meta{}
			}
			return all, nil
		}
		q.Set("cursor", page.Next)
	}
}

// Remove implements recall.Store.
func (s *Store) Remove(ctx context.Context, key recall.Key) error {
	if err := checkKey("remove "+key.String(), key); err != nil {
		return err
	}
	return s.post(ctx, "remove "+key.String(), "remove", storewire.KeyBody{Key: key}, nil)
}

// Fork implements storekit.Forker: the server's store forks.
func (s *Store) Fork(ctx context.Context, key recall.Key, atSeq int64, newKey recall.Key) (recall.Meta, error) {
	op := "fork " + key.String()
	if err := checkKey(op, key); err != nil {
		return recall.Meta{}, err
	}
	if err := checkKey(op, newKey); err != nil {
		return recall.Meta{}, err
	}
	var m recall.Meta
	err := s.post(ctx, op, "fork", storewire.Fork{Key: key, AtSeq: atSeq, NewKey: newKey}, &m)
	return m, err
}

// Projects implements storekit.ProjectLister: the projects of the
// token's user.
func (s *Store) Projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	var ps []recall.ProjectInfo
	err := s.get(ctx, "projects", "projects", nil, &ps)
	return ps, err
}

// ReadItems implements storekit.ItemPager. The server answers at most a
// page (server.Options.StorePage) a request, so a bigger page is read in
// several, each going on after the last item of the one before (item
// refs keep their place in a view's order). The pages are one snapshot
// when each carries the LastSeq of the first. When the session changed
// in between, ReadItems reads the log instead: it is append only, so its
// pages are a snapshot whatever is written meanwhile, and the view is
// the log replayed (in a memstore).
func (s *Store) ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	op := "read items " + key.String()
	if err := checkKey(op, key); err != nil {
		return recall.ItemPage{}, err
	}
	page, err := s.readItems(ctx, op, key, opts)
	if !errors.Is(err, errChanged) {
		return page, err
	}
	es, err := s.Entries(ctx, key, 0, 0)
	switch {
	case errors.Is(err, recall.ErrNotFound):
		return recall.ItemPage{}, nil
	case err != nil:
		return recall.ItemPage{}, err
	}
	mem := memstore.New(memstore.Options{MaxItemSize: math.MaxInt})
	defer mem.Close()
	if _, err := mem.Import(ctx, key, es...); err != nil {
		return recall.ItemPage{}, fmt.Errorf("remotestore: %s: replaying its log: %w", op, err)
	}
	return recall.NewSession(mem, key).ReadItems(ctx, opts)
}

// errChanged reports a session whose LastSeq changed between two pages.
var errChanged = errors.New("the session changed")

// readItems reads the page opts select, a server's page at a time.
func (s *Store) readItems(ctx context.Context, op string, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	var all recall.ItemPage
	after := opts.After
	for first := true; ; first = false {
		q := keyQuery(key)
		q.Set("limit", strconv.Itoa(max(opts.Limit-len(all.Items), 0)))
		if opts.Oldest {
			q.Set("oldest", "true")
		}
		if after != (recall.ItemRef{}) {
			q.Set("after_seq", strconv.FormatInt(after.Seq, 10))
			q.Set("after_index", strconv.Itoa(after.Index))
		}
		var out storewire.ItemsPage
		if err := s.get(ctx, op, "page", q, &out); err != nil {
			return recall.ItemPage{}, err
		}
		if !first && out.LastSeq != all.LastSeq {
			return recall.ItemPage{}, errChanged
		}
		items := storewire.Items(out.Items)
		all.Items, all.More, all.LastSeq = append(all.Items, items...), out.More, out.LastSeq
		if !out.More || len(items) == 0 || opts.Limit > 0 && len(all.Items) >= opts.Limit {
			return all, nil
		}
		after = items[len(items)-1].Ref
	}
}

// Purge implements storekit.Purger with the server's store's: a server
// whose store cannot purge answers recall.ErrUnsupported.
func (s *Store) Purge(ctx context.Context, key recall.Key) (storekit.PurgeResult, error) {
	if err := checkKey("purge "+key.String(), key); err != nil {
		return storekit.PurgeResult{}, err
	}
	var res storekit.PurgeResult
	err := s.post(ctx, "purge "+key.String(), "purge", storewire.KeyBody{Key: key}, &res)
	return res, err
}

// Search implements recall.Searcher with the server's store's search,
// over the token's user's projects.
func (s *Store) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	q := url.Values{"q": {opts.Query}, "limit": {strconv.Itoa(opts.Limit)}}
	set := func(name, v string, on bool) {
		if on {
			q.Set(name, v)
		}
	}
	set("project", opts.Project, opts.Project != "")
	set("role", opts.Role, opts.Role != "")
	set("cursor", opts.Cursor, opts.Cursor != "")
	set("archived", "true", opts.IncludeArchived)
	set("whole_log", "true", opts.WholeLog)
	set("since", opts.Since.Format(time.RFC3339Nano), !opts.Since.IsZero())
	set("until", opts.Until.Format(time.RFC3339Nano), !opts.Until.IsZero())
	var page recall.SearchPage
	err := s.get(ctx, "search", "search", q, &page)
	return page, err
}
