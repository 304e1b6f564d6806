package search

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/recallkit/recall"
)

// Indexer is an optional ability of a recall.Searcher that keeps an index
// it brings up to date before it answers. IndexSearch does that work now,
// for every session, so that a caller that just wrote much (an import)
// can pay for it, with progress, rather than the next recall.Search in silence.
// progress, when not nil, is called with how many of the sessions to
// index are done, of total: first with 0, then after each. A store
// without it has nothing to prepare; callers skip the step.
type Indexer interface {
	IndexSearch(ctx context.Context, progress func(done, total int)) error
}

// Query is a parsed search query: every term must occur in the text, in
// any order.
type Query struct {
	// Terms are the words and phrases, normalized (see Normalize).
	Terms []string
}

// Parse splits q into terms: runs of text separated by white space,
// and "double-quoted phrases" whose inner white space is kept as one
// space. Terms are normalized with Normalize. A query with no term, or
// an unterminated quote, is an error wrapping recall.ErrInvalidQuery.
func Parse(q string) (Query, error) {
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
				return Query{}, fmt.Errorf("%w: unterminated quote in %q", recall.ErrInvalidQuery, q)
			}
			term, rest = rest[1:1+end], rest[2+end:]
		} else {
			end := strings.IndexFunc(rest, func(r rune) bool { return unicode.IsSpace(r) || r == '"' })
			if end < 0 {
				end = len(rest)
			}
			term, rest = rest[:end], rest[end:]
		}
		if term = Normalize(term); term != "" {
			out.Terms = append(out.Terms, term)
		}
	}
	if len(out.Terms) == 0 {
		return Query{}, fmt.Errorf("%w: %q has no words", recall.ErrInvalidQuery, q)
	}
	return out, nil
}

// Match reports whether every term occurs in text, which must already be
// normalized with Normalize.
func (q Query) Match(normalized string) bool {
	for _, t := range q.Terms {
		if !strings.Contains(normalized, t) {
			return false
		}
	}
	return len(q.Terms) > 0
}

// Normalize is the form both the searched text and the query terms
// take before they are compared: lower case (Unicode simple folding, as
// strings.ToLower), invalid UTF-8 replaced, and every run of white space
// (including line breaks) one ASCII space, trimmed. Indexes store text in
// this form and match terms as substrings of it.
func Normalize(s string) string {
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

// Text returns the role an item is filed under and the text of it a
// person reads, which is what search looks at: a message's text parts
// (input_text, output_text, text, refusal) under its role ("developer"
// counts as recall.RoleSystem); a tool call's name and arguments (or input) and
// a tool output's text, under recall.RoleTool; a reasoning item's summary and
// content text, under recall.RoleAssistant. Encrypted reasoning, images, files
// and audio are not text and are left out. An item with no such text
// returns "" (it is never a hit). The text is not normalized.
func Text(it recall.Item) (role, text string) {
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
			role = recall.RoleSystem
		case recall.RoleUser, recall.RoleAssistant, recall.RoleSystem:
		default:
			role = recall.RoleAssistant
		}
		textParts(m.Content, add)
	case m.Type == "reasoning":
		role = recall.RoleAssistant
		textParts(m.Summary, add)
		textParts(m.Content, add)
	case strings.HasSuffix(m.Type, "_output"):
		role = recall.RoleTool
		textParts(m.Output, add)
	case strings.HasSuffix(m.Type, "_call"):
		role = recall.RoleTool
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

// Check validates opts as every recall.Searcher does before it searches:
// a bad query or option is an error wrapping recall.ErrInvalidQuery.
func Check(opts recall.SearchOptions) error {
	if _, err := Parse(opts.Query); err != nil {
		return err
	}
	switch opts.Role {
	case "", recall.RoleUser, recall.RoleAssistant, recall.RoleSystem, recall.RoleTool, recall.RoleTitle:
	default:
		return fmt.Errorf("%w: unknown role %q (want user, assistant, system, tool or title)", recall.ErrInvalidQuery, opts.Role)
	}
	if opts.Limit < 0 || opts.Limit > recall.MaxSearchLimit {
		return fmt.Errorf("%w: limit %d is not between 0 and %d", recall.ErrInvalidQuery, opts.Limit, recall.MaxSearchLimit)
	}
	if !opts.Since.IsZero() && !opts.Until.IsZero() && !opts.Until.After(opts.Since) {
		return fmt.Errorf("%w: until %s is not after since %s", recall.ErrInvalidQuery, opts.Until, opts.Since)
	}
	if opts.Project != "" {
		if err := (recall.Key{Project: opts.Project, Session: "x"}).Validate(); err != nil {
			return err
		}
	}
	if opts.Cursor != "" {
		if _, err := ParseCursor(opts.Cursor); err != nil {
			return err
		}
	}
	return nil
}
