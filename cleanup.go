package recall

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// cleaner is storekit.Cleaner, the optional ability Cleanup uses when a
// store has it.
type cleaner interface {
	Cleanup(ctx context.Context, opts CleanupOptions) (CleanupReport, error)
}

// Cleanup physically deletes every main session (with its subagent
// records) whose Updated is before opts.OlderThan, except pinned ones, and
// reports what it removed, or would remove when opts.DryRun, in List
// order. A store may do it natively (storekit.Cleaner); otherwise Cleanup
// lists the sessions and removes each that qualifies, which is not atomic:
// a session that becomes active between the list and its removal is
// removed all the same.
func Cleanup(ctx context.Context, s Store, opts CleanupOptions) (CleanupReport, error) {
	if c, ok := As[cleaner](s); ok {
		return c.Cleanup(ctx, opts)
	}
	var rep CleanupReport
	metas, err := listAll(ctx, s, opts.Project)
	if err != nil {
		return CleanupReport{}, fmt.Errorf("recall: cleanup: %w", err)
	}
	for _, m := range metas {
		if !m.Updated.Before(opts.OlderThan) {
			continue
		}
		if m.Pinned {
			rep.Kept++
			continue
		}
		if !opts.DryRun {
			if err := s.Remove(ctx, m.Key); err != nil {
				if errors.Is(err, ErrNotFound) {
					continue // removed meanwhile
				}
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
// (archived ones included), sorted by name, with its session count and
// latest Updated. A store may read them natively (storekit.ProjectLister);
// otherwise Projects lists every main session and counts them per project.
func Projects(ctx context.Context, s Store) ([]ProjectInfo, error) {
	if p, ok := As[projectLister](s); ok {
		return p.Projects(ctx)
	}
	metas, err := listAll(ctx, s, "")
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
	var out []Meta
	opts := ListOptions{Limit: 1000, IncludeArchived: true}
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
