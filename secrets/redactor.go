// Package secrets finds secrets (API keys, tokens, private keys, passwords
// in connection strings...) in conversation items before they are stored,
// and replaces each with a marker naming the rule that found it:
//
//	export AWS_ACCESS_KEY_ID=[REDACTED:aws-access-token]
//
// A Redactor redacts one item, title or string and reports what it
// redacted (rule and count, never the secret). NewStore wraps a
// recall.Store so that every item, title and compaction written through
// Append or Import is redacted first: a secret never reaches the store,
// its index or a replica. `recall import` does this by default; a home,
// a store URL (?redact=1, see storeurl) and `recall serve` can turn it on.
//
// # Detection
//
// The rules are gitleaks' (github.com/zricethezav/gitleaks/v8): some 220
// maintained regular expressions for the secrets of known providers
// (AWS, GCP, Azure, GitHub, GitLab, Slack, Stripe, OpenAI, Anthropic...),
// PEM private keys, JWTs and generic "password = ..." assignments, each
// with its allowlists (documentation placeholders such as AWS's
// AKIAIOSFODNN7EXAMPLE are not secrets) and entropy threshold. Keeping
// the rules up to date is gitleaks' work, done for the whole field; a
// hand-kept list here would age. Marker names are gitleaks' rule ids.
//
// Cost: one Aho-Corasick pass over the text finds the rules' keywords,
// and only the rules whose keywords occur run, as gitleaks' own prefilter
// does; the rules whose keywords are common words (key, token, "ey")
// run only where their keyword is followed by what their expression
// needs (see detector). An ordinary item costs tens of microseconds a
// kilobyte; an item with a candidate secret costs a few hundred more.
//
// gitleaks does not look for a password in a URL's user info
// (postgres://user:pass@host), which agents print often; Redactor adds a
// rule of its own for it, "url-password", which redacts the password and
// keeps the rest of the URL. Options.Patterns adds the user's own rules.
//
// # What is redacted
//
// Items are JSON; redaction keeps them valid JSON of the same shape. It
// walks the item and changes string values only, never keys, types or
// structure, and unknown fields are kept as they are: message text,
// function_call arguments, function_call_output output, reasoning
// summaries. A string that holds JSON (function_call arguments do) is
// walked the same way, so it stays valid JSON, and its text as a whole is
// scanned too, so a rule that needs its key ("api_key": "...") sees it.
// A reasoning item's encrypted_content is ciphertext and is left alone. An
// item with nothing to redact keeps its bytes exactly.
package secrets

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ErrInvalidPattern reports a user pattern that has no name or does not
// compile.
var ErrInvalidPattern = errors.New("secrets: invalid pattern")

// Pattern is a rule of the user's own: every match of Regexp is replaced
// by [REDACTED:Name]. When Regexp has a capturing group, only the first
// group's text is replaced (password=(\S+) keeps "password=").
type Pattern struct {
	Name   string
	Regexp string
}

// Options configure a Redactor. The zero value uses the default rules.
type Options struct {
	// Patterns are added to the default rules. Default: none.
	Patterns []Pattern
}

// Redactor finds and replaces secrets. It is safe for concurrent use.
type Redactor struct {
	patterns []pattern
}

type pattern struct {
	name string
	re   *regexp.Regexp
	// literal, when set, is a string every match holds: a text without it
	// is not scanned.
	literal string
	// placeholder, when set, tells a match that is not a secret.
	placeholder func(string) bool
}

// minSecret is the shortest match of gitleaks' rules that is replaced: a
// shorter one would more likely cut ordinary text than hide a secret.
// A user's pattern says itself what it matches; an empty match is not
// replaced.
const minSecret = 6

// urlPassword finds the password of a URL's user info:
// scheme://user:PASSWORD@host. The password is the first group.
var urlPassword = pattern{
	name:    "url-password",
	literal: "://",
	re:      regexp.MustCompile(`\b[a-zA-Z][a-zA-Z0-9+.-]{1,30}://[^\s:/@"'<>]{0,128}:([^\s/@"'<>]{4,256})@[a-zA-Z0-9\[]`),
	placeholder: func(pw string) bool {
		switch {
		case strings.ContainsAny(pw[:1], "$%{<"): // ${PGPASSWORD}, %(pw)s, {password}, <password>
			return true
		case strings.Trim(pw, "*xX.") == "": // ***, xxxxx (a password already masked)
			return true
		}
		switch strings.ToLower(pw) {
		case "password", "passwd", "pass", "pwd", "secret":
			return true
		}
		return false
	},
}

// New returns a Redactor with gitleaks' default rules, the url-password
// rule and opts.Patterns. A pattern that has no name or does not compile
// is an error wrapping ErrInvalidPattern.
func New(opts Options) (*Redactor, error) {
	if _, err := defaultDetector(); err != nil {
		return nil, err
	}
	r := &Redactor{patterns: []pattern{urlPassword}}
	for _, p := range opts.Patterns {
		if p.Name == "" || strings.ContainsAny(p.Name, "[]\n") {
			return nil, fmt.Errorf("%w: name %q: give a name without brackets", ErrInvalidPattern, p.Name)
		}
		re, err := regexp.Compile(p.Regexp)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrInvalidPattern, p.Name, err)
		}
		r.patterns = append(r.patterns, pattern{name: p.Name, re: re})
	}
	return r, nil
}

// ParsePattern reads a pattern written NAME=REGEXP, as the command line
// takes it.
func ParsePattern(s string) (Pattern, error) {
	name, re, ok := strings.Cut(s, "=")
	if !ok || name == "" || re == "" {
		return Pattern{}, fmt.Errorf("%w %q: write NAME=REGEXP", ErrInvalidPattern, s)
	}
	return Pattern{Name: name, Regexp: re}, nil
}

// found is the secrets found in a text, by secret, with the rule of each.
type found map[string]string

// scan finds the secrets of text with every rule, adding them to f.
func (r *Redactor) scan(text string, f found) found {
	add := func(secret, rule string, least int) {
		if len(secret) < least || isMarker(secret) {
			return // a marker is what an earlier redaction left: redacting is idempotent
		}
		if f == nil {
			f = found{}
		}
		if _, ok := f[secret]; !ok {
			f[secret] = rule
		}
	}
	if len(text) >= minSecret {
		// A detector that failed to load was refused by New.
		d, _ := defaultDetector()
		for _, fd := range d.findings(text) {
			secret := fd.Secret
			if secret == "" {
				secret = fd.Match
			}
			add(strings.TrimSpace(secret), fd.RuleID, minSecret)
		}
	}
	for _, p := range r.patterns {
		if p.literal != "" && !strings.Contains(text, p.literal) {
			continue
		}
		for _, m := range p.re.FindAllStringSubmatchIndex(text, -1) {
			secret := text[m[0]:m[1]]
			if len(m) >= 4 && m[2] >= 0 {
				secret = text[m[2]:m[3]]
			}
			if p.placeholder == nil || !p.placeholder(secret) {
				add(secret, p.name, 1)
			}
		}
	}
	return f
}

// replace replaces every secret of f that occurs in s by its marker,
// longest first so that a secret inside another is not cut out of it,
// and counts the replacements in rep.
func replace(s string, f found, rep Report) string {
	if len(f) == 0 {
		return s
	}
	secrets := make([]string, 0, len(f))
	for secret := range f {
		if strings.Contains(s, secret) {
			secrets = append(secrets, secret)
		}
	}
	slices.SortFunc(secrets, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	for _, secret := range secrets {
		n := strings.Count(s, secret)
		if n == 0 {
			continue // inside a longer secret already replaced
		}
		rule := f[secret]
		s = strings.ReplaceAll(s, secret, Marker(rule))
		rep[rule] += n
	}
	return s
}

// Marker is what replaces a secret that rule found: [REDACTED:rule].
func Marker(rule string) string { return "[REDACTED:" + rule + "]" }

// isMarker reports whether s is a marker and nothing else.
func isMarker(s string) bool {
	rule, ok := strings.CutPrefix(s, "[REDACTED:")
	return ok && strings.IndexByte(rule, ']') == len(rule)-1
}

// String returns s with its secrets replaced, and what was replaced.
func (r *Redactor) String(s string) (string, Report) {
	rep := Report{}
	return replace(s, r.scan(s, nil), rep), rep
}
