package search

import (
	"github.com/recallkit/recall"

	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SnippetBytes is about the longest snippet Snippet returns, in bytes,
// before its ellipses.
const SnippetBytes = 160

// snippetSlack is how far Snippet moves a cut to land between words.
const snippetSlack = 16

// Snippet returns a one-line excerpt of text of about SnippetBytes
// around the first match of q, and the byte ranges of the excerpt where a
// term of q matched. White space runs become one space, case is kept, the
// cut falls on rune boundaries (between words when one is near), and "…"
// marks text left out on either side. Matching is the search's own:
// Normalize of the text against q's terms, so every span it reports is
// a place Query.Match found. A text q does not match gives its beginning
// and no spans.
func Snippet(text string, q Query) (string, []recall.Span) {
	f := foldText(text)
	var spans []recall.Span // in f.display
	for _, t := range q.Terms {
		for off := 0; ; {
			i := strings.Index(f.lower[off:], t)
			if i < 0 || t == "" {
				break
			}
			a, b := off+i, off+i+len(t)
			spans = append(spans, recall.Span{Start: f.toDisplay(a), End: f.toDisplay(b)})
			off = b
		}
	}
	slices.SortFunc(spans, func(x, y recall.Span) int { return x.Start - y.Start })
	d := f.display
	start, end := 0, len(d)
	if len(d) > SnippetBytes {
		ms, me := 0, 0
		if len(spans) > 0 {
			ms, me = spans[0].Start, spans[0].End
		}
		if me-ms >= SnippetBytes {
			start = ms
		} else {
			start = max(0, ms-(SnippetBytes-(me-ms))/3)
		}
		end = min(len(d), start+SnippetBytes)
		start = max(0, min(start, end-SnippetBytes))
		for start > 0 && !utf8.RuneStart(d[start]) {
			start++
		}
		for end < len(d) && !utf8.RuneStart(d[end]) {
			end--
		}
		// Land between words when a space is near and the first match
		// stays whole.
		if start > 0 {
			if i := strings.IndexByte(d[start:min(end, start+snippetSlack)], ' '); i >= 0 && (len(spans) == 0 || start+i+1 <= ms) {
				start += i + 1
			}
		}
		if end < len(d) {
			if i := strings.LastIndexByte(d[max(start, end-snippetSlack):end], ' '); i >= 0 {
				if e := max(start, end-snippetSlack) + i; len(spans) == 0 || e >= me {
					end = e
				}
			}
		}
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	shift := b.Len() - start
	b.WriteString(d[start:end])
	if end < len(d) {
		b.WriteString("…")
	}
	var out []recall.Span
	for _, s := range spans {
		s.Start, s.End = max(s.Start, start), min(s.End, end)
		if s.Start >= s.End {
			continue
		}
		s.Start += shift
		s.End += shift
		if n := len(out); n > 0 && s.Start <= out[n-1].End {
			out[n-1].End = max(out[n-1].End, s.End)
			continue
		}
		out = append(out, s)
	}
	return b.String(), out
}

// folded is a text in two forms built together: display (white space
// collapsed and trimmed, case kept) and lower (Normalize of the same
// text), with the byte offset of each rune in both.
type folded struct {
	display, lower  string
	lowerAt, dispAt []int // rune starts, with len of each string at the end
}

func foldText(text string) folded {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	var d, l strings.Builder
	d.Grow(len(text))
	l.Grow(len(text))
	var f folded
	space := false
	for _, r := range text {
		if unicode.IsSpace(r) {
			space = l.Len() > 0
			continue
		}
		if space {
			f.lowerAt = append(f.lowerAt, l.Len())
			f.dispAt = append(f.dispAt, d.Len())
			l.WriteByte(' ')
			d.WriteByte(' ')
			space = false
		}
		f.lowerAt = append(f.lowerAt, l.Len())
		f.dispAt = append(f.dispAt, d.Len())
		l.WriteRune(unicode.ToLower(r))
		d.WriteRune(r)
	}
	f.display, f.lower = d.String(), l.String()
	f.lowerAt = append(f.lowerAt, len(f.lower))
	f.dispAt = append(f.dispAt, len(f.display))
	return f
}

// toDisplay maps a rune boundary of f.lower to the same place in
// f.display.
func (f folded) toDisplay(lowerOff int) int {
	i, _ := slices.BinarySearch(f.lowerAt, lowerOff)
	return f.dispAt[min(i, len(f.dispAt)-1)]
}

// Occurrences returns how many times the terms of q occur in normalized
// text, each counted without overlap: the scan's Rank.
func Occurrences(normalized string, q Query) int {
	n := 0
	for _, t := range q.Terms {
		n += strings.Count(normalized, t)
	}
	return n
}
