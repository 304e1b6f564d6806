package recallmcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/pagefilter"
	"github.com/recallkit/recall/internal/sessionref"
)

// errBadArgument reports a tool argument the tool cannot use; the message
// says what it takes.
var errBadArgument = errors.New("bad argument")

// badArg returns a tool error for a bad argument.
func badArg(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errBadArgument}, args...)...)
}

// limitArg checks a tool's limit argument, which takes 1 to most, and
// returns the limit to use: def when the argument is left out (0).
func limitArg(limit, def, most int) (int, error) {
	if limit < 0 || limit > most {
		return 0, badArg("limit %d: take 1 to %d", limit, most)
	}
	return cmpOr(limit, def), nil
}

// scope turns a tool's project argument into the project to read: ""
// means every project (of those Options.Projects accepts). An empty
// argument is the default project; "all" every project the server may
// see. An OnlyProject server without a project sees nothing: it returns
// ErrOutOfScope whatever the argument, as does a project Options.Projects
// refuses.
func (s *server) scope(arg string) (string, error) {
	arg = strings.TrimSpace(arg)
	switch {
	case s.opts.OnlyProject && (arg == "" || arg == AllProjects || arg == s.opts.Project):
		if s.opts.Project == "" {
			return "", ErrOutOfScope
		}
		return s.opts.Project, nil
	case s.opts.OnlyProject:
		return "", fmt.Errorf("%w: project %q (this server serves only project %q)", ErrOutOfScope, arg, s.opts.Project)
	case arg == "":
		return s.opts.Project, nil
	case arg == AllProjects:
		return "", nil
	}
	if err := (recall.Key{Project: arg, Session: "x"}).Validate(); err != nil {
		return "", badArg("project %q is not a project key (use one a listing shows, or \"all\"): %v", arg, err)
	}
	if s.opts.Projects != nil && !s.opts.Projects(arg) {
		return "", fmt.Errorf("%w: project %q", ErrOutOfScope, arg)
	}
	return arg, nil
}

// visible reports whether the server may show the session key.
func (s *server) visible(key recall.Key) bool {
	return (!s.opts.OnlyProject || key.Project == s.opts.Project) && (s.opts.Projects == nil || s.opts.Projects(key.Project))
}

// keep is the filter of the sessions a listing or a search of source
// shows: those of source (every source for "") the server may see; nil
// when it would keep every one.
func (s *server) keep(source string) pagefilter.Keep {
	of := pagefilter.OfSource(source)
	if s.opts.Projects == nil {
		return of
	}
	return func(m recall.Meta) bool { return s.visible(m.Key) && (of == nil || of(m)) }
}

// resolve finds the one session ref names among the sessions the server
// may see, archived ones included: a full ID, "project/id", an exact
// title, or a unique ID prefix, in that order, as the CLI resolves them
// (sessionref.Resolve; sessionref.Match among the sessions of the one
// project a server of OnlyProject serves, or among those of the projects
// Options.Projects accepts). Where a reference matches
// sessions in several projects, the one in the default project wins.
func (s *server) resolve(ctx context.Context, ref string) (recall.Meta, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return recall.Meta{}, badArg("id is empty: pass a session ID or a unique prefix of one")
	}
	if !s.opts.OnlyProject && s.opts.Projects == nil {
		m, err := sessionref.Resolve(ctx, s.st, s.opts.Project, ref)
		return m, refError(ref, err)
	}
	project := s.opts.Project
	if !s.opts.OnlyProject {
		if m, ok := s.exact(ctx, ref); ok {
			return m, nil
		}
		project = "" // every project, of which only those visible are kept
	}
	all, err := sessionref.All(ctx, s.st, project, true)
	if err != nil {
		return recall.Meta{}, err
	}
	all = slices.DeleteFunc(all, func(m recall.Meta) bool { return !s.visible(m.Key) })
	m, err := sessionref.Match(all, s.opts.Project, ref)
	return m, refError(ref, err)
}

// exact finds the session of a reference that is a full ID in the
// default project, or "project/id" of a visible project, without listing
// any project.
func (s *server) exact(ctx context.Context, ref string) (recall.Meta, bool) {
	key := recall.Key{Project: s.opts.Project, Session: ref}
	if p, id, ok := strings.Cut(ref, "/"); ok {
		key = recall.Key{Project: p, Session: id}
	}
	if key.Validate() != nil || !s.visible(key) {
		return recall.Meta{}, false
	}
	m, err := s.st.Stat(ctx, key)
	return m, err == nil
}

// refError explains a failed session reference to a model.
func refError(ref string, err error) error {
	var amb *sessionref.AmbiguousError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &amb):
		var ids []string
		for i, m := range amb.Matches {
			if i == 5 {
				ids = append(ids, "…")
				break
			}
			ids = append(ids, m.Key.Session)
		}
		return fmt.Errorf("id %q matches %d sessions (%s); pass more of the ID: %w", ref, len(amb.Matches), strings.Join(ids, ", "), sessionref.ErrAmbiguous)
	case errors.Is(err, recall.ErrNotFound):
		return fmt.Errorf("no session %q: %w; list_sessions or search_sessions show the IDs", ref, recall.ErrNotFound)
	}
	return err
}
