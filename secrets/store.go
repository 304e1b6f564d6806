package secrets

import (
	"context"
	"sync"

	"github.com/recallkit/recall"
)

// Store is a recall.Store that redacts every item, title and compaction
// written through Append and Import before the store it wraps sees them,
// so that a secret never reaches that store, its index or its replicas.
// Everything else goes to the wrapped store unchanged.
//
// Metadata entries (archive, pin, labels, the metadata map) and the other
// kinds are written as they are: they are set by programs, not by the
// conversation, and an importer keeps its bookkeeping there.
//
// Store has Unwrap, so recall.As finds the wrapped store's optional
// abilities. None of them writes a conversation's text that did not come
// through Append or Import first (a fork copies stored entries, a purge
// keeps them, the others read or remove), so none writes around the
// redaction.
type Store struct {
	recall.Store
	r *Redactor

	mu    sync.Mutex
	total Report
}

var _ recall.Store = (*Store)(nil)

// NewStore returns st with redaction by r on every write.
func NewStore(st recall.Store, r *Redactor) *Store {
	return &Store{Store: st, r: r, total: Report{}}
}

// Unwrap returns the wrapped store.
func (s *Store) Unwrap() recall.Store { return s.Store }

// Redacted returns what the writes that succeeded so far redacted.
func (s *Store) Redacted() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Report{}
	out.Add(s.total)
	return out
}

// Append redacts the entries and appends them to the wrapped store.
func (s *Store) Append(ctx context.Context, key recall.Key, guard recall.Guard, entries ...recall.Entry) (int64, error) {
	es, rep := s.r.Entries(entries)
	seq, err := s.Store.Append(ctx, key, guard, es...)
	if err == nil {
		s.count(rep)
	}
	return seq, err
}

// Import redacts the entries and imports them into the wrapped store.
// Their seqs and times are kept.
func (s *Store) Import(ctx context.Context, key recall.Key, entries ...recall.Entry) (int64, error) {
	es, rep := s.r.Entries(entries)
	seq, err := s.Store.Import(ctx, key, es...)
	if err == nil {
		s.count(rep)
	}
	return seq, err
}

func (s *Store) count(rep Report) {
	if len(rep) == 0 {
		return
	}
	s.mu.Lock()
	s.total.Add(rep)
	s.mu.Unlock()
}

// Entries returns entries with the data of every item, title and
// compaction entry redacted (see Store), and what was redacted. The
// entries given are not changed; the slice is returned as it is when
// nothing was redacted.
func (r *Redactor) Entries(entries []recall.Entry) ([]recall.Entry, Report) {
	rep := Report{}
	var out []recall.Entry
	for i, e := range entries {
		switch e.Kind {
		case recall.KindItem, recall.KindTitle, recall.KindCompaction:
		default:
			continue
		}
		data, r1 := r.JSON(e.Data)
		if len(r1) == 0 {
			continue
		}
		rep.Add(r1)
		if out == nil {
			out = append([]recall.Entry(nil), entries...)
		}
		out[i].Data = data
	}
	if out == nil {
		return entries, rep
	}
	return out, rep
}
