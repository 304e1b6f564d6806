package recall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// cleaner is storekit.Cleaner, the optional ability Cleanup uses when a
// store has it.
type cleaner interface {
	Cleanup(ctx context.Context, opts CleanupOptions) (CleanupReport, error)
}

// Cleanup moves to the trash (StoreSession.Trash) every main session
// whose Updated is before opts.OlderThan, except pinned ones and those in
// the trash already, and reports what it moved, or would move when
// opts.DryRun, in List order. Each move is guarded by the session's
// LastSeq as listed, so a session written to meanwhile stays.
//
// With opts.Purge it deletes them for good instead (with their subagent
// records, and sessions in the trash too). A store may do that natively
// (storekit.Cleaner); otherwise Cleanup lists the sessions and removes
// each that qualifies, which is not atomic: a session that becomes active
// between the list and its removal is removed all the same.
func Cleanup(ctx context.Context, s Store, opts CleanupOptions) (CleanupReport, error) {
	if c, ok := As[cleaner](s); ok && opts.Purge {
		return c.Cleanup(ctx, opts)
	}
	var rep CleanupReport
	metas, err := listAll(ctx, s, opts.Project)
	if err == nil && opts.Purge {
		var trashed []Meta
		trashed, err = list(ctx, s, opts.Project, ListOptions{Trashed: true})
		metas = append(metas, trashed...)
		sortList(metas)
	}
	if err != nil {
		return CleanupReport{}, fmt.Errorf("recall: cleanup: %w", err)
	}
	yes := true
	trash := NewEntry(KindMeta, MetaChange{Trashed: &yes})
	for _, m := range metas {
		if !m.Updated.Before(opts.OlderThan) {
			continue
		}
		if m.Pinned {
			rep.Kept++
			continue
		}
		if !opts.DryRun {
			if opts.Purge {
				err = s.Remove(ctx, m.Key)
			} else {
				_, err = s.Append(ctx, m.Key, IfLastSeq(m.LastSeq), trash)
			}
			if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
				continue // removed or written to meanwhile
			}
			if err != nil {
				return rep, fmt.Errorf("recall: cleanup: %w", err)
			}
		}
		rep.Removed = append(rep.Removed, m)
	}
	return rep, nil
}

// projectLister is storekit.ProjectLister, the optional ability Projects
// uses when a store has it.
type projectLister interface {
	Projects(ctx context.Context) ([]ProjectInfo, error)
}

// Projects lists every project that holds at least one main session
// (archived ones and those in the trash included), sorted by name, with
// its session count and latest Updated. A store may read them natively
// (storekit.ProjectLister); otherwise Projects lists every main session
// and counts them per project.
func Projects(ctx context.Context, s Store) ([]ProjectInfo, error) {
	if p, ok := As[projectLister](s); ok {
		return p.Projects(ctx)
	}
	metas, err := listAll(ctx, s, "")
	if err == nil {
		var trashed []Meta
		trashed, err = list(ctx, s, "", ListOptions{Trashed: true})
		metas = append(metas, trashed...)
	}
	if err != nil {
		return nil, fmt.Errorf("recall: projects: %w", err)
	}
	byName := map[string]*ProjectInfo{}
	for _, m := range metas {
		p := byName[m.Key.Project]
		if p == nil {
			p = &ProjectInfo{Project: m.Key.Project}
			byName[m.Key.Project] = p
		}
		p.Sessions++
		if m.Updated.After(p.Updated) {
			p.Updated = m.Updated
		}
	}
	out := make([]ProjectInfo, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, *byName[name])
	}
	return out, nil
}

// listAll returns every main session of project (every project when
// empty), archived ones included, in List order.
func listAll(ctx context.Context, s Store, project string) ([]Meta, error) {
	return list(ctx, s, project, ListOptions{IncludeArchived: true})
}

// list returns every session List returns for project and opts, page by
// page.
func list(ctx context.Context, s Store, project string, opts ListOptions) ([]Meta, error) {
	var out []Meta
	opts.Limit = 1000
	for {
		p, err := s.List(ctx, project, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Sessions...)
		if p.Next == "" {
			return out, nil
		}
		opts.Cursor = p.Next
	}
}

// sortList sorts metas in List order: newest Updated first, then project,
// session and subpath (storekit.CompareListOrder).
func sortList(metas []Meta) {
	slices.SortFunc(metas, func(a, b Meta) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.Key.Project, b.Key.Project),
			strings.Compare(a.Key.Session, b.Key.Session), strings.Compare(a.Key.Subpath, b.Key.Subpath))
	})
}
