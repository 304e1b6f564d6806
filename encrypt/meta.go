package encrypt

import (
	"context"
	"errors"
	"fmt"

	"github.com/recallkit/recall"
)

// promptKey names one life of a session: a session removed and created
// again is another.
type promptKey struct {
	key     recall.Key
	created int64
}

// promptScan is what is known of a session's first prompt: the prompt,
// or that none of its entries up to through has one.
type promptScan struct {
	prompt  string
	through int64
}

// reveal opens the sealed parts of a session's metadata: the title, and
// FirstPrompt, which the wrapped store cannot derive from sealed items.
// entries, when not nil, is the session's whole log, opened; otherwise
// the first prompt is read from the log's first entries, once per
// session and process (it never changes once set).
func (s *Store) reveal(ctx context.Context, m recall.Meta, entries []recall.Entry) (recall.Meta, error) {
	o := opener{s, ctx, m.Key}
	title, err := o.title(m.Title)
	if err != nil {
		return recall.Meta{}, fmt.Errorf("encrypt: %w", err)
	}
	m.Title = title
	if m.FirstPrompt != "" || m.LastSeq == 0 {
		return m, nil
	}
	if entries != nil {
		for _, e := range entries {
			if p := e.Prompt(); p != "" {
				m.FirstPrompt = p
				break
			}
		}
		return m, nil
	}
	p, err := s.firstPrompt(ctx, m)
	if err != nil {
		return recall.Meta{}, fmt.Errorf("encrypt: %w", err)
	}
	m.FirstPrompt = p
	return m, nil
}

// firstPrompt reads the first prompt of m's session from its log, from
// where the last read stopped, in pages that grow.
func (s *Store) firstPrompt(ctx context.Context, m recall.Meta) (string, error) {
	pk := promptKey{m.Key, m.Created.UnixNano()}
	s.mu.Lock()
	scan := s.prompts[pk]
	s.mu.Unlock()
	o := opener{s, ctx, m.Key}
	for page := 8; scan.prompt == "" && scan.through < m.LastSeq; page = min(4*page, 256) {
		entries, err := s.inner.Entries(ctx, m.Key, scan.through, page)
		if errors.Is(err, recall.ErrNotFound) {
			return "", nil // removed meanwhile
		}
		if err != nil {
			return "", err
		}
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			if e, err = o.entry(e); err != nil {
				return "", err
			}
			if scan.prompt = e.Prompt(); scan.prompt != "" {
				break
			}
			scan.through = e.Seq
		}
	}
	s.mu.Lock()
	if len(s.prompts) >= cacheMax {
		clear(s.prompts)
	}
	s.prompts[pk] = scan
	s.mu.Unlock()
	return scan.prompt, nil
}
