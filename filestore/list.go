package filestore

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/storekit"
)

// logFile is a log found on disk.
type logFile struct {
	rel string
	st  fileStat
}

// listLogs returns the logs of a project directory: its main sessions, or
// with parent set, the subagent records under that session. It reads
// directories and stats files; it opens no log.
func listLogs(ctx context.Context, dir, parent string) ([]logFile, error) {
	if parent == "" {
		return readLogDir(ctx, dir, "", 0)
	}
	return readLogDir(ctx, dir, parent, 8)
}

// readLogDir lists the *.jsonl files of dir/sub, descending depth levels
// of subdirectories. rel names are sub-relative, '/'-separated. It stops
// with ctx's error, checked before each directory, when ctx ends.
func readLogDir(ctx context.Context, dir, sub string, depth int) ([]logFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	d, err := os.Open(filepath.Join(dir, filepath.FromSlash(sub)))
	if err != nil {
		if isNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	var own, below []logFile
	for _, e := range ents {
		name := e.Name()
		if strings.IndexByte(name, '#') >= 0 {
			sweepTemp(d, name) // the store's own files; a dead writer's temp goes
			continue
		}
		t := e.Type()
		if t.IsDir() {
			if depth > 0 {
				more, err := readLogDir(ctx, dir, path.Join(sub, name), depth-1)
				if err != nil {
					return nil, err
				}
				below = append(below, more...)
			}
			continue
		}
		if strings.HasSuffix(name, logExt) && (t.IsRegular() || t&os.ModeSymlink != 0) {
			rel := strings.TrimSuffix(name, logExt)
			if sub != "" {
				rel = sub + "/" + rel
			}
			own = append(own, logFile{rel: rel})
		}
	}
	return append(statLogs(d, own), below...), nil
}

// freshRecords returns an up-to-date record of every log that listLogs
// finds: the cached one when its stat still matches, else one re-derived
// from the log (usually from its last committed end). Re-derived records
// are written back to the index.
func (s *Store) freshRecords(ctx context.Context, p *projectIndex, parent string) ([]*record, error) {
	// Read the journal while the directory is read and stat'ed: on a cold
	// start both take a while, and they are independent.
	var refreshed sync.WaitGroup
	refreshed.Go(func() {
		p.mu.Lock()
		p.refresh() // a journal that cannot be read only costs re-derivations
		p.mu.Unlock()
	})
	logs, err := listLogs(ctx, p.dir, parent)
	refreshed.Wait()
	if err != nil {
		return nil, err
	}
	out := make([]*record, 0, len(logs))
	var stale []logFile
	var prev []*record
	known := 0
	p.mu.Lock()
	for _, lf := range logs {
		r := p.recs[lf.rel]
		if r != nil {
			known++
		}
		if r != nil && r.st == lf.st {
			out = append(out, r)
		} else {
			stale = append(stale, lf)
			prev = append(prev, r)
		}
	}
	var gone []string
	top := 0
	if parent == "" {
		for rel := range p.recs {
			if !strings.Contains(rel, "/") {
				top++
			}
		}
	}
	if top > known { // records of logs that are gone
		found := make(map[string]bool, len(logs))
		for _, lf := range logs {
			found[lf.rel] = true
		}
		for rel := range p.recs {
			if !strings.Contains(rel, "/") && !found[rel] {
				gone = append(gone, rel)
			}
		}
	}
	p.mu.Unlock()

	fresh := make([]*record, 0, len(stale))
	for i, lf := range stale {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		k, ok := keyOf(p.name, lf.rel)
		if !ok {
			continue // a file named by hand outside the key rules
		}
		l := loc{key: k, dir: p.dir, rel: lf.rel, path: filepath.Join(p.dir, filepath.FromSlash(lf.rel)+logExt)}
		f, st, ok, err := openLog(l)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.path, err)
		}
		if !ok {
			continue // removed since the directory was read
		}
		r, err := derive(ctx, f, k, lf.rel, st, prev[i])
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.path, err)
		}
		fresh = append(fresh, r)
	}
	p.update(fresh, gone)
	return append(out, fresh...), nil
}

// update caches re-derived records and forgets gone ones, then brings the
// journal up to date: one append for a few records, or a compact rewrite
// when the journal is missing or mostly obsolete.
func (p *projectIndex) update(fresh []*record, gone []string) {
	if len(fresh) == 0 && len(gone) == 0 {
		return
	}
	p.mu.Lock()
	for _, rel := range gone {
		delete(p.recs, rel)
		delete(p.dirty, rel)
	}
	for _, r := range fresh {
		p.recs[r.rel] = r
		delete(p.dirty, r.rel) // written below
	}
	if p.jIno == 0 || p.jLines+len(fresh) > 2*len(p.recs)+256 {
		p.compactLocked(true) // a failed rewrite leaves the old journal, still a valid cache
		p.mu.Unlock()
		return
	}
	var buf []byte
	for _, r := range fresh {
		buf = appendRecord(buf, r)
	}
	p.mu.Unlock()
	p.appendJournal(buf)
}

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
	projects := []string{project}
	if project == "" {
		var err error
		if projects, err = s.projectNames(); err != nil {
			return recall.Page{}, fmt.Errorf("filestore: list: %w", err)
		}
	}
	var match []*record
	for _, name := range projects {
		recs, err := s.freshRecords(ctx, s.project(name), opts.Parent)
		if err != nil {
			return recall.Page{}, fmt.Errorf("filestore: list %s: %w", name, err)
		}
		for _, r := range recs {
			if !r.empty && storekit.Matches(r.light(), project, opts) {
				match = append(match, r)
			}
		}
	}
	page, err := paginate(match, opts)
	if err != nil {
		return recall.Page{}, fmt.Errorf("filestore: list: %w", err)
	}
	return page, nil
}

// paginate is storekit.Paginate over records: it orders them by the fields
// the index keeps undecoded, selects the page without sorting the rest,
// and decodes the Meta of the page only.
func paginate(recs []*record, opts recall.ListOptions) (recall.Page, error) {
	if opts.Cursor != "" {
		c, err := storekit.ParseCursor(opts.Cursor)
		if err != nil {
			return recall.Page{}, err
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
	var p recall.Page
	if limit > 0 && len(recs) > limit {
		recs = firstN(recs, limit)
		p.Next = storekit.CursorAt(recs[limit-1].light()).String()
	} else {
		slices.SortFunc(recs, listOrder)
	}
	p.Sessions = make([]recall.Meta, len(recs))
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

// Projects implements recall.ProjectLister from the index, as List does.
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

// Cleanup implements recall.Cleaner. Each candidate is checked again
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
	if err != nil || pid <= 0 || pid == os.Getpid() || !processGone(pid) {
		return
	}
	removeOldTemp(d, name, time.Minute)
}
