package encrypt

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/recallkit/recall"
)

// pageReaders bounds the first-prompt reads a List page makes at once.
const pageReaders = 8

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

// knownPrompt returns m's first prompt when the cache knows it (or knows
// that the log holds none up to its end).
func (s *Store) knownPrompt(m recall.Meta) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	scan, ok := s.prompts[promptKey{m.Key, m.Created.UnixNano()}]
	return scan.prompt, ok && (scan.prompt != "" || scan.through >= m.LastSeq)
}

// revealPage reveals a List page: the titles, and the first prompts the
// cache knows, in turn; the first prompts it does not, read from their
// logs, pageReaders at a time.
func (s *Store) revealPage(ctx context.Context, metas []recall.Meta) error {
	var unknown []int
	for i, m := range metas {
		title, err := opener{s, ctx, m.Key}.title(m.Title)
		if err != nil {
			return fmt.Errorf("encrypt: %w", err)
		}
		metas[i].Title = title
		if m.FirstPrompt != "" || m.LastSeq == 0 {
			continue
		}
		if p, ok := s.knownPrompt(m); ok {
			metas[i].FirstPrompt = p
			continue
		}
		unknown = append(unknown, i)
	}
	errs := make([]error, len(metas))
	sem := make(chan struct{}, pageReaders)
	var wg sync.WaitGroup
	for _, i := range unknown {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			metas[i].FirstPrompt, errs[i] = s.firstPrompt(ctx, metas[i])
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return fmt.Errorf("encrypt: %w", err)
		}
	}
	return nil
}
