package redisstore

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// scanBudget is the most index members one list script call looks at,
// unless the store's test sets its own (Store.scanBudget).
const scanBudget = 1000

// List implements recall.Store. It reads one sorted set from the cursor's
// bound: the project's (or every project's) index of main sessions, the
// one without archived sessions unless they are asked for, its index of
// pinned sessions for a pinned listing (archived ones skipped unless asked
// for), or a session's index of subagent records (unpinned ones skipped
// for a pinned listing); sessions in the trash skipped, or, for a listing
// of the trash, the others, read from the index of every session (or of
// the pinned ones). Each page is one script call that returns the
// metadata too, from one snapshot.
func (s *Store) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	if s.closed.Load() {
		return recall.Page{}, recall.ErrClosed
	}
	if err := storekit.CheckListOptions(project, opts); err != nil {
		return recall.Page{}, fmt.Errorf("redisstore: list: %w", err)
	}
	if err := s.begin(ctx); err != nil {
		return recall.Page{}, fmt.Errorf("redisstore: list: %w", err)
	}
	var idx string
	f := filter{archived: !opts.IncludeArchived && !opts.Trashed, trash: trashLeftOut}
	if opts.Trashed {
		f.trash = trashOnly
	}
	switch {
	case opts.Parent != "":
		idx = s.k.sub(recall.Key{Project: project, Session: opts.Parent})
		f.unpinned = opts.Pinned
	case opts.Pinned:
		idx, f.pinIndex = s.k.pinned(project), true
	case opts.IncludeArchived || opts.Trashed:
		idx = s.k.all(project)
	default:
		idx = s.k.active(project)
	}
	var start bound
	if opts.Cursor != "" {
		c, err := storekit.ParseCursor(opts.Cursor)
		if err != nil {
			return recall.Page{}, fmt.Errorf("redisstore: list: %w", err)
		}
		start = cursorBound(c)
	}
	limit := opts.Limit
	if limit == 0 {
		limit = recall.DefaultListLimit
	}
	want := math.MaxInt32
	if limit > 0 {
		want = limit + 1 // one more tells whether a next page exists
	}
	var p recall.Page
	err := s.scan(ctx, idx, start, want, f, func(m recall.Meta) {
		p.Sessions = append(p.Sessions, m)
	})
	if err != nil {
		return recall.Page{}, fmt.Errorf("redisstore: list: %w", err)
	}
	if limit > 0 && len(p.Sessions) > limit {
		p.Sessions = p.Sessions[:limit]
		p.Next = storekit.CursorAt(p.Sessions[limit-1]).String()
	}
	if p.Sessions == nil {
		p.Sessions = []recall.Meta{}
	}
	return p, nil
}

// filter is what scan skips of an index.
type filter struct {
	archived bool // skip archived sessions
	unpinned bool // skip sessions that are not pinned
	trash    trashFilter
	// the index is one of pinned sessions: skip those that are not, and
	// unindex them from the pinned indexes
	pinIndex bool
}

// trashFilter is what scan does with the sessions in the trash (the
// list script's ARGV[8]).
type trashFilter string

const (
	trashLeftOut trashFilter = "0" // skip them
	trashOnly    trashFilter = "1" // skip the others
	trashToo     trashFilter = "2" // skip neither
)

// scan calls fn for up to want sessions of index idx after bound start, in
// index order, skipping those f says. The list script unindexes members
// whose session is gone, so each call checks ctx first.
func (s *Store) scan(ctx context.Context, idx string, start bound, want int, f filter, fn func(m recall.Meta)) error {
	skip, pin, trash := "0", "", string(f.trash)
	if trash == "" {
		trash = string(trashLeftOut)
	}
	if f.archived {
		skip = "1"
	}
	switch {
	case f.pinIndex:
		pin = "2"
	case f.unpinned:
		pin = "1"
	}
	for want > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := listScript.Run(ctx, s.rdb, []string{idx}, s.k.prefix, start.Score, start.Member, want, skip, s.budget(), pin, trash).Slice()
		if err != nil {
			return err
		}
		if len(res) < 2 || len(res)%2 != 0 {
			return fmt.Errorf("%w: list script returned %d values", recall.ErrCorrupt, len(res))
		}
		for i := 2; i < len(res); i += 2 {
			name, _ := res[i].(string)
			key, err := parseMember(name)
			if err != nil {
				return err
			}
			h, err := pairs(res[i+1])
			if err != nil {
				return err
			}
			m, err := decodeMeta(key, h)
			if err != nil {
				return err
			}
			fn(m)
			want--
		}
		score, _ := res[0].(string)
		if score == "" {
			return nil
		}
		start.Score, start.Member = score, res[1].(string)
	}
	return nil
}

// Projects implements storekit.ProjectLister. It first unindexes every
// session whose TTL ran out, so the counts are exact.
func (s *Store) Projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	if err := s.begin(ctx); err != nil {
		return nil, fmt.Errorf("redisstore: projects: %w", err)
	}
	if err := s.pruneAll(ctx); err != nil {
		return nil, fmt.Errorf("redisstore: projects: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("redisstore: projects: %w", err)
	}
	res, err := projectsScript.Run(ctx, s.rdb, nil, s.k.prefix).Slice()
	if err != nil {
		return nil, fmt.Errorf("redisstore: projects: %w", err)
	}
	out := make([]recall.ProjectInfo, 0, len(res)/3)
	for i := 0; i+2 < len(res); i += 3 {
		name, _ := res[i].(string)
		count, _ := res[i+1].(int64)
		updated, _ := res[i+2].(string)
		us, err := strconv.ParseInt(updated, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redisstore: projects: %w: update time %q of project %s", recall.ErrCorrupt, updated, name)
		}
		out = append(out, recall.ProjectInfo{Project: name, Sessions: int(count), Updated: fromMicros(us)})
	}
	return out, nil
}

// pruneAll unindexes every session whose TTL ran out, a batch per call.
func (s *Store) pruneAll(ctx context.Context) error {
	const batch = 1000
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := pruneScript.Run(ctx, s.rdb, nil, s.k.prefix, batch).Int()
		if err != nil || n < batch {
			return err
		}
	}
}

// Cleanup implements storekit.Cleaner. It reads the index from the cutoff's
// bound, so it looks only at sessions older than the cutoff, and removes
// each with a script that first checks the session's update time is the
// one read: a session written to meanwhile is newer and stays. A context
// that ends midway stops it before the next removal, with the error.
func (s *Store) Cleanup(ctx context.Context, opts recall.CleanupOptions) (recall.CleanupReport, error) {
	if s.closed.Load() {
		return recall.CleanupReport{}, recall.ErrClosed
	}
	if opts.Project != "" {
		if err := storekit.CheckListOptions(opts.Project, recall.ListOptions{}); err != nil {
			return recall.CleanupReport{}, fmt.Errorf("redisstore: cleanup: %w", err)
		}
	}
	if err := s.begin(ctx); err != nil {
		return recall.CleanupReport{}, fmt.Errorf("redisstore: cleanup: %w", err)
	}
	var rep recall.CleanupReport
	if opts.OlderThan.IsZero() {
		return rep, nil
	}
	var old []recall.Meta
	err := s.scan(ctx, s.k.all(opts.Project), olderThan(opts.OlderThan), math.MaxInt32, filter{trash: trashToo}, func(m recall.Meta) {
		switch {
		case !m.Updated.Before(opts.OlderThan):
		case m.Pinned:
			rep.Kept++
		default:
			old = append(old, m)
		}
	})
	if err != nil {
		return recall.CleanupReport{}, fmt.Errorf("redisstore: cleanup: %w", err)
	}
	for _, m := range old {
		if !opts.DryRun {
			if err := ctx.Err(); err != nil {
				return rep, fmt.Errorf("redisstore: cleanup: %w", err)
			}
			guard := strconv.FormatInt(m.Updated.UnixMicro(), 10)
			n, err := removeScript.Run(ctx, s.rdb, s.removeKeys(m.Key), s.k.prefix, member(m.Key), guard).Int64()
			if err != nil {
				return rep, fmt.Errorf("redisstore: cleanup: remove %s: %w", m.Key, err)
			}
			if n < 0 {
				continue // written to since it was read: no longer old
			}
		}
		rep.Removed = append(rep.Removed, m)
	}
	storekit.SortList(rep.Removed)
	return rep, nil
}

// removeKeys are the KEYS of the remove script for key.
func (s *Store) removeKeys(key recall.Key) []string {
	keys := []string{s.k.meta(key), s.k.log(key), s.k.ctl(key)}
	if key.IsMain() {
		keys = append(keys, s.k.sub(key))
	}
	return keys
}

// Remove implements recall.Store: one script deletes the session, its
// subagent records and their index members.
func (s *Store) Remove(ctx context.Context, key recall.Key) error {
	if err := s.check(ctx, key); err != nil {
		return fmt.Errorf("redisstore: remove %s: %w", key, err)
	}
	n, err := removeScript.Run(ctx, s.rdb, s.removeKeys(key), s.k.prefix, member(key), "").Int64()
	if err == nil && n == 0 {
		err = recall.ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("redisstore: remove %s: %w", key, err)
	}
	return nil
}

// budget returns the index members one list script call looks at.
func (s *Store) budget() int {
	if s.scanBudget > 0 {
		return s.scanBudget
	}
	return scanBudget
}
