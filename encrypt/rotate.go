package encrypt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/recallkit/recall"
)

// KindRewrap is the kind of the entry Rotate appends to a session: the
// session's data keys wrapped under the new key. Readers that do not know
// it skip it (recall.Replay does): it moves neither the view nor Updated.
const KindRewrap recall.Kind = "rewrap"

// rewrap is the payload of a KindRewrap entry.
type rewrap struct {
	// KID is the key the data keys are wrapped under now.
	KID  string      `json:"kid"`
	Keys []rewrapKey `json:"keys"`
}

// rewrapKey is one data key wrapped again: From names the wrapping the
// sealed payloads carry (wrapID), DEK is the new one.
type rewrapKey struct {
	From string `json:"from"`
	DEK  string `json:"dek"`
}

// rewrapScan is what Store has read of a session's rewrap entries: for
// each wrapping named by wrapID, the new ones (KEK ID, wrapped key), up
// to seq after.
type rewrapScan struct {
	after int64
	to    map[string][][2]string
}

// rewrapped finds a rewrap of the data key (kid, wrapped) of key under a
// key of ring, reading the session's rewrap entries it has not read yet.
func (s *Store) rewrapped(ctx context.Context, key recall.Key, ring Keyring, kid, wrapped string) (string, string, bool, error) {
	id := wrapID(kid, wrapped)
	look := func(sc *rewrapScan) (string, string, bool) {
		for _, t := range sc.to[id] {
			if _, ok := ring.find(t[0]); ok {
				return t[0], t[1], true
			}
		}
		return "", "", false
	}
	s.mu.Lock()
	sc := s.rewraps[key]
	if sc == nil {
		sc = &rewrapScan{to: map[string][][2]string{}}
		if len(s.rewraps) >= cacheMax {
			clear(s.rewraps)
		}
		s.rewraps[key] = sc
	}
	k, w, ok := look(sc)
	after := sc.after
	s.mu.Unlock()
	if ok {
		return k, w, true, nil
	}
	found := map[string][][2]string{}
	for {
		entries, err := s.inner.Entries(ctx, key, after, 1024)
		if err != nil && !errors.Is(err, recall.ErrNotFound) {
			return "", "", false, err
		}
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			after = e.Seq
			var r rewrap
			if e.Kind != KindRewrap || json.Unmarshal(e.Data, &r) != nil {
				continue
			}
			for _, rk := range r.Keys {
				found[rk.From] = append(found[rk.From], [2]string{r.KID, rk.DEK})
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if after > sc.after {
		for from, to := range found {
			sc.to[from] = append(sc.to[from], to...)
		}
		sc.after = after
	}
	k, w, ok = look(sc)
	return k, w, ok, nil
}

// RotateReport is what Rotate did.
type RotateReport struct {
	// Sessions counts the sessions and subagent records read.
	Sessions int `json:"sessions"`
	// Rewrapped counts those that got a rewrap entry; DataKeys, the data
	// keys wrapped again.
	Rewrapped int `json:"rewrapped"`
	DataKeys  int `json:"data_keys"`
	// Current counts those whose data keys were all wrapped under the
	// current key already (by a write or an earlier rotation).
	Current int `json:"current"`
	// Failed lists the sessions that could not be rotated, with why.
	Failed []RotateFailure `json:"failed,omitempty"`
}

// RotateFailure is a session Rotate could not rotate.
type RotateFailure struct {
	Key   recall.Key `json:"key"`
	Error string     `json:"error"`
}

// Rotate wraps the data keys of every session of st, a store Wrap
// returned (every project, main
// sessions and subagent records) under each project's current key,
// without rewriting any log: for each session (those in the trash too,
// which a restore brings back) whose sealed payloads name
// another key, it appends one KindRewrap entry holding its data keys
// wrapped under the current key. The keyring must hold the old keys too
// (Keyring.Old) while Rotate runs; afterwards the old keys open nothing
// that the current key does not, and can be destroyed.
//
// Rotate is resumable: a session already rotated gets nothing, so running
// it again after an interruption, or after writers still using an old
// key have stopped, finishes the job. A session that fails is reported
// in RotateReport.Failed and the others go on; the error is ctx's, or
// one of listing the sessions. progress, when not nil, is called after
// each session.
func Rotate(ctx context.Context, st recall.Store, progress func(recall.Key)) (RotateReport, error) {
	var rep RotateReport
	s, ok := Of(st)
	if !ok {
		return rep, fmt.Errorf("encrypt: rotate: %T is not an encrypted store", st)
	}
	opts := recall.ListOptions{Limit: 500, IncludeArchived: true}
	for {
		page, err := s.inner.List(ctx, "", opts)
		if err != nil {
			return rep, fmt.Errorf("encrypt: rotate: %w", err)
		}
		for _, m := range page.Sessions {
			keys := []recall.Key{m.Key}
			subs, err := s.inner.List(ctx, m.Key.Project, recall.ListOptions{Parent: m.Key.Session, Limit: -1, IncludeArchived: true})
			if err != nil && !errors.Is(err, recall.ErrNotFound) {
				return rep, fmt.Errorf("encrypt: rotate: %w", err)
			}
			for _, sm := range subs.Sessions {
				keys = append(keys, sm.Key)
			}
			for _, key := range keys {
				if err := ctx.Err(); err != nil {
					return rep, err
				}
				n, err := s.rotateSession(ctx, key)
				rep.Sessions++
				switch {
				case err != nil:
					rep.Failed = append(rep.Failed, RotateFailure{Key: key, Error: err.Error()})
				case n == 0:
					rep.Current++
				default:
					rep.Rewrapped++
					rep.DataKeys += n
				}
				if progress != nil {
					progress(key)
				}
			}
		}
		if page.Next == "" && opts.Trashed {
			return rep, nil
		}
		if opts.Cursor = page.Next; opts.Cursor == "" {
			opts.Trashed = true // then the sessions in the trash, restorable
		}
	}
}

// rotateSession rotates one session and returns the number of data keys
// it wrapped again. A write that moved the session meanwhile makes it
// read the session again.
func (s *Store) rotateSession(ctx context.Context, key recall.Key) (int, error) {
	for range 4 {
		n, err := s.rotateOnce(ctx, key)
		if !errors.Is(err, recall.ErrConflict) {
			return n, err
		}
	}
	return 0, fmt.Errorf("encrypt: rotate %s: the session kept changing", key)
}

func (s *Store) rotateOnce(ctx context.Context, key recall.Key) (int, error) {
	ring, err := s.keyring(ctx, key.Project)
	if err != nil {
		return 0, err
	}
	if ring.Current.IsZero() {
		return 0, fmt.Errorf("%w: project %s has no current key", ErrNoKey, key.Project)
	}
	// The wrappings the session's sealed payloads carry, and those a
	// rotation to the current key already added.
	type wrapping struct{ kid, wrapped string }
	var need []wrapping
	seen := map[string]bool{}
	done := map[string]bool{}
	var last int64
	add := func(kid, wrapped string) {
		if id := wrapID(kid, wrapped); kid != ring.Current.id && !seen[id] {
			seen[id] = true
			need = append(need, wrapping{kid, wrapped})
		}
	}
	for {
		entries, err := s.inner.Entries(ctx, key, last, 1024)
		if err != nil {
			return 0, err
		}
		if len(entries) == 0 {
			break
		}
		for _, e := range entries {
			last = e.Seq
			sealedWrappings(e, add)
			var r rewrap
			if e.Kind == KindRewrap && json.Unmarshal(e.Data, &r) == nil && r.KID == ring.Current.id {
				for _, k := range r.Keys {
					done[k.From] = true
				}
			}
		}
	}
	var out rewrap
	out.KID = ring.Current.id
	for _, w := range need {
		id := wrapID(w.kid, w.wrapped)
		if done[id] {
			continue
		}
		wrapped := w.wrapped
		kek, ok := ring.find(w.kid)
		if !ok {
			kid2, wrapped2, found, err := s.rewrapped(ctx, key, ring, w.kid, w.wrapped)
			if err != nil {
				return 0, err
			}
			if !found {
				return 0, fmt.Errorf("%w: %s has data sealed under key %s; the keys given are %s (pass the old key too)", ErrWrongKey, key, w.kid, ring.ids())
			}
			kek, _ = ring.find(kid2)
			wrapped = wrapped2
		}
		dek, err := unwrapDataKey(kek, key, wrapped)
		if err != nil {
			return 0, fmt.Errorf("encrypt: %w", err)
		}
		out.Keys = append(out.Keys, rewrapKey{From: id, DEK: b64.EncodeToString(seal(newGCM(ring.Current.secret), dek, assoc("dek", key)))})
	}
	if len(out.Keys) == 0 {
		return 0, nil
	}
	if _, err := s.inner.Append(ctx, key, recall.IfLastSeq(last), recall.NewEntry(KindRewrap, out)); err != nil {
		return 0, err
	}
	return len(out.Keys), nil
}

// sealedWrappings calls add with the KEK ID and wrapped data key of every
// sealed payload of e.
func sealedWrappings(e recall.Entry, add func(kid, wrapped string)) {
	item := func(it []byte) {
		if s, ok, _ := parseSealedItem(it); ok {
			add(s.KID, s.DEK)
		}
	}
	switch e.Kind {
	case recall.KindItem:
		item(e.Data)
	case recall.KindTitle:
		var t recall.TitleChange
		if json.Unmarshal(e.Data, &t) == nil {
			if kid, dek, _, ok := parseSealedTitle(t.Title); ok {
				add(kid, dek)
			}
		}
	case recall.KindCompaction:
		var c recall.Compaction
		if json.Unmarshal(e.Data, &c) == nil {
			for _, it := range c.Items {
				item(it)
			}
		}
	}
}
