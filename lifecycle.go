package recall

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"unicode/utf8"
)

// The lifecycle operations below change one session through Append with a
// Guard, so each is atomic with respect to a concurrent remove or write:
// none of them brings back a session removed by another process. Every
// store gets them for free.

// maxGuardRetries bounds how often an operation that read the session
// and wrote with IfLastSeq retries after a concurrent write moved it.
const maxGuardRetries = 16

// CreateOptions are what a session starts with. The zero value creates an
// empty session.
type CreateOptions struct {
	// Title, when not empty, is the session's user title.
	Title string
	// Metadata is the session's first metadata (see ValidateMetadata).
	Metadata map[string]string
	// Items are its first items.
	Items []Item
}

// Create creates the session key, with no items unless opts has some, and
// returns its metadata. The session is listed at once (with 0 items when
// empty); its log starts with a create entry. Creating a session that
// exists is ErrConflict and writes nothing.
func (s *StoreSession) Create(ctx context.Context, opts CreateOptions) (Meta, error) {
	st, key := s.store, s.key
	if err := ValidateMetadata(opts.Metadata); err != nil {
		return Meta{}, fmt.Errorf("recall: create %s: %w", key, err)
	}
	entries := []Entry{{Kind: KindCreate}}
	if opts.Title != "" {
		e, err := titleEntry(opts.Title, TitleUser)
		if err != nil {
			return Meta{}, fmt.Errorf("recall: create %s: %w", key, err)
		}
		entries = append(entries, e)
	}
	if len(opts.Metadata) > 0 {
		entries = append(entries, NewEntry(KindMeta, MetaChange{Metadata: pointers(opts.Metadata)}))
	}
	entries = append(entries, ItemEntries(opts.Items...)...)
	if _, err := st.Append(ctx, key, IfNew(), entries...); err != nil {
		return Meta{}, err
	}
	return st.Stat(ctx, key)
}

// SetTitle sets the session's title. An auto title never replaces a user
// title: the call then changes nothing and returns the current metadata.
// An empty title removes the title. Newlines become spaces. A missing
// session is ErrNotFound.
func (s *StoreSession) SetTitle(ctx context.Context, title string, source TitleSource) (Meta, error) {
	st, key := s.store, s.key
	if source != TitleAuto && source != TitleUser {
		return Meta{}, fmt.Errorf("recall: set title of %s: unknown source %q", key, source)
	}
	e, err := titleEntry(title, source)
	if err != nil {
		return Meta{}, fmt.Errorf("recall: set title of %s: %w", key, err)
	}
	if source == TitleAuto {
		m, err := st.Stat(ctx, key)
		if err != nil {
			return Meta{}, err
		}
		if !m.TitleSource.Yields(source) {
			return m, nil // Apply would ignore the entry anyway
		}
	}
	return appendChange(ctx, st, key, e)
}

func titleEntry(title string, source TitleSource) (Entry, error) {
	if err := checkString("title", title); err != nil {
		return Entry{}, err
	}
	title = strings.Join(strings.Fields(title), " ")
	return NewEntry(KindTitle, TitleChange{Title: title, Source: source}), nil
}

// pointers turns a metadata map into the form MetaChange merges.
func pointers(md map[string]string) map[string]*string {
	if len(md) == 0 {
		return nil
	}
	out := make(map[string]*string, len(md))
	for k, v := range maps.All(md) {
		out[k] = &v
	}
	return out
}

// checkString refuses text that is not valid UTF-8 before encoding/json
// would replace its bad bytes with U+FFFD; ValidateEntries refuses NULs.
func checkString(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalidItem, what, s)
	}
	return nil
}

// ChangeMeta applies c to an existing session (ErrNotFound when it is
// missing) as one meta entry and returns the metadata afterwards: it
// archives or unarchives (Archived), pins or unpins (Pinned; Cleanup never
// removes a pinned session), replaces the labels (Labels with SetLabels;
// empty removes them) and sets, deletes or replaces metadata pairs
// (Metadata, ClearMetadata). A label that is not valid UTF-8 is
// ErrInvalidItem; metadata that would be over the limits of
// ValidateMetadata once merged is ErrInvalidMetadata. Either writes
// nothing, and the check of the merged metadata and the write are one
// atomic step.
func (s *StoreSession) ChangeMeta(ctx context.Context, c MetaChange) (Meta, error) {
	st, key := s.store, s.key
	for _, l := range c.Labels {
		if err := checkString("label", l); err != nil {
			return Meta{}, fmt.Errorf("recall: change %s: %w", key, err)
		}
	}
	if err := validateMetadataChange(c); err != nil {
		return Meta{}, fmt.Errorf("recall: change %s: %w", key, err)
	}
	e := NewEntry(KindMeta, c)
	if c.ClearMetadata || len(c.Metadata) == 0 {
		// The result does not depend on the metadata the session holds,
		// and validateMetadataChange has checked every pair it keeps.
		return appendChange(ctx, st, key, e)
	}
	for range maxGuardRetries {
		m, err := st.Stat(ctx, key)
		if err != nil {
			return Meta{}, err
		}
		if err := ValidateMetadata(mergeMetadata(m.Metadata, c)); err != nil {
			return Meta{}, fmt.Errorf("recall: change %s: %w", key, err)
		}
		_, err = st.Append(ctx, key, IfLastSeq(m.LastSeq), e)
		if errors.Is(err, ErrConflict) {
			continue // written meanwhile: merge into what it holds now
		}
		if err != nil {
			return Meta{}, err
		}
		return st.Stat(ctx, key)
	}
	return Meta{}, fmt.Errorf("recall: change %s: %w: the session kept changing", key, ErrConflict)
}

func appendChange(ctx context.Context, s Store, key Key, e Entry) (Meta, error) {
	if _, err := s.Append(ctx, key, IfExists(), e); err != nil {
		return Meta{}, err
	}
	return s.Stat(ctx, key)
}

// RemoveItem removes the item ref names from the session's view, by
// appending a remove entry; the log keeps the item. It returns the item
// removed. A ref that is not in the view (never was, or was removed,
// popped, cleared or compacted away) is ErrNotFound and writes nothing;
// the check and the write are one atomic step. Pop is the newest-item
// case.
func (s *StoreSession) RemoveItem(ctx context.Context, ref ItemRef) (Item, error) {
	st, key := s.store, s.key
	for range maxGuardRetries {
		live, last, err := st.Items(ctx, key, 0)
		if err != nil {
			return nil, err
		}
		var found Item
		for _, l := range live {
			if l.Ref == ref {
				found = l.Item
				break
			}
		}
		if found == nil {
			return nil, fmt.Errorf("recall: remove item %d.%d of %s: %w", ref.Seq, ref.Index, key, ErrNotFound)
		}
		_, err = st.Append(ctx, key, IfLastSeq(last), NewEntry(KindRemove, ref))
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return found, nil
	}
	return nil, fmt.Errorf("recall: remove item of %s: %w: the session kept changing", key, ErrConflict)
}
