package filestore

import "context"

// settleDir has the project directory's names checked against the index
// journal in the background, after this store created or removed a log.
// Either moves the directory's mtime, so the journal's #dir no longer
// matches it, and the next List would read the names and take the whole
// journal instead of its head (see listHead). The check is that List's
// own (Store.records: the names read without a stat, the logs the
// journal does not know derived, the new #dir written by validate), so it
// is as safe; done here, the writer pays it (an agent, which waits on its
// model anyway) rather than the next `recall ls`. What it loaded of the
// journal is dropped after unless the store had it before, so a writer
// does not keep every record of a large project. Close waits for it.
func (s *Store) settleDir(p *projectIndex) {
	p.settleMu.Lock()
	defer p.settleMu.Unlock()
	if p.settling {
		p.settleAgain = true
		return
	}
	p.settling = true
	s.bg.Go(func() {
		for {
			p.mu.Lock()
			loaded := p.jIno != 0
			p.mu.Unlock()
			s.records(context.Background(), p, "") // a failure leaves it to the next List
			if !loaded {
				p.mu.Lock()
				p.unload()
				p.mu.Unlock()
			}
			p.settleMu.Lock()
			again := p.settleAgain && !s.closed.Load()
			p.settleAgain, p.settling = false, again
			p.settleMu.Unlock()
			if !again {
				return
			}
		}
	})
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
