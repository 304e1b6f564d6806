package recall

import (
	"context"
	"errors"
	"fmt"
)

// Trash moves the session to the trash and returns its metadata: it
// appends a meta entry that sets Meta.Trashed to the entry's time, so the
// session leaves every List (but a listing of the trash,
// ListOptions.Trashed) and every Search, while its log, subagent records
// and everything Meta holds stay as they were. Restore brings it back;
// EmptyTrash, or Store.Remove, deletes it. A session that does not exist
// or is in the trash already is ErrNotFound; a key with a Subpath is
// ErrInvalidKey (a subagent record goes with its session). The check and
// the write are one atomic step.
func (s *StoreSession) Trash(ctx context.Context) (Meta, error) {
	return s.setTrashed(ctx, true)
}

// Restore takes the session out of the trash, by appending a meta entry
// that clears Meta.Trashed, and returns its metadata. Restored, the
// session is what it was before Trash: the same items, entries, title,
// metadata, pins, labels and subagent records; its log holds two more
// meta entries (the trash and the restore), so only LastSeq has moved. A
// session that is not in the trash is ErrNotFound.
func (s *StoreSession) Restore(ctx context.Context) (Meta, error) {
	return s.setTrashed(ctx, false)
}

func (s *StoreSession) setTrashed(ctx context.Context, on bool) (Meta, error) {
	st, key := s.store, s.key
	op := "trash"
	if !on {
		op = "restore"
	}
	if err := key.Validate(); err != nil {
		return Meta{}, fmt.Errorf("recall: %s %s: %w", op, key, err)
	}
	if !key.IsMain() {
		return Meta{}, fmt.Errorf("recall: %s %s: %w: a subagent record goes with its session", op, key, ErrInvalidKey)
	}
	e := NewEntry(KindMeta, MetaChange{Trashed: &on})
	for range maxGuardRetries {
		m, err := st.Stat(ctx, key)
		if err != nil {
			return Meta{}, err
		}
		if m.Trashed.IsZero() == on {
			_, err = st.Append(ctx, key, IfLastSeq(m.LastSeq), e)
			if errors.Is(err, ErrConflict) {
				continue // written meanwhile: look again
			}
			if err != nil {
				return Meta{}, err
			}
			return st.Stat(ctx, key)
		}
		if on {
			return Meta{}, fmt.Errorf("recall: trash %s: %w: it is in the trash already", key, ErrNotFound)
		}
		return Meta{}, fmt.Errorf("recall: restore %s: %w: it is not in the trash", key, ErrNotFound)
	}
	return Meta{}, fmt.Errorf("recall: %s %s: %w: the session kept changing", op, key, ErrConflict)
}

// EmptyTrash deletes for good (Store.Remove) every session that was
// moved to the trash before opts.OlderThan (the zero time deletes nothing;
// time.Now() empties the trash) in opts.Project (default: every project), with its subagent records,
// except pinned ones (a pin holds a session, in the trash too; Store.Remove
// deletes one), and reports what it deleted, or would delete when
// opts.DryRun, in List order. Each session is looked at again just before
// it is deleted, so one restored meanwhile stays; one restored in the
// instant between that look and the delete is deleted all the same.
func EmptyTrash(ctx context.Context, s Store, opts CleanupOptions) (CleanupReport, error) {
	var rep CleanupReport
	if opts.OlderThan.IsZero() {
		return rep, nil
	}
	metas, err := list(ctx, s, opts.Project, ListOptions{Trashed: true})
	if err != nil {
		return rep, fmt.Errorf("recall: empty trash: %w", err)
	}
	for _, m := range metas {
		if !m.Trashed.Before(opts.OlderThan) {
			continue
		}
		if m.Pinned {
			rep.Kept++
			continue
		}
		if !opts.DryRun {
			now, err := s.Stat(ctx, m.Key)
			if errors.Is(err, ErrNotFound) || err == nil && !now.Trashed.Equal(m.Trashed) {
				continue // deleted or restored meanwhile
			}
			if err == nil {
				err = s.Remove(ctx, m.Key)
			}
			if errors.Is(err, ErrNotFound) {
				continue
			}
			if err != nil {
				return rep, fmt.Errorf("recall: empty trash: %w", err)
			}
		}
		rep.Removed = append(rep.Removed, m)
	}
	return rep, nil
}
