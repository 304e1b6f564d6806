package recall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The lifecycle operations below write one entry to an existing session's
// log; they return ErrNotFound for a session that does not exist rather
// than create it. Every store gets them for free from Append.

// Clear appends a clear entry: the session's view starts over, while the
// log keeps every earlier entry. Clearing a missing session is a no-op.
func Clear(ctx context.Context, s Store, key Key) error {
	if _, err := s.Stat(ctx, key); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	_, err := s.Append(ctx, key, Entry{Kind: KindClear})
	return err
}

// SetTitle sets the session's title. An auto title never replaces a user
// title: the call then changes nothing and returns the current metadata.
// An empty title removes the title. Newlines become spaces.
func SetTitle(ctx context.Context, s Store, key Key, title string, source TitleSource) (Meta, error) {
	if source != TitleAuto && source != TitleUser {
		return Meta{}, fmt.Errorf("recall: set title of %s: unknown source %q", key, source)
	}
	m, err := s.Stat(ctx, key)
	if err != nil {
		return Meta{}, err
	}
	if !AllowTitle(m.TitleSource, source) {
		return m, nil
	}
	if err := checkString("title", title); err != nil {
		return Meta{}, fmt.Errorf("recall: set title of %s: %w", key, err)
	}
	title = strings.Join(strings.Fields(title), " ")
	return appendChange(ctx, s, key, NewEntry(KindTitle, TitleChange{Title: title, Source: source}))
}

// SetArchived archives or unarchives a session. Archived sessions are left
// out of List unless ListOptions.IncludeArchived.
func SetArchived(ctx context.Context, s Store, key Key, archived bool) (Meta, error) {
	return Update(ctx, s, key, MetaChange{Archived: &archived})
}

// SetPinned pins or unpins a session. Cleanup never removes a pinned one.
func SetPinned(ctx context.Context, s Store, key Key, pinned bool) (Meta, error) {
	return Update(ctx, s, key, MetaChange{Pinned: &pinned})
}

// SetLabels replaces the session's labels; an empty list removes them.
func SetLabels(ctx context.Context, s Store, key Key, labels ...string) (Meta, error) {
	for _, l := range labels {
		if err := checkString("label", l); err != nil {
			return Meta{}, fmt.Errorf("recall: set labels of %s: %w", key, err)
		}
	}
	return Update(ctx, s, key, MetaChange{Labels: labels, SetLabels: true})
}

// checkString refuses text that is not valid UTF-8 before encoding/json
// would replace its bad bytes with U+FFFD; ValidateEntries refuses NULs.
func checkString(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalidItem, what, s)
	}
	return nil
}

// Update appends one meta entry to an existing session.
func Update(ctx context.Context, s Store, key Key, c MetaChange) (Meta, error) {
	if _, err := s.Stat(ctx, key); err != nil {
		return Meta{}, err
	}
	return appendChange(ctx, s, key, NewEntry(KindMeta, c))
}

func appendChange(ctx context.Context, s Store, key Key, e Entry) (Meta, error) {
	if _, err := s.Append(ctx, key, e); err != nil {
		return Meta{}, err
	}
	return s.Stat(ctx, key)
}
