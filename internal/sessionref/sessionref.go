// Package sessionref turns what a person types to name a session (a full
// ID, a unique ID prefix, "project/id", or an exact title) into the
// session's metadata, and computes the short IDs listings show so that
// typing one back resolves to the same session.
package sessionref

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/recallkit/recall"
)

// ErrAmbiguous reports a reference that matches more than one session.
// The error returned is an *AmbiguousError that wraps it.
var ErrAmbiguous = errors.New("ambiguous session reference")

// AmbiguousError lists the sessions a reference matched, newest first.
type AmbiguousError struct {
	Ref     string
	Matches []recall.Meta
}

// Error implements error: the reference and the first few sessions it
// matched, as "project/id" and title.
func (e *AmbiguousError) Error() string {
	var parts []string
	for i, m := range e.Matches {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Matches)-i))
			break
		}
		s := m.Key.String()
		if m.Title != "" {
			s += fmt.Sprintf(" (%q)", m.Title)
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%q matches %d sessions: %s", e.Ref, len(e.Matches), strings.Join(parts, ", "))
}

// Unwrap returns ErrAmbiguous.
func (e *AmbiguousError) Unwrap() error { return ErrAmbiguous }

// MinShortID is the shortest ID prefix ShortIDs returns: the 8 random
// hex characters a session ID (recall.NewSessionID) starts with.
const MinShortID = 8

// Resolve finds the one session ref names, among every session of the
// store, archived ones included. project is the caller's current project
// (may be empty); where a reference matches sessions in several projects,
// a single match in the current project wins. The rules, first match
// first:
//
//  1. ref is a session ID, or "project/id";
//  2. ref is a session's exact title;
//  3. ref is a prefix of session IDs.
//
// No match is an error wrapping recall.ErrNotFound; several are an
// *AmbiguousError.
func Resolve(ctx context.Context, s recall.Store, project, ref string) (recall.Meta, error) {
	if strings.TrimSpace(ref) == "" {
		return recall.Meta{}, fmt.Errorf("%w: empty session reference", recall.ErrInvalidKey)
	}
	all, err := All(ctx, s, "", true)
	if err != nil {
		return recall.Meta{}, err
	}
	return Match(all, project, ref)
}

// Match finds the one session ref names among metas by Resolve's rules,
// for a caller that chose the sessions itself (Resolve looks among every
// session of a store). project is the caller's current project: of
// several matches of one rule, a single one in project wins. ref must not
// be empty, as "" is a prefix of every ID. No match is an error wrapping
// recall.ErrNotFound; several are an *AmbiguousError, its Matches in the
// order of metas.
func Match(metas []recall.Meta, project, ref string) (recall.Meta, error) {
	rules := []func(recall.Meta) bool{
		func(m recall.Meta) bool { return m.Key.Session == ref || m.Key.String() == ref },
		func(m recall.Meta) bool { return m.Title != "" && m.Title == ref },
		func(m recall.Meta) bool { return strings.HasPrefix(m.Key.Session, ref) },
	}
	for _, rule := range rules {
		var matches []recall.Meta
		for _, m := range metas {
			if rule(m) {
				matches = append(matches, m)
			}
		}
		switch m, err := pick(ref, project, matches); {
		case err != nil:
			return recall.Meta{}, err
		case m != nil:
			return *m, nil
		}
	}
	return recall.Meta{}, notFoundError(ref)
}

// notFoundError is a reference that matches no session.
type notFoundError string

func (e notFoundError) Error() string { return fmt.Sprintf("no session matches %q", string(e)) }
func (e notFoundError) Unwrap() error { return recall.ErrNotFound }

// pick chooses among the matches of one rule: nil when there are none,
// the only one, or the only one in project.
func pick(ref, project string, matches []recall.Meta) (*recall.Meta, error) {
	switch len(matches) {
	case 0:
		return nil, nil
	case 1:
		return &matches[0], nil
	}
	i := slices.IndexFunc(matches, func(m recall.Meta) bool { return m.Key.Project == project })
	if i >= 0 && slices.IndexFunc(matches[i+1:], func(m recall.Meta) bool { return m.Key.Project == project }) < 0 {
		return &matches[i], nil
	}
	return nil, &AmbiguousError{Ref: ref, Matches: matches}
}

// All lists every main session of project (every project when empty),
// newest first, following the store's pages.
func All(ctx context.Context, s recall.Store, project string, archived bool) ([]recall.Meta, error) {
	var out []recall.Meta
	opts := recall.ListOptions{Limit: 1000, IncludeArchived: archived}
	for {
		p, err := s.List(ctx, project, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Sessions...)
		if p.Next == "" || len(p.Sessions) == 0 {
			return out, nil
		}
		opts.Cursor = p.Next
	}
}

// ShortIDs returns, for each ID, its shortest prefix of at least
// MinShortID bytes that no other ID of ids shares, so that the prefix
// resolves back to it among them; an ID listed twice is one ID. Session
// IDs start with 8 random hex characters, so their short IDs are those 8
// unless two sessions really share them. IDs made before that (UUIDv7,
// whose first bytes are a timestamp) need longer prefixes when sessions
// were created close together. The result is indexed like ids.
func ShortIDs(ids []string) []string {
	uniq := slices.Clone(ids)
	slices.Sort(uniq)
	uniq = slices.Compact(uniq)
	short := make(map[string]string, len(uniq))
	for j, id := range uniq {
		n := MinShortID
		if j > 0 {
			n = max(n, commonPrefix(id, uniq[j-1])+1)
		}
		if j+1 < len(uniq) {
			n = max(n, commonPrefix(id, uniq[j+1])+1)
		}
		if n < len(id) && id[n-1] == '-' {
			n++ // "019ad1f2-" reads as a typo; show the next digit too
		}
		short[id] = id[:min(n, len(id))]
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = short[id]
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
