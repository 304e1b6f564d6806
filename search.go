package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidQuery reports a search query that is empty or cannot be parsed
// (an unterminated quote, say).
var ErrInvalidQuery = errors.New("recall: invalid query")

// DefaultSearchLimit is the page size Search uses when SearchOptions.Limit
// is 0; MaxSearchLimit is the largest page it returns.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 1000
)

// Search roles: the role a hit's item is filed under (see SearchText).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleSystem    = "system"
	RoleTool      = "tool"
	// RoleTitle marks a hit on the session's title rather than an item.
	RoleTitle = "title"
)

// SearchOptions selects what Search looks for and which page it returns.
type SearchOptions struct {
	// Query is the text to find (see ParseQuery): words in any order, or
	// "quoted phrases"; case-insensitive; substrings match, so CJK text
	// without spaces is found.
	Query string
	// Project limits the search to one project. Default: every project.
	Project string
	// IncludeArchived searches archived sessions too. Default: they are
	// left out, as List leaves them out.
	IncludeArchived bool
	// Role keeps only hits of that role (RoleUser, RoleAssistant,
	// RoleSystem, RoleTool, RoleTitle). Default: every role.
	Role string
	// Since and Until keep only items written at or after Since and
	// before Until (the time of the entry that holds the item). Zero
	// means unbounded. A title hit carries the session's Updated time.
	Since, Until time.Time
	// WholeLog searches every item the log ever held: removed, popped,
	// cleared and compacted-away items too. Default: only the live view
	// (what Items returns) and the title.
	WholeLog bool
	// Limit is the page size. Default (0): DefaultSearchLimit; at most
	// MaxSearchLimit.
	Limit int
	// Cursor continues from a previous SearchPage.Next.
	Cursor string
}

// Span is a byte range [Start, End) of a snippet that matched the query.
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Hit is one item (or title) that matched a search.
type Hit struct {
	Key Key `json:"key"`
	// Title is the session's current title, on item hits too.
	Title string `json:"title,omitempty"`
	// Ref names the item: the item entry's seq, or a compaction entry's
	// seq and the index of its item. A title hit has the zero Ref.
	Ref  ItemRef   `json:"ref"`
	Role string    `json:"role"`
	Time time.Time `json:"time"`
	// Snippet is a short excerpt of the item's text around the first
	// match, on one line; Matches are the byte ranges in it that matched.
	Snippet string `json:"snippet"`
	Matches []Span `json:"matches,omitempty"`
	// Rank is how well the item matched, higher first; it compares hits
	// of one search only, and each store computes it its own way.
	Rank float64 `json:"rank"`
}

// SearchPage is one page of hits, newest first (by Time, then Key, then
// Ref, all descending, so pages are stable while sessions grow).
type SearchPage struct {
	Hits []Hit `json:"hits"`
	// Next is the cursor of the following page, or "" on the last one.
	Next string `json:"next,omitempty"`
}

// Searcher is implemented by a store that searches natively, with an
// index. Search uses it when the store has it and scans every session's
// log when it does not, so every store can be searched. A Searcher must
// return exactly the hits the scan would (the same Query semantics and
// SearchText), in the same order; only Rank and the snippet's cut may
// differ. storetest checks it.
//
// The pieces of the scan are exported so a Searcher need not rewrite
// them: CheckSearchOptions, ParseQuery and Query.Match, NormalizeText and
// SearchText for what is indexed, SessionHits for the hits of one log,
// MakeSnippet, CompareHits for the order, SearchOptions.PageSize, and
// SearchCursor for the paging (HitCursor, ParseSearchCursor, After).
type Searcher interface {
	Search(ctx context.Context, opts SearchOptions) (SearchPage, error)
}

// SearchIndexer is an optional ability of a Searcher that keeps an index
// it brings up to date before it answers. IndexSearch does that work now,
// for every session, so that a caller that just wrote much (an import)
// can pay for it, with progress, rather than the next Search in silence.
// progress, when not nil, is called with how many of the sessions to
// index are done, of total: first with 0, then after each. A store
// without it has nothing to prepare; callers skip the step.
type SearchIndexer interface {
	IndexSearch(ctx context.Context, progress func(done, total int)) error
}

// Query is a parsed search query: every term must occur in the text, in
// any order.
type Query struct {
	// Terms are the words and phrases, normalized (see NormalizeText).
	Terms []string
}

// ParseQuery splits q into terms: runs of text separated by white space,
// and "double-quoted phrases" whose inner white space is kept as one
// space. Terms are normalized with NormalizeText. A query with no term, or
// an unterminated quote, is an error wrapping ErrInvalidQuery.
func ParseQuery(q string) (Query, error) {
	var out Query
	rest := q
	for {
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			break
		}
		var term string
		if rest[0] == '"' {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return Query{}, fmt.Errorf("%w: unterminated quote in %q", ErrInvalidQuery, q)
			}
			term, rest = rest[1:1+end], rest[2+end:]
		} else {
			end := strings.IndexFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
			if end < 0 {
				end = len(rest)
			}
			term, rest = rest[:end], rest[end:]
		}
		if term = NormalizeText(term); term != "" {
			out.Terms = append(out.Terms, term)
		}
	}
	if len(out.Terms) == 0 {
		return Query{}, fmt.Errorf("%w: %q has no words", ErrInvalidQuery, q)
	}
	return out, nil
}

// Match reports whether every term occurs in text, which must already be
// normalized with NormalizeText.
func (q Query) Match(normalized string) bool {
	for _, t := range q.Terms {
		if !strings.Contains(normalized, t) {
			return false
		}
	}
	return len(q.Terms) > 0
}

// NormalizeText is the form both the searched text and the query terms
// take before they are compared: lower case (Unicode simple folding, as
// strings.ToLower), invalid UTF-8 replaced, and every run of white space
// (including line breaks) one ASCII space, trimmed. Indexes store text in
// this form and match terms as substrings of it.
func NormalizeText(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ToLower(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// SearchText returns the role an item is filed under and the text of it a
// person reads, which is what search looks at: a message's text parts
// (input_text, output_text, text, refusal) under its role ("developer"
// counts as RoleSystem); a tool call's name and arguments (or input) and
// a tool output's text, under RoleTool; a reasoning item's summary and
// content text, under RoleAssistant. Encrypted reasoning, images, files
// and audio are not text and are left out. An item with no such text
// returns "" (it is never a hit). The text is not normalized.
func SearchText(it Item) (role, text string) {
	var m struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		Summary   json.RawMessage `json:"summary"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Input     json.RawMessage `json:"input"`
		Output    json.RawMessage `json:"output"`
		Action    json.RawMessage `json:"action"`
	}
	if json.Unmarshal(it, &m) != nil {
		return "", ""
	}
	var b strings.Builder
	add := func(s string) {
		if s = strings.TrimSpace(s); s == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	switch {
	case m.Type == "message" || m.Type == "" && m.Role != "":
		role = m.Role
		switch role {
		case "developer":
			role = RoleSystem
		case RoleUser, RoleAssistant, RoleSystem:
		default:
			role = RoleAssistant
		}
		textParts(m.Content, add)
	case m.Type == "reasoning":
		role = RoleAssistant
		textParts(m.Summary, add)
		textParts(m.Content, add)
	case strings.HasSuffix(m.Type, "_output"):
		role = RoleTool
		textParts(m.Output, add)
	case strings.HasSuffix(m.Type, "_call"):
		role = RoleTool
		add(m.Name)
		add(m.Arguments)
		if s, ok := jsonString(m.Input); ok {
			add(s)
		} else if len(m.Input) > 0 {
			add(string(m.Input))
		}
		if len(m.Action) > 0 && m.Action[0] == '{' {
			add(string(m.Action))
		}
	default:
		return "", ""
	}
	return role, b.String()
}

// textParts calls add with the text of raw: a JSON string, or an array of
// parts whose text-like fields are strings. Image, file and audio parts
// carry no text field and add nothing.
func textParts(raw json.RawMessage, add func(string)) {
	if s, ok := jsonString(raw); ok {
		add(s)
		return
	}
	var parts []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return
	}
	for _, p := range parts {
		add(p.Text)
		add(p.Refusal)
	}
}

func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// Search finds the items and titles that match opts.Query, one page at a
// time, newest first. It uses the store's own index when the store is a
// Searcher, and otherwise scans every matching session's log (see
// SearchOptions for what is searched). A bad query or option is an error
// wrapping ErrInvalidQuery.
func Search(ctx context.Context, s Store, opts SearchOptions) (SearchPage, error) {
	if err := CheckSearchOptions(opts); err != nil {
		return SearchPage{}, err
	}
	if se, ok := As[Searcher](s); ok {
		return se.Search(ctx, opts)
	}
	return ScanSearch(ctx, s, opts)
}

// CheckSearchOptions validates opts as Search does before it searches.
func CheckSearchOptions(opts SearchOptions) error {
	if _, err := ParseQuery(opts.Query); err != nil {
		return err
	}
	switch opts.Role {
	case "", RoleUser, RoleAssistant, RoleSystem, RoleTool, RoleTitle:
	default:
		return fmt.Errorf("%w: unknown role %q (want user, assistant, system, tool or title)", ErrInvalidQuery, opts.Role)
	}
	if opts.Limit < 0 || opts.Limit > MaxSearchLimit {
		return fmt.Errorf("%w: limit %d is not between 0 and %d", ErrInvalidQuery, opts.Limit, MaxSearchLimit)
	}
	if !opts.Since.IsZero() && !opts.Until.IsZero() && !opts.Until.After(opts.Since) {
		return fmt.Errorf("%w: until %s is not after since %s", ErrInvalidQuery, opts.Until, opts.Since)
	}
	if opts.Project != "" {
		if err := (Key{Project: opts.Project, Session: "x"}).Validate(); err != nil {
			return err
		}
	}
	if opts.Cursor != "" {
		if _, err := ParseSearchCursor(opts.Cursor); err != nil {
			return err
		}
	}
	return nil
}
