package recallmcp

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/recallkit/recall/internal/termsafe"
)

// quotePrefix starts every line of session content in a result's text, so
// that nothing a session holds can pass for the server's own words: a
// quoted line cannot end the quotation, start a new record or look like a
// note of the server's.
const quotePrefix = "    │ "

// quote writes s to b as a quotation: each line behind quotePrefix, with
// control characters (escape sequences, carriage returns, bidi overrides)
// and invalid bytes shown as escapes rather than acting.
func quote(b *strings.Builder, s string) {
	for line := range strings.SplitSeq(s, "\n") {
		b.WriteString(quotePrefix)
		b.WriteString(termsafe.EscapeKeepTabs(line))
		b.WriteByte('\n')
	}
}

// cut returns s shortened to at most n characters (runes), and how many
// characters it left out.
func cut(s string, n int) (string, int) {
	total := utf8.RuneCountInString(s)
	if total <= n {
		return s, 0
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i], total - n
}

// oneLine squeezes white space runs (line breaks included) of s into
// single spaces.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// chars counts the characters (runes) of s: the unit of every cap.
func chars(s string) int { return utf8.RuneCountInString(s) }

// fitRecords returns how many records, in order, fit in budget
// characters, given each one's cost; at least one when there is one,
// since every record is already shortened to fit a result on its own.
func fitRecords(costs []int, budget int) int {
	used := 0
	for i, c := range costs {
		used += c
		if used > budget && i > 0 {
			return i
		}
	}
	return len(costs)
}

// cost is what a record adds to a result: its text, and its JSON in the
// structured result, which carries the same record.
func cost(text string, record any) int {
	b, _ := json.Marshal(record)
	return chars(text) + chars(string(b))
}

// titleChars is the most characters of a title a result shows.
const titleChars = 300

// shortTitle cuts a long title to titleChars, with "…".
func shortTitle(t string) string {
	if s, cutN := cut(t, titleChars); cutN > 0 {
		return s + "…"
	}
	return t
}

// parseSince reads a search's since argument: an age (30d, 12h, 90m, or
// any Go duration) or a date (2026-01-31) or time (RFC 3339).
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	rest := s
	var d time.Duration
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		days, err := strconv.ParseUint(rest[:i], 10, 16)
		if err != nil {
			return time.Time{}, badArg("since %q: days must be a whole number, as in 30d", s)
		}
		d = time.Duration(days) * 24 * time.Hour
		rest = rest[i+1:]
	}
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil {
			return time.Time{}, badArg("since %q: use an age such as 7d, 12h or 90m, or a date such as 2026-01-31", s)
		}
		d += r
	}
	if d <= 0 {
		return time.Time{}, badArg("since %q: the age must be more than zero", s)
	}
	return now.Add(-d), nil
}

// sourceName renders a session's source (importer.Source) in a header
// line, which is the server's own words: as it is when it is a plain name,
// as every importer's is; otherwise quoted, escaped and cut, since
// metadata may hold anything.
func sourceName(s string) string {
	plain := s != "" && len(s) <= 40
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	short, _ := cut(s, 40)
	return strconv.Quote(short)
}
