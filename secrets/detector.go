package secrets

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/zricethezav/gitleaks/v8/config"
	"github.com/zricethezav/gitleaks/v8/detect"
	"github.com/zricethezav/gitleaks/v8/report"
)

// detector runs gitleaks' default rules in two parts.
//
// gitleaks' keyword prefilter runs a rule only on a text that holds one
// of the rule's keywords. That makes most rules free on ordinary text,
// but not the "semi-generic" ones (generic-api-key and some 95 provider
// rules built the same way: NAME ... = VALUE), whose keywords are common
// words (key, token, auth, api) and whose regular expression, starting
// with a repetition rather than a literal, costs some 200 ns a byte. Their
// matches are short and hold the keyword followed, within a few
// characters, by an assignment; so near scans only a window around each
// keyword that an assignment follows, and wide, the other rules, scans
// the whole text.
type detector struct {
	wide, near *detect.Detector
	keywords   *ahocorasick.Trie // near's keywords, lower case
}

// semiGeneric is how gitleaks' generator starts the semi-generic rules.
const semiGeneric = `(?i)[\w.-]{0,50}?(?:`

// Window bounds around a keyword: a semi-generic match starts at most 50
// bytes before it and ends at most 20+3+3+5+150+2 bytes after it; the
// margins are wider, since a rule's alternatives may be longer than its
// keywords.
const (
	windowBefore = 64
	windowAfter  = 320
	// assignWithin is how far after a keyword its assignment may be.
	assignWithin = 64
)

var (
	detectorOnce sync.Once
	theDetector  *detector
	detectorErr  error
)

// defaultDetector builds the detector once: compiling the rules takes a
// while, and the detectors are safe for concurrent scans (DetectContext
// only reads them). Their construction is not (it goes through viper's
// global state), hence the Once.
func defaultDetector() (*detector, error) {
	detectorOnce.Do(func() {
		d, err := detect.NewDetectorDefaultConfig()
		if err != nil {
			detectorErr = fmt.Errorf("secrets: load the default rules: %w", err)
			return
		}
		theDetector = split(d.Config)
	})
	return theDetector, detectorErr
}

// split makes the detector of cfg's rules.
func split(cfg config.Config) *detector {
	wide, near := cfg, cfg
	wide.Rules, wide.Keywords = map[string]config.Rule{}, map[string]struct{}{}
	near.Rules, near.Keywords = map[string]config.Rule{}, map[string]struct{}{}
	for id, r := range cfg.Rules {
		part := &wide
		if r.Regex != nil && len(r.Keywords) > 0 && strings.HasPrefix(r.Regex.String(), semiGeneric) {
			part = &near
		}
		part.Rules[id] = r
		for _, k := range r.Keywords {
			part.Keywords[strings.ToLower(k)] = struct{}{}
		}
	}
	trie := ahocorasick.NewTrieBuilder().AddStrings(keys(near.Keywords)).Build()
	return &detector{wide: detect.NewDetector(wide), near: detect.NewDetector(near), keywords: trie}
}

func keys(m map[string]struct{}) []string {
	var out []string
	for k := range maps.Keys(m) {
		out = append(out, k)
	}
	return out
}

// findings returns what the rules find in text.
func (d *detector) findings(ctx context.Context, text string) []report.Finding {
	fs := d.wide.DetectContext(ctx, detect.Fragment{Raw: text})
	lower := asciiLower(text)
	end := -1 // the end of the window being grown
	start := 0
	flush := func() {
		if end > start {
			fs = append(fs, d.near.DetectContext(ctx, detect.Fragment{Raw: text[start:end]})...)
		}
	}
	for _, m := range d.keywords.MatchString(lower) {
		p := int(m.Pos())
		after := p + len(m.Match())
		if !assigned(text, after) {
			continue
		}
		a, b := max(0, p-windowBefore), min(len(text), after+windowAfter)
		if a > end {
			flush()
			start = a
		}
		end = max(end, b)
	}
	flush()
	return fs
}

// assigned reports whether text[i:], after a keyword, can continue a
// semi-generic match: identifier characters and spaces, up to three
// quotes or spaces, an assignment (= : > | , ?= := => ||), up to five
// quotes, spaces or equal signs, and a value of ten characters or more.
// It is a necessary condition, checked in one pass, before the regular
// expression runs.
func assigned(text string, i int) bool {
	j := i
	for j < len(text) && j-i < assignWithin && isNameByte(text[j]) {
		j++
	}
	for k := 0; k < 3 && j < len(text) && strings.IndexByte(" \t\r\n'\"", text[j]) >= 0; k++ {
		j++
	}
	if j == len(text) || strings.IndexByte("=>:|,?", text[j]) < 0 {
		return false
	}
	for k := 0; k < 3 && j < len(text) && strings.IndexByte("=>:|?", text[j]) >= 0; k++ {
		j++
	}
	if j < len(text) && text[j] == ',' {
		j++
	}
	for k := 0; k < 5 && j < len(text) && strings.IndexByte("`'\" \t\r\n=", text[j]) >= 0; k++ {
		j++
	}
	n := 0
	for j+n < len(text) && isValueByte(text[j+n]) {
		n++
	}
	return n >= 10
}

func isValueByte(c byte) bool {
	return c == '.' || c == '-' || c == '_' || c == '=' || c == '+' || c == '/' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func isNameByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '.' || c == '-' || c == '_' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// asciiLower lowers ASCII letters only, so that offsets in the result
// are offsets in s (strings.ToLower may change the length of other
// letters); the keywords are ASCII.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
