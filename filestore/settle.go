package filestore

import (
	"context"
	"time"

	"github.com/recallkit/recall/internal/fsys"
)

// settleDir has the project directory's names checked against the index
// journal in the background, after this store created or removed a log.
// Either moves the directory's mtime, so the journal's #dir no longer
// matches it, and the next List would read the names and take the whole
// journal instead of its head (see listHead). The check is that List's
// own (Store.records: the names read without a stat, the logs the
// journal does not know derived, the new #dir written by writeBack), so it
// is as safe; done here, the writer pays it (an agent, which waits on its
// model anyway) rather than the next `recall ls`. What it loaded of the
// journal is dropped after unless the store had it before, so a writer
// does not keep every record of a large project. A store that keeps
// creating sessions (a server) runs one check at a time, and rests four
// times as long as the last took before the next, so the checks take at
// most a fifth of a core. A directory that changed too recently for the
// journal to vouch for its names (see racyWindow) is checked again once
// it has settled, if the store is still open then. Close waits for the
// check that runs, not for one to come.
func (s *Store) settleDir(p *projectIndex) {
	p.settleMu.Lock()
	defer p.settleMu.Unlock()
	if p.settling {
		p.settleAgain = true
		return
	}
	s.mu.Lock() // Close sets closed under it: no check starts once Close waits
	if s.closed.Load() {
		s.mu.Unlock()
		return
	}
	s.bg.Add(1)
	s.mu.Unlock()
	p.settling = true
	go func() {
		defer s.bg.Done()
		for {
			p.mu.Lock()
			loaded := p.jIno != 0
			p.mu.Unlock()
			began := time.Now()
			s.records(context.Background(), p, "", nil) // a failure leaves it to the next List
			if !loaded {
				p.mu.Lock()
				p.unload()
				p.mu.Unlock()
			}
			rest := 4 * time.Since(began)
			// A directory changed less than racyWindow ago could not be
			// vouched for: check again once its mtime has settled.
			unsettled := false
			if m, err := fsys.DirMtime(p.dir); err == nil && !s.settled(m) {
				unsettled = true
				rest = max(rest, time.Until(time.Unix(0, m).Add(racyWindow)))
			}
			p.settleMu.Lock()
			again := (p.settleAgain || unsettled) && !s.closed.Load()
			p.settleAgain, p.settling = false, again
			p.settleMu.Unlock()
			if !again {
				return
			}
			select {
			case <-time.After(rest):
			case <-s.closing:
				p.settleMu.Lock()
				p.settling = false
				p.settleMu.Unlock()
				return // the next List checks the directory
			}
		}
	}()
}

// unload forgets the journal read so far: the next reader reads it anew.
// The caller holds p.mu.
func (p *projectIndex) unload() {
	if p.jr != nil {
		p.jr.Close()
		p.jr = nil
	}
	p.reset(0)
}
