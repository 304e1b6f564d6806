package filestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fsys"
	"github.com/recallkit/recall/storekit"
)

// projectNames returns the projects with a directory in the store.
func (s *Store) projectNames() ([]string, error) {
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && validProject(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// List implements recall.Store. It reads the project's index and one stat
// per log, decodes the metadata of the page only, and reads a log only
// when it changed since the index saw it.
func (s *Store) List(ctx context.Context, project string, opts recall.ListOptions) (recall.Page, error) {
	if err := s.checkOpen(); err != nil {
		return recall.Page{}, err
	}
	if err := ctx.Err(); err != nil {
		return recall.Page{}, fmt.Errorf("filestore: list: %w", err)
	}
	if err := storekit.CheckListOptions(project, opts); err != nil {
		return recall.Page{}, fmt.Errorf("filestore: list: %w", err)
	}
	if page, ok, err := s.listHead(ctx, project, opts); err != nil {
		return recall.Page{}, fmt.Errorf("filestore: list %s: %w", project, err)
	} else if ok {
		return page, nil
	}
	projects := []string{project}
	if project == "" {
		var err error
		if projects, err = s.projectNames(); err != nil {
			return recall.Page{}, fmt.Errorf("filestore: list: %w", err)
		}
	}
	sel, err := newListing(project, opts)
	if err != nil {
		return recall.Page{}, fmt.Errorf("filestore: list: %w", err)
	}
	var match []*record
	believed := map[string]bool{} // projects whose records came from the journal, unchecked
	gather := func() error {
		match = match[:0]
		for _, name := range projects {
			recs, byStat, err := s.records(ctx, s.project(name), opts.Parent, sel)
			if err != nil {
				return fmt.Errorf("filestore: list %s: %w", name, err)
			}
			believed[name] = !byStat
			for _, r := range recs {
				if !r.empty && storekit.Matches(r.light(), project, opts) {
					match = append(match, r)
				}
			}
		}
		return nil
	}
	if err := gather(); err != nil {
		return recall.Page{}, err
	}
	checked := map[*record]bool{}
	// The page's logs are stat'ed (point 6 of the crash argument in
	// index.go), its first maxPageCheck rows: a log changed behind the
	// journal's back is derived again and the page chosen anew. Each round fixes every row it finds stale,
	// so a few rounds settle.
	for round := 0; ; round++ {
		page, next, err := selectPage(match, opts)
		if err != nil {
			return recall.Page{}, fmt.Errorf("filestore: list: %w", err)
		}
		changed := false
		for i, r := range page {
			if i >= maxPageCheck || !believed[r.key.Project] || checked[r] || round == 4 || !s.test.pageCheck() {
				continue
			}
			st, err := fsys.StatPath(filepath.Join(s.root, r.key.Project, filepath.FromSlash(r.rel)+logExt))
			if err == nil && st == r.st {
				checked[r] = true
				continue
			}
			changed = true
			if sel != nil && sel.n > 0 && !opts.Pinned {
				// The walk stopped at the page, and the page changes:
				// a record that sorts after it may belong in it now.
				sel.n = 0
				if err := gather(); err != nil {
					return recall.Page{}, err
				}
				break
			}
			checked[r] = true
			nr, err := s.deriveLog(ctx, s.project(r.key.Project), r)
			if err != nil {
				return recall.Page{}, fmt.Errorf("filestore: list: %w", err)
			}
			i := slices.Index(match, r)
			if nr == nil || nr.empty || !storekit.Matches(nr.light(), project, opts) {
				match = slices.Delete(match, i, i+1)
			} else {
				match[i] = nr
			}
		}
		if !changed {
			page, err := pageOf(page, next)
			if err != nil {
				return recall.Page{}, fmt.Errorf("filestore: list: %w", err)
			}
			return page, nil
		}
	}
}

// selectPage is storekit.Paginate over records: it orders them by the
// fields the index keeps undecoded and selects the page without sorting
// the rest. next is the cursor of the page after, if any.
func selectPage(recs []*record, opts recall.ListOptions) (page []*record, next string, err error) {
	if opts.Cursor != "" {
		c, err := storekit.ParseCursor(opts.Cursor)
		if err != nil {
			return nil, "", err
		}
		after := recs[:0:0]
		for _, r := range recs {
			if !c.Before(r.light()) {
				after = append(after, r)
			}
		}
		recs = after
	}
	limit := opts.Limit
	if limit == 0 {
		limit = recall.DefaultListLimit
	}
	if limit > 0 && len(recs) > limit {
		recs = firstN(recs, limit)
		return recs, storekit.CursorAt(recs[limit-1].light()).String(), nil
	}
	if opts.Cursor == "" {
		recs = slices.Clone(recs) // the caller's slice keeps its order
	}
	slices.SortFunc(recs, listOrder)
	return recs, "", nil
}

// pageOf decodes the Meta of the page's records only.
func pageOf(recs []*record, next string) (recall.Page, error) {
	p := recall.Page{Next: next, Sessions: make([]recall.Meta, len(recs))}
	for i, r := range recs {
		m, err := r.Meta()
		if err != nil {
			return recall.Page{}, err
		}
		m.Key = r.key
		p.Sessions[i] = m
	}
	return p, nil
}

// listOrder is List's order (see storekit.CompareListOrder).
func listOrder(a, b *record) int {
	return storekit.CompareListOrder(a.updated, a.key, b.updated, b.key)
}

// firstN returns the first n of recs in listOrder, sorted, keeping a
// sorted window of n while scanning: a first page costs one pass over the
// project rather than a sort of it.
func firstN(recs []*record, n int) []*record {
	top := make([]*record, 0, n+1)
	for _, r := range recs {
		if len(top) == n && listOrder(r, top[n-1]) >= 0 {
			continue
		}
		i, _ := slices.BinarySearchFunc(top, r, listOrder)
		top = slices.Insert(top, i, r)
		if len(top) > n {
			top = top[:n]
		}
	}
	return top
}

// Projects implements storekit.ProjectLister from the index, as List does.
func (s *Store) Projects(ctx context.Context) ([]recall.ProjectInfo, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("filestore: projects: %w", err)
	}
	names, err := s.projectNames()
	if err != nil {
		return nil, fmt.Errorf("filestore: projects: %w", err)
	}
	var out []recall.ProjectInfo
	for _, name := range names {
		recs, err := s.freshRecords(ctx, s.project(name), "")
		if err != nil {
			return nil, fmt.Errorf("filestore: projects %s: %w", name, err)
		}
		info := recall.ProjectInfo{Project: name}
		for _, r := range recs {
			if r.empty {
				continue
			}
			info.Sessions++
			if r.updated.After(info.Updated) {
				info.Updated = r.updated
			}
		}
		if info.Sessions > 0 {
			out = append(out, info)
		}
	}
	slices.SortFunc(out, func(a, b recall.ProjectInfo) int { return strings.Compare(a.Project, b.Project) })
	return out, nil
}

// Cleanup implements storekit.Cleaner. Each candidate is checked again
// under its write lock before it is removed, so a session written to since
// the scan is kept. When ctx ends, Cleanup stops before the next removal
// and returns ctx's error with the report of what it removed so far.
func (s *Store) Cleanup(ctx context.Context, opts recall.CleanupOptions) (recall.CleanupReport, error) {
	if err := s.checkOpen(); err != nil {
		return recall.CleanupReport{}, err
	}
	if err := ctx.Err(); err != nil {
		return recall.CleanupReport{}, fmt.Errorf("filestore: cleanup: %w", err)
	}
	projects := []string{opts.Project}
	if opts.Project == "" {
		var err error
		if projects, err = s.projectNames(); err != nil {
			return recall.CleanupReport{}, fmt.Errorf("filestore: cleanup: %w", err)
		}
	} else if err := validProject(opts.Project); err != nil {
		return recall.CleanupReport{}, fmt.Errorf("filestore: cleanup: %w", err)
	}
	var rep recall.CleanupReport
	for _, name := range projects {
		recs, err := s.freshRecords(ctx, s.project(name), "")
		if err != nil {
			return rep, fmt.Errorf("filestore: cleanup %s: %w", name, err)
		}
		for _, r := range recs {
			k := r.key
			if r.empty || !r.updated.Before(opts.OlderThan) {
				continue
			}
			m, err := r.Meta()
			if err != nil {
				return rep, fmt.Errorf("filestore: cleanup %s: %w", k, err)
			}
			m.Key = k
			if m.Pinned {
				rep.Kept++
				continue
			}
			if !opts.DryRun {
				removed, err := s.removeIfStale(ctx, k, opts.OlderThan)
				if err != nil {
					return rep, fmt.Errorf("filestore: cleanup %s: %w", k, err)
				}
				if !removed {
					continue
				}
			}
			rep.Removed = append(rep.Removed, m)
		}
	}
	storekit.SortList(rep.Removed)
	return rep, nil
}

// sweepTemp removes name, in the directory d, if it is a temporary file
// (see tempName) whose writer is gone: its process no longer exists and the
// file is more than a minute old (a process in another PID namespace may
// look dead). A crash between writing a temp file and linking it into
// place leaves these behind.
func sweepTemp(d *os.File, name string) {
	_, rest, ok := strings.Cut(name, "#tmp-")
	if !ok {
		return
	}
	pidText, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 || pid == os.Getpid() || !fsys.ProcessGone(pid) {
		return
	}
	fsys.RemoveOldTemp(d, name, time.Minute)
}
