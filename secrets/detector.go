package secrets

import (
	"fmt"
	"maps"
	"slices"
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
//
// Two rules of wide have keywords that ordinary words hold ("ey" in
// "key", "s." at the end of a sentence) and expressions that start with
// \b, which defeats the regexp package's literal search: each runs only
// when its keyword is followed by the run of token characters its
// expression needs (see gates).
type detector struct {
	wide, near *detect.Detector
	gated      []gatedRule
	// keywords finds the keywords of wide and near (lower case) in one
	// pass; nearWord tells near's. wide runs only when one of its own
	// occurs, as its prefilter would decide, without a second pass.
	keywords *ahocorasick.Trie
	wideWord map[string]bool
	nearWord map[string]bool
	// wideAlways: a rule of wide has an expression and no keyword, so
	// wide runs on every text.
	wideAlways bool
}

// gate is a necessary condition of a rule's match: keyword (lower case,
// matched in the lowered text) directly followed by at least run
// characters of [A-Za-z0-9_-].
type gate struct {
	keyword string
	run     int
}

// gates are the rules of wide run behind a gate: jwt needs
// ey[a-zA-Z0-9]{17,}, vault-service-token s\.[a-z0-9]{24} or
// hvs\.[\w-]{90,120}.
var gates = map[string]gate{
	"jwt":                 {"ey", 17},
	"vault-service-token": {"s.", 24},
}

type gatedRule struct {
	gate
	d *detect.Detector
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
	part := func() config.Config {
		c := cfg
		c.Rules, c.Keywords = map[string]config.Rule{}, map[string]struct{}{}
		return c
	}
	add := func(c *config.Config, id string, r config.Rule) {
		c.Rules[id] = r
		for _, k := range r.Keywords {
			c.Keywords[strings.ToLower(k)] = struct{}{}
		}
	}
	wide, near := part(), part()
	d := &detector{}
	for id, r := range cfg.Rules {
		g, gated := gates[id]
		switch {
		case gated && holdAll(r.Keywords, g.keyword):
			c := part()
			add(&c, id, r)
			d.gated = append(d.gated, gatedRule{g, detect.NewDetector(c)})
		case r.Regex != nil && len(r.Keywords) > 0 && strings.HasPrefix(r.Regex.String(), semiGeneric):
			add(&near, id, r)
		default:
			add(&wide, id, r)
			d.wideAlways = d.wideAlways || r.Regex != nil && len(r.Keywords) == 0
		}
	}
	d.wide, d.near = detect.NewDetector(wide), detect.NewDetector(near)
	d.wideWord, d.nearWord = map[string]bool{}, map[string]bool{}
	for k := range wide.Keywords {
		d.wideWord[k] = true
	}
	for k := range near.Keywords {
		d.nearWord[k] = true
	}
	all := slices.Collect(maps.Keys(d.wideWord))
	for k := range d.nearWord {
		if !d.wideWord[k] {
			all = append(all, k)
		}
	}
	d.keywords = ahocorasick.NewTrieBuilder().AddStrings(all).Build()
	return d
}

// findings returns what the rules find in text.
func (d *detector) findings(text string) []report.Finding {
	var fs []report.Finding
	lower := asciiLower(text)
	hits := d.keywords.MatchString(lower)
	for i := -1; i < len(hits); i++ {
		if i < 0 && d.wideAlways || i >= 0 && d.wideWord[hits[i].MatchString()] {
			fs = d.wide.DetectString(text)
			break
		}
	}
	for _, g := range d.gated {
		if g.open(lower) {
			fs = append(fs, g.d.DetectString(text)...)
		}
	}
	end := -1 // the end of the window being grown
	start := 0
	flush := func() {
		if end > start {
			fs = append(fs, d.near.DetectString(text[start:end])...)
		}
	}
	for _, m := range hits {
		p := int(m.Pos())
		after := p + len(m.Match())
		if !d.nearWord[m.MatchString()] || !assigned(text, after) {
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

// holdAll reports whether every keyword holds k (and there is one), so
// that k occurs wherever a keyword does.
func holdAll(keywords []string, k string) bool {
	for _, kw := range keywords {
		if !strings.Contains(strings.ToLower(kw), k) {
			return false
		}
	}
	return len(keywords) > 0
}

// open reports whether lower holds the gate's keyword followed by its
// run.
func (g gate) open(lower string) bool {
	for i := 0; ; {
		k := strings.Index(lower[i:], g.keyword)
		if k < 0 {
			return false
		}
		j := i + k + len(g.keyword)
		n := 0
		for j+n < len(lower) && n < g.run && isTokenByte(lower[j+n]) {
			n++
		}
		if n >= g.run {
			return true
		}
		i = j
	}
}

func isTokenByte(c byte) bool {
	return c == '_' || c == '-' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
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
