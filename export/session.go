package export

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/recallkit/recall"
)

// Session is what the writers render: one session's metadata and whole
// log, and the subagent records under it.
type Session struct {
	// Meta is the session's metadata; Meta.Key names it.
	Meta recall.Meta
	// Entries is the session's whole log in Seq order, as the store
	// returned it: items removed, compacted away or damaged included.
	Entries []recall.Entry
	// Subagents are the records under the session (Key.Subpath set),
	// oldest first. A subagent record has none of its own.
	Subagents []*Session
}

// Load reads the session key (a main session, or one subagent record)
// from st: its metadata and log, as one snapshot, and, for a main
// session, every subagent record under it, archived ones included. A
// missing session is an error wrapping recall.ErrNotFound. It holds the
// whole log in memory: to write a session out, Stream does not.
func Load(ctx context.Context, st recall.Store, key recall.Key) (*Session, error) {
	m, entries, err := st.Load(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("export: load %s: %w", key, err)
	}
	s := &Session{Meta: m, Entries: entries}
	if !key.IsMain() {
		return s, nil
	}
	subs, err := subagents(ctx, st, key)
	if err != nil {
		return nil, err
	}
	for _, sm := range subs {
		m, entries, err := st.Load(ctx, sm.Key)
		if errors.Is(err, recall.ErrNotFound) {
			continue // removed since the listing
		}
		if err != nil {
			return nil, fmt.Errorf("export: load %s: %w", sm.Key, err)
		}
		s.Subagents = append(s.Subagents, &Session{Meta: m, Entries: entries})
	}
	return s, nil
}

// subagents lists the subagent records under the main session key,
// archived ones included, oldest first: the order the writers show them.
func subagents(ctx context.Context, st recall.Store, key recall.Key) ([]recall.Meta, error) {
	page, err := st.List(ctx, key.Project, recall.ListOptions{Parent: key.Session, Limit: -1, IncludeArchived: true})
	if err != nil {
		return nil, fmt.Errorf("export: subagents of %s: %w", key, err)
	}
	subs := page.Sessions
	slices.SortFunc(subs, func(a, b recall.Meta) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Key.Subpath, b.Key.Subpath))
	})
	return subs, nil
}

// Items returns the session's current view: the items the model gets,
// as recall.Replay derives them from the log.
func (s *Session) Items() []recall.LiveItem {
	_, live := recall.Replay(s.Meta.Key, s.Entries)
	return live
}

// Format is an export format.
type Format string

// The formats.
const (
	FormatMarkdown Format = "markdown"
	FormatHTML     Format = "html"
	FormatJSON     Format = "json"
	FormatJSONL    Format = "jsonl"
)

// Formats lists every format, in the order help texts name them.
var Formats = []Format{FormatMarkdown, FormatHTML, FormatJSON, FormatJSONL}

// ParseFormat returns the format name names ("md" is markdown), or an
// error wrapping ErrUnknownFormat.
func ParseFormat(name string) (Format, error) {
	switch f := Format(strings.ToLower(name)); f {
	case FormatMarkdown, FormatHTML, FormatJSON, FormatJSONL:
		return f, nil
	case "md":
		return FormatMarkdown, nil
	}
	return "", fmt.Errorf("%w %q: use markdown, html, json or jsonl", ErrUnknownFormat, name)
}

// Ext returns the file name extension of the format, dot included.
func (f Format) Ext() string {
	switch f {
	case FormatMarkdown:
		return ".md"
	case FormatHTML:
		return ".html"
	case FormatJSON:
		return ".json"
	}
	return ".jsonl"
}

// Write renders s in format f to w: the same bytes Stream writes for the
// session s was loaded from.
func Write(w io.Writer, f Format, s *Session) error {
	return render(context.Background(), w, f, memSource(s))
}
