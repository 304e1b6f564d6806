package filestore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/durable"
	"github.com/recallkit/recall/internal/flock"
	"github.com/recallkit/recall/internal/fsys"
)

// Remove implements recall.Store. A main session goes with its <id>/
// directory of subagent records and the side files of its torn tails. The
// log is unlinked under its file lock, so a writer in another process
// finishes its batch first, and a writer that was waiting notices the log
// is gone rather than writing into the unlinked file.
func (s *Store) Remove(ctx context.Context, key recall.Key) error {
	l, err := s.locate(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("filestore: remove %s: %w", key, err)
	}
	unlock, err := s.locks.lock(ctx, l.key.Project+"\x00"+l.rel)
	if err != nil {
		return fmt.Errorf("filestore: remove %s: %w", key, err)
	}
	defer unlock()
	n, err := s.removeLocked(ctx, l, nil)
	if n > 0 {
		s.settleDir(s.project(l.key.Project))
	}
	if err != nil {
		return fmt.Errorf("filestore: remove %s: %w", key, err)
	}
	if n == 0 {
		return fmt.Errorf("filestore: remove %s: %w", key, recall.ErrNotFound)
	}
	return nil
}

// removeIfStale removes the main session k if, checked under its locks, it
// is still not updated since cutoff and not pinned.
func (s *Store) removeIfStale(ctx context.Context, k recall.Key, cutoff time.Time) (bool, error) {
	l, err := s.locate(k)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return false, err
	}
	unlock, err := s.locks.lock(ctx, l.key.Project+"\x00"+l.rel)
	if err != nil {
		return false, err
	}
	defer unlock()
	stale := func(f *os.File, st fsys.Stat) (bool, error) {
		r, err := derive(ctx, f, l.key, l.rel, st, s.project(k.Project).get(l.rel))
		if err != nil {
			return false, err
		}
		m, err := r.Meta()
		if err != nil {
			return false, err
		}
		return !r.empty && m.Updated.Before(cutoff) && !m.Pinned, nil
	}
	n, err := s.removeLocked(ctx, l, stale)
	if n > 0 {
		s.settleDir(s.project(l.key.Project))
	}
	return n > 0, err
}

// removeLocked removes l's log (and, for a main session, its directory of
// subagent records) and returns how many logs it removed. The caller holds
// the in-process lock. When check is set, it decides under the file lock
// whether the log goes at all. The unlink of the log is the commit: when
// ctx has ended before it, nothing is removed.
func (s *Store) removeLocked(ctx context.Context, l loc, check func(*os.File, fsys.Stat) (bool, error)) (int, error) {
	n := 0
	f, err := os.OpenFile(l.path, os.O_RDWR, 0)
	switch {
	case err == nil:
		defer f.Close()
		if err := flock.Lock(ctx, f); err != nil {
			return 0, err
		}
		if check != nil {
			st, err := fsys.Fstat(f)
			if err != nil {
				return 0, err
			}
			if ok, err := check(f, st); err != nil || !ok {
				return 0, err
			}
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		// the index hears of the removal before it happens (index.go)
		p := s.project(l.key.Project)
		if err := p.appendJournal(appendMark(nil, l.rel, lineIntent)); err != nil {
			return 0, fmt.Errorf("index: %w", err)
		}
		defer p.drop(l.rel, l.key.IsMain()) // still under the log's lock
		if err := os.Remove(l.path); err == nil {
			n++
		} else if !isNotExist(err) {
			return 0, err
		}
	case !isNotExist(err):
		return 0, err
	case check != nil:
		return 0, nil
	}
	if n == 0 {
		// no log: the subagent records are all there is to remove
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
	for _, t := range tornFiles(l.path) {
		os.Remove(t)
	}
	if l.key.IsMain() {
		dir := filepath.Join(l.dir, l.key.Session)
		if fi, err := os.Lstat(dir); err == nil && fi.IsDir() {
			logs, _ := readLogDir(context.WithoutCancel(ctx), dir, "", 8, false) // past the commit
			if err := os.RemoveAll(dir); err != nil {
				return n, err
			}
			n += len(logs)
		}
	} else {
		// drop the directories the record leaves empty, up to the session's
		for d := filepath.Dir(l.path); d != l.dir && len(d) > len(l.dir); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
		}
	}
	if n > 0 {
		// make the removal durable: the log's directory, or the project's
		// when the removal took the log's directory with it
		d := filepath.Dir(l.path)
		if _, err := os.Stat(d); err != nil {
			d = l.dir
		}
		if err := durable.SyncDir(d); err != nil {
			return n, err
		}
	}
	if f == nil {
		s.project(l.key.Project).drop(l.rel, l.key.IsMain())
	}
	return n, nil
}
