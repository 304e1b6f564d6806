// Package termsafe makes text from a session safe to show: control
// characters (escape sequences, carriage returns, line breaks), bidi
// controls and invalid bytes are written as Go escapes (\x1b, \n, \u202e,
// \xff) instead of acting on the terminal or the reader. The CLI's
// listings and the MCP server's quoted results both use it.
package termsafe

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with its control characters, bidi controls and
// invalid bytes shown quoted, as \x1b or \n, instead of acting. s is
// returned as it is when it holds none.
func Escape(s string) string { return escape(s, false) }

// EscapeKeepTabs is Escape but keeps tabs as they are.
func EscapeKeepTabs(s string) string { return escape(s, true) }

func escape(s string, keepTabs bool) string {
	bad := func(r rune) bool {
		return !(keepTabs && r == '\t') && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) || r == utf8.RuneError
	}
	if !strings.ContainsFunc(s, bad) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				fmt.Fprintf(&b, `\x%02x`, s[i])
				continue
			}
			b.WriteRune(r)
		case bad(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
