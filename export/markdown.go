package export

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// Markdown writes the session as Markdown for people, readable in a pull
// request or an issue on GitHub: a heading with the title and metadata,
// then the whole history in turns (a heading per user message), tool
// calls and outputs in fenced blocks (arguments pretty-printed, long
// blocks folded in <details>), reasoning summaries quoted, and a note
// where a fork, a compaction or a clear changed what the model saw. Items
// later removed are marked, and subagent records follow under their own
// headings.
//
// Content cannot break out of its place: every fence is longer than any
// run of backticks inside it, message text has its unclosed fences
// closed and its HTML tags and comments escaped (outside code), and names,
// labels and metadata are escaped or set in code spans.
func Markdown(w io.Writer, s *Session) error {
	return render(context.Background(), w, FormatMarkdown, memSource(s))
}

func writeMarkdown(ctx context.Context, o output, src *source) error {
	mk, err := scan(ctx, src.main, false)
	if err != nil {
		return err
	}
	m := src.main.meta
	title := m.Title
	if title == "" {
		title = "Session " + m.Key.Session
	}
	fmt.Fprintf(o, "# %s\n\n", mdInline(title))
	mdMeta(o.Writer, m)
	if err := history(ctx, src.main, mk, mdSink{o, "##"}); err != nil {
		return err
	}
	return eachSubagent(ctx, src, true, func(r *record, mk *marks) error {
		fmt.Fprintf(o, "## Subagent %s\n\n", codeSpan(r.meta.Key.Subpath))
		return history(ctx, r, mk, mdSink{o, "###"})
	})
}

// mdSink writes a history as Markdown, turns under headings of level h.
type mdSink struct {
	o output
	h string
}

func (s mdSink) note(bl block) error {
	fmt.Fprintf(s.o, "---\n\n> *%s*\n\n---\n\n", mdInline(bl.Note))
	return s.o.err()
}

func (s mdSink) turn(bl block) error {
	fmt.Fprintf(s.o, "%s Turn %d · %s\n\n", s.h, bl.Turn, stamp(bl.Time))
	return s.o.err()
}

func (s mdSink) part(p part) error {
	mdPart(s.o.Writer, p)
	return s.o.err()
}

// stamp formats a time for readers, in UTC so an export reads the same
// wherever it was made.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

func mdMeta(b *bufio.Writer, m recall.Meta) {
	fmt.Fprintf(b, "- **Session:** %s in project %s\n", codeSpan(m.Key.Session), codeSpan(m.Key.Project))
	fmt.Fprintf(b, "- **Created:** %s · **Updated:** %s\n", stamp(m.Created), stamp(m.Updated))
	fmt.Fprintf(b, "- **Items:** %d", m.ItemCount)
	if !m.Usage.IsZero() {
		fmt.Fprintf(b, " · **Usage:** %d tokens (%d in, %d out)", m.Usage.TotalTokens, m.Usage.InputTokens, m.Usage.OutputTokens)
	}
	b.WriteString("\n")
	if st := state(m.Archived, m.Pinned); st != "" {
		fmt.Fprintf(b, "- **State:** %s\n", st)
	}
	if len(m.Labels) > 0 {
		var ls []string
		for _, l := range m.Labels {
			ls = append(ls, codeSpan(l))
		}
		fmt.Fprintf(b, "- **Labels:** %s\n", strings.Join(ls, ", "))
	}
	if len(m.Metadata) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(m.Metadata)) {
			kv = append(kv, codeSpan(k)+": "+codeSpan(m.Metadata[k]))
		}
		fmt.Fprintf(b, "- **Metadata:** %s\n", strings.Join(kv, ", "))
	}
	if f := m.ForkedFrom; f != nil {
		fmt.Fprintf(b, "- **Forked from:** %s at seq %d\n", codeSpan(f.Key.Session), f.Seq)
	}
	b.WriteString("\n")
}

func state(archived, pinned bool) string {
	var s []string
	if pinned {
		s = append(s, "pinned")
	}
	if archived {
		s = append(s, "archived")
	}
	return strings.Join(s, ", ")
}

func mdPart(b *bufio.Writer, p part) {
	removed := ""
	if p.Summary {
		removed += " · *compaction summary*"
	}
	if p.Removed {
		removed += " · *removed later*"
	}
	switch p.Kind {
	case "message":
		fmt.Fprintf(b, "**%s**%s\n\n", mdInline(roleName(p.Role)), removed)
		if t := strings.TrimSpace(p.Text); t != "" {
			b.WriteString(mdText(t))
			b.WriteString("\n\n")
		}
		mdImages(b, p.Images)
	case "reasoning":
		fmt.Fprintf(b, "> **Reasoning**%s\n>\n", removed)
		for _, line := range strings.Split(mdText(strings.TrimSpace(p.Text)), "\n") {
			b.WriteString(strings.TrimRight("> "+line, " ") + "\n")
		}
		b.WriteString("\n")
	case "damaged":
		fmt.Fprintf(b, "> *%s*\n\n", mdInline(p.Text))
	default:
		head := ""
		switch p.Kind {
		case "call":
			head = "Tool call " + codeSpan(p.Name)
		case "output":
			head = "Tool output"
			if p.Error {
				head += " (error)"
			}
		default:
			head = "Item " + codeSpan(p.Type)
		}
		if p.CallID != "" {
			head += " · " + codeSpan(p.CallID)
		}
		if p.Fold() {
			// the summary is raw HTML: escaped, and kept free of Markdown
			fmt.Fprintf(b, "<details><summary>%s (%d lines)</summary>\n\n", htmlText(plainHead(p)), p.Lines())
			b.WriteString(fence(p.Code, p.Lang))
			b.WriteString("\n\n</details>\n\n")
		} else {
			fmt.Fprintf(b, "**%s**%s\n\n", head, removed)
			b.WriteString(fence(p.Code, p.Lang))
			b.WriteString("\n\n")
		}
		mdImages(b, p.Images)
	}
}

// plainHead is a part's heading as plain text, with its marks.
func plainHead(p part) string {
	var h string
	switch p.Kind {
	case "message":
		h = roleName(p.Role)
	case "call":
		h = "Tool call " + p.Name
	case "output":
		h = "Tool output"
		if p.Error {
			h += " (error)"
		}
	case "reasoning":
		h = "Reasoning"
	default:
		h = "Item " + p.Type
	}
	if p.Summary {
		h += " (compaction summary)"
	}
	if p.Removed {
		h += " (removed later)"
	}
	return h
}

func mdImages(b *bufio.Writer, images []image) {
	for _, im := range images {
		if im.Data {
			fmt.Fprintf(b, "*(image: %s, %s, inline data not shown)*\n\n", mdInline(im.Mime), size(im.Size))
		} else {
			fmt.Fprintf(b, "*(image: %s)*\n\n", codeSpan(im.URL))
		}
	}
}

func size(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f KB", float64(n)/1024)
}

func roleName(role string) string {
	if role == "" {
		return "Message"
	}
	return strings.ToUpper(role[:1]) + role[1:]
}

// fence wraps s in a code fence of backticks longer than any run of
// backticks in s, so nothing in s can close it.
func fence(s, lang string) string {
	f := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	return f + lang + "\n" + strings.TrimRight(s, "\n") + "\n" + f
}

// codeSpan sets s in an inline code span that nothing in s can end, on
// one line.
func codeSpan(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "` `"
	}
	ticks := strings.Repeat("`", longestRun(s, '`')+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return ticks + s + ticks
}

func longestRun(s string, c byte) int {
	n, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			run++
			n = max(n, run)
		} else {
			run = 0
		}
	}
	return n
}

// mdInline escapes s for inline Markdown text on one line, never at the
// start of a line: every character that could start emphasis, code, a
// link, an image, a tag, an entity, a table cell, strikethrough, math or a
// mention is backslash-escaped (CommonMark allows it for any ASCII
// punctuation), so s reads as the text it is.
func mdInline(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && strings.ContainsRune("\\`*_[]<>&!|~#$@", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// htmlText escapes s for text inside raw HTML.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(strings.Join(strings.Fields(s), " "))
}

// mdText makes message text, which is Markdown, safe to embed: a fence
// it leaves open is closed at its end (or it would swallow the rest of
// the export), and outside code every "<" that could start raw HTML (a
// tag, a comment, CDATA, a declaration) is escaped as "&lt;", so no
// unclosed <details>, <!-- or <pre> hides what follows.
func mdText(s string) string {
	var (
		out     strings.Builder
		open    string // the open fence's marker, "" outside a fence
		para    []string
		inFence bool
	)
	flush := func() {
		if len(para) > 0 {
			out.WriteString(escapeHTMLOutsideCode(strings.Join(para, "\n")))
			out.WriteString("\n")
			para = para[:0]
		}
	}
	for _, line := range strings.Split(s, "\n") {
		marker := fenceMarker(line)
		switch {
		case !inFence && marker != "":
			flush()
			inFence, open = true, marker
			out.WriteString(line + "\n")
		case inFence:
			out.WriteString(line + "\n")
			if marker != "" && marker[0] == open[0] && len(marker) >= len(open) && strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), marker[:1])) == "" {
				inFence = false
			}
		default:
			para = append(para, line)
		}
	}
	flush()
	if inFence {
		out.WriteString(open + "\n")
	}
	return strings.TrimRight(out.String(), "\n")
}

// fenceMarker returns the run of ``` or ~~~ (three or more) that opens
// or closes a fenced code block on line, or "".
func fenceMarker(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || len(t) < 3 || t[0] != '`' && t[0] != '~' {
		return ""
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	if n < 3 || t[0] == '`' && strings.Contains(t[n:], "`") {
		return ""
	}
	return t[:n]
}

// escapeHTMLOutsideCode escapes "<" that could open raw HTML, except in
// code spans (a run of backticks up to the next run of the same length).
func escapeHTMLOutsideCode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		if c == '`' {
			n := 1
			for i+n < len(s) && s[i+n] == '`' {
				n++
			}
			if end := closingRun(s[i+n:], n); end >= 0 {
				b.WriteString(s[i : i+n+end+n])
				i += n + end + n
				continue
			}
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		if c == '<' && i+1 < len(s) && (isLetter(s[i+1]) || s[i+1] == '/' || s[i+1] == '!' || s[i+1] == '?') {
			b.WriteString("&lt;")
			i++
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String()
}

// closingRun returns the index in s of the first run of exactly n
// backticks, or -1.
func closingRun(s string, n int) int {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		if j-i == n {
			return i
		}
		i = j
	}
	return -1
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
