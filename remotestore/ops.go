package remotestore

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/storewire"
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

// Items implements recall.Store.
func (s *Store) Items(ctx context.Context, key recall.Key, limit int) ([]recall.LiveItem, int64, error) {
	if err := checkKey("items "+key.String(), key); err != nil {
		return nil, 0, err
	}
	q := keyQuery(key)
	q.Set("limit", strconv.Itoa(max(limit, 0)))
	var out storewire.ItemsPage
	if err := s.get(ctx, "items "+key.String(), "items", q, &out); err != nil {
		return nil, 0, err
	}
	if len(out.Items) == 0 {
		return nil, out.LastSeq, nil
	}
	return storewire.Items(out.Items), out.LastSeq, nil
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
	q := url.Values{"project": {project}, "limit": {strconv.Itoa(opts.Limit)}}
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
	var page recall.Page
	err := s.get(ctx, op, "list", q, &page)
	return page, err
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

// ReadItems implements storekit.ItemPager.
func (s *Store) ReadItems(ctx context.Context, key recall.Key, opts recall.ItemPageOptions) (recall.ItemPage, error) {
	op := "read items " + key.String()
	if err := checkKey(op, key); err != nil {
		return recall.ItemPage{}, err
	}
	q := keyQuery(key)
	q.Set("limit", strconv.Itoa(max(opts.Limit, 0)))
	if opts.Oldest {
		q.Set("oldest", "true")
	}
	if opts.After != (recall.ItemRef{}) {
		q.Set("after_seq", strconv.FormatInt(opts.After.Seq, 10))
		q.Set("after_index", strconv.Itoa(opts.After.Index))
	}
	var out storewire.ItemsPage
	if err := s.get(ctx, op, "page", q, &out); err != nil {
		return recall.ItemPage{}, err
	}
	return recall.ItemPage{Items: storewire.Items(out.Items), More: out.More, LastSeq: out.LastSeq}, nil
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
