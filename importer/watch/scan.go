package watch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// rescan looks at every root: it puts the folders below it under watch,
// finds its transcripts and makes those due now whose size or
// modification time moved since their last import, or that were never
// imported. A transcript no longer found is forgotten. A transcript whose
// last import failed is tried again only when it changed.
func (w *watcher) rescan(now time.Time) {
	clear(w.ignored)
	w.roots = w.roots[:0]
	seen := map[string]bool{}
	for i := range w.sources {
		src := &w.sources[i]
		for _, r := range src.Roots {
			path, err := filepath.EvalSymlinks(r)
			if err != nil {
				msg := fmt.Sprintf("%s: %v", src.Tool, err)
				if errors.Is(err, fs.ErrNotExist) {
					msg = fmt.Sprintf("%s: %s does not exist yet; a rescan picks it up once it does", src.Tool, r)
				}
				w.problem("root "+r, msg)
				continue
			}
			delete(w.said, "root "+r)
			w.roots = append(w.roots, root{path: path, src: src})
			w.watchTree(path)
			found, err := src.Find(path)
			if err != nil {
				w.problem("find "+r, fmt.Sprintf("%s: %v", src.Tool, err))
				continue
			}
			delete(w.said, "find "+r)
			for _, p := range found {
				seen[p] = true
				w.check(p, src, now)
			}
		}
	}
	for p := range w.files {
		if !seen[p] {
			delete(w.files, p)
			delete(w.pending, p)
		}
	}
}

// check makes the transcript at path due now unless its last import saw
// it as it is.
func (w *watcher) check(path string, src *Source, now time.Time) {
	f := w.files[path]
	if f == nil {
		f = &file{src: src}
		w.files[path] = f
	}
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	if f.imported && fi.Size() == f.size && fi.ModTime().Equal(f.mod) {
		return
	}
	f.first, f.due = now, now
	w.pending[path] = f
}

// watchTree puts top and every folder below it under watch. Folders that
// cannot be watched (past the system's limit of watches or open files)
// are reported, once while their number stays the same, and followed by
// the rescans alone.
func (w *watcher) watchTree(top string) {
	if w.fsw == nil {
		return
	}
	failed, first := 0, ""
	_ = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || w.dirs[p] {
			return nil
		}
		if err := w.fsw.Add(p); err != nil {
			if failed++; failed == 1 {
				first = err.Error()
			}
			return nil
		}
		w.dirs[p] = true
		return nil
	})
	if failed > 0 {
		w.problem("watch "+top, fmt.Sprintf("%d folders under %s cannot be watched (%s): their changes are found by the rescans every %s", failed, top, first, w.opts.Rescan))
	} else {
		delete(w.said, "watch "+top)
	}
}

// event takes one file system event: a change of a known transcript is
// debounced; a new folder is put under watch and searched; a new file
// is one when its folder's Find returns it.
func (w *watcher) event(ev fsnotify.Event, now time.Time) {
	p := ev.Name
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		w.forgetDirs(p)
	}
	if ev.Op == fsnotify.Chmod {
		return // attributes alone (Linux sends it before a removal, too)
	}
	if f := w.files[p]; f != nil {
		// A removal is a change too: its import finds the file gone. A
		// transcript whose import failed waits for a rescan (a source's
		// own Import tries again what failed).
		if f.failed == "" || f.src.Import != nil {
			w.touch(p, f, now)
		}
		return
	}
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Write) || w.ignored[p] {
		return
	}
	src := w.sourceOf(p)
	if src == nil {
		return
	}
	fi, err := os.Stat(p)
	if err != nil {
		return
	}
	if fi.IsDir() {
		// Watched from now on; what was written in it before is found
		// by Find.
		w.watchTree(p)
		w.discover(src, p, now)
		return
	}
	w.discover(src, filepath.Dir(p), now)
	if w.files[p] == nil {
		w.ignored[p] = true
	}
}

// discover makes the transcripts below dir that the watcher did not know
// pending.
func (w *watcher) discover(src *Source, dir string, now time.Time) {
	found, err := src.Find(dir)
	if err != nil {
		return // gone again; a rescan settles it
	}
	for _, p := range found {
		if w.files[p] == nil {
			f := &file{src: src}
			w.files[p] = f
			w.touch(p, f, now)
		}
	}
}

// forgetDirs forgets the watches of path and the folders below it, which
// the system dropped when it was removed or renamed, so that a folder
// created again at path is watched again.
func (w *watcher) forgetDirs(path string) {
	if !w.dirs[path] {
		return
	}
	for d := range w.dirs {
		if d == path || strings.HasPrefix(d, path+string(filepath.Separator)) {
			delete(w.dirs, d)
			_ = w.fsw.Remove(d) // usually gone already
		}
	}
}

// eventError reports an error of the event source. Events lost to an
// overflow are reported each time; Run then rescans.
func (w *watcher) eventError(err error) {
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		w.report(Report{Problem: "file system events were lost (the queue overflowed): rescanning"})
		return
	}
	w.problem("events error", fmt.Sprintf("file system events: %v", err))
}
