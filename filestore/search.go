package filestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/search"
)

// firstWindow is how many of the newest items, per hit a page asks for,
// Search matches before it asks the trigram index how many candidates it
// has: a word in every few items fills its page there, for a few hundred
// items rather than the thousands that counting its candidates reads.
const firstWindow = 16

// errIndexDisagrees reports a hit whose entry the log does not hold where
// the index says it does (the log was rewritten under the search, or the
// index is damaged in a way the database did not see).
var errIndexDisagrees = errors.New("search index disagrees with the log")

// Search implements recall.Searcher with the index kept beside the logs
// (see searchIndexName): it brings the index up to date with the logs of
// the sessions searched, then answers from it, reading each hit's entry
// back from its log for the snippet. It returns exactly the hits
// search.Scan returns, in the same order. An index that is missing
// or damaged is built again from the logs; one that cannot be written (a
// read-only home) is not used, and the logs are scanned instead.
func (s *Store) Search(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	if err := s.checkOpen(); err != nil {
		return recall.SearchPage{}, err
	}
	if err := search.Check(opts); err != nil {
		return recall.SearchPage{}, fmt.Errorf("filestore: search: %w", err)
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return recall.SearchPage{}, fmt.Errorf("filestore: search: %w", err)
		}
		page, err := s.searchIndexed(ctx, opts)
		var ie *indexErr
		switch {
		case err == nil:
			return page, nil
		case ctx.Err() != nil:
			return recall.SearchPage{}, fmt.Errorf("filestore: search: %w", ctx.Err())
		case attempt < 2 && (errors.Is(err, errIndexDamaged) || errors.Is(err, errIndexDisagrees)):
			// A damaged index is built afresh. A hit the log does not
			// hold where the index says is a log rewritten under the
			// search (a purge): the next catch-up reads it again; if the
			// log still disagrees, the index is built afresh.
			s.search.mu.Lock()
			if errors.Is(err, errIndexDamaged) || attempt == 1 {
				s.search.reset()
			}
			s.search.mu.Unlock()
		case attempt == 0 && errors.As(err, &ie):
			// Once more on a fresh connection: this one may have outlived
			// a change to the file (truncated under it, say).
			s.search.mu.Lock()
			s.search.closeLocked()
			s.search.mu.Unlock()
		case errors.As(err, &ie) || errors.Is(err, errIndexDisagrees):
			// The index cannot be used here (a read-only home, a full
			// disk): the logs are the truth, so scan them.
			return search.Scan(ctx, s, opts)
		default:
			return recall.SearchPage{}, fmt.Errorf("filestore: search: %w", err)
		}
	}
}

// IndexSearch implements search.Indexer: it brings the search index
// up to date with the logs of every session, the work the next Search
// would otherwise do before it answers. A damaged index is built afresh;
// an index that cannot be written (a read-only home) is an error here,
// though Search then scans the logs.
func (s *Store) IndexSearch(ctx context.Context, progress func(done, total int)) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	x := &s.search
	x.mu.Lock()
	defer x.mu.Unlock()
	x.path = s.searchIndexPath()
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if err = x.open(ctx); err == nil {
			_, err = x.catchUp(ctx, s, "", progress)
		}
		if !errors.Is(err, errIndexDamaged) {
			break
		}
		x.reset()
	}
	if err != nil {
		return fmt.Errorf("filestore: index search: %w", err)
	}
	return nil
}

// itemHit is an item the index found, before its entry is read back.
type itemHit struct {
	log    int64
	seq    int64
	idx    int
	pos, n int64
	ts     int64
	tn     int
	role   int
	text   string // normalized
	hit    recall.Hit
}

// searchIndexed answers opts from the index. Errors of the index are
// indexErrs.
func (s *Store) searchIndexed(ctx context.Context, opts recall.SearchOptions) (recall.SearchPage, error) {
	x := &s.search
	x.mu.Lock()
	defer x.mu.Unlock()
	x.path = s.searchIndexPath()
	if err := x.open(ctx); err != nil {
		return recall.SearchPage{}, err
	}
	byID, err := x.catchUp(ctx, s, opts.Project, nil)
	if err != nil {
		return recall.SearchPage{}, err
	}
	q, _ := search.Parse(opts.Query)
	var cur *search.Cursor
	if opts.Cursor != "" {
		c, _ := search.ParseCursor(opts.Cursor)
		cur = &c
	}
	keep := opts.PageSize() + 1

	var hits []*itemHit
	if opts.Role != recall.RoleTitle {
		if hits, err = x.findItems(ctx, opts, q, cur, keep, byID); err != nil {
			return recall.SearchPage{}, err
		}
	}
	if opts.Role == "" || opts.Role == recall.RoleTitle {
		// A title hit older than keep item hits comes after them all.
		var bound time.Time
		if len(hits) >= keep {
			slices.SortFunc(hits, func(a, b *itemHit) int { return search.Compare(a.hit, b.hit) })
			bound = hits[keep-1].hit.Time
		}
		hits = append(hits, x.titleHits(s, opts, q, cur, keep, bound, byID)...)
	}
	slices.SortFunc(hits, func(a, b *itemHit) int { return search.Compare(a.hit, b.hit) })
	more := len(hits) >= keep
	if more {
		hits = hits[:keep-1]
	}
	if err := s.readBack(ctx, hits, q); err != nil {
		return recall.SearchPage{}, err
	}
	var page recall.SearchPage
	page.Hits = make([]recall.Hit, len(hits))
	for i, h := range hits {
		page.Hits[i] = h.hit
	}
	if more {
		page.Next = search.CursorAt(page.Hits[len(hits)-1]).String()
	}
	return page, nil
}

// titleHits returns the title hits after cur among the sessions of byID:
// in one project, the first keep of them (and those as new as the last)
// that are not older than bound (when set), found by walking its sessions
// newest first (projectIndex.order), so a common word, or a page of item
// hits, costs a page; across projects, every one.
func (x *searchIndex) titleHits(s *Store, opts recall.SearchOptions, q search.Query, cur *search.Cursor, keep int, bound time.Time, byID map[int64]*indexedLog) []*itemHit {
	var hits []*itemHit
	add := func(l *indexedLog) {
		if l.title == "" || l.hidden(opts) || !q.Match(l.ntitle) {
			return
		}
		if !opts.Since.IsZero() && l.updated.Before(opts.Since) || !opts.Until.IsZero() && !l.updated.Before(opts.Until) {
			return
		}
		h := recall.Hit{Key: l.key, Title: l.title, Role: recall.RoleTitle, Time: l.updated, Rank: float64(search.Occurrences(l.ntitle, q))}
		if cur == nil || cur.After(h) {
			hits = append(hits, &itemHit{hit: h})
		}
	}
	if opts.Project == "" {
		for _, l := range byID {
			add(l)
		}
		return hits
	}
	p := s.project(opts.Project)
	p.mu.Lock()
	defer p.mu.Unlock()
	// A log's row is as new as its record, or older (the log changed
	// since the catch-up). So once keep hits are found, a record older
	// than the oldest of their rows has an older row still, and neither
	// it nor any after it can come before them.
	var oldest time.Time
	visit := func(rec *record) bool {
		if len(hits) >= keep && rec.updated.Before(oldest) || rec.updated.Before(bound) ||
			!opts.Since.IsZero() && rec.updated.Before(opts.Since) {
			return false
		}
		if l := x.logs[rec.key]; l != nil && byID[l.id] == l {
			n := len(hits)
			if add(l); len(hits) > n && (n == 0 || l.updated.Before(oldest)) {
				oldest = l.updated
			}
		}
		return true
	}
	if cur == nil {
		p.ordered().Ascend(visit)
	} else {
		p.ordered().AscendGreaterOrEqual(&record{updated: cur.Time}, visit)
	}
	return hits
}

// readBack reads the entry of every item hit from its log, to cut the
// snippet from the text a person reads and to confirm the hit: an entry
// that is not where the index says, or does not match, is
// errIndexDisagrees. Title hits take their snippet from the title.
func (s *Store) readBack(ctx context.Context, hits []*itemHit, q search.Query) error {
	for _, h := range hits {
		if h.hit.Role == recall.RoleTitle {
			h.hit.Snippet, h.hit.Matches = search.Snippet(h.hit.Title, q)
			continue
		}
		e, err := s.entryAt(ctx, h.hit.Key, h.pos, h.n)
		if err != nil {
			return err
		}
		var it recall.Item
		ok := e.Seq == h.seq
		switch {
		case !ok:
		case e.Kind == recall.KindItem && h.idx == 0:
			it, ok = e.Item()
		case e.Kind == recall.KindCompaction:
			var c recall.Compaction
			ok = json.Unmarshal(e.Data, &c) == nil && h.idx < len(c.Items)
			if ok {
				it = c.Items[h.idx]
			}
		default:
			ok = false
		}
		var text string
		if ok {
			_, text = search.Text(it)
			ok = q.Match(search.Normalize(text))
		}
		if !ok {
			return fmt.Errorf("%w: %s seq %d", errIndexDisagrees, h.hit.Key, h.seq)
		}
		h.hit.Time = e.Time
		h.hit.Snippet, h.hit.Matches = search.Snippet(text, q)
	}
	return nil
}

// entryAt reads the entry whose line lies at [pos, pos+n) of key's log.
func (s *Store) entryAt(ctx context.Context, key recall.Key, pos, n int64) (recall.Entry, error) {
	l, err := s.locate(key)
	if err != nil {
		return recall.Entry{}, err
	}
	if err := ctx.Err(); err != nil {
		return recall.Entry{}, err
	}
	f, _, ok, err := openLog(l)
	if err != nil {
		return recall.Entry{}, fmt.Errorf("%s: %w", l.path, err)
	}
	if !ok {
		return recall.Entry{}, fmt.Errorf("%w: %s is gone", errIndexDisagrees, l.path)
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, pos); err != nil {
		return recall.Entry{}, fmt.Errorf("%w: %s: %v", errIndexDisagrees, l.path, err)
	}
	e, _, err := decodeLine(buf)
	if err != nil {
		return recall.Entry{}, fmt.Errorf("%w: %s at %d: %v", errIndexDisagrees, l.path, pos, err)
	}
	return e, nil
}
