package main

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/internal/sessionref"
	"github.com/recallkit/recall/internal/termsafe"
)

// titleWidth is the display width a title gets in a listing.
const titleWidth = 50

// count renders n things: "1 item", "2 items".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// displayTitle is a session's title for a listing: cut to width display
// columns (never inside a character), with its archived and pinned marks
// and its control characters shown escaped (\x1b, \a), never acting.
func displayTitle(m recall.Meta, width int) string {
	t := termsafe.Escape(m.Title)
	if t == "" {
		t = "(untitled)"
	}
	if states := sessionStates(m); len(states) > 0 {
		t = "[" + strings.Join(states, "] [") + "] " + t
	}
	return runewidth.Truncate(t, width, "…")
}

// sessionStates names the states m is in, in the order listings and
// 'recall show' print them: "pinned", then "archived".
func sessionStates(m recall.Meta) []string {
	var states []string
	if m.Pinned {
		states = append(states, "pinned")
	}
	if m.Archived {
		states = append(states, "archived")
	}
	return states
}

// columns are the optional columns of a session table: the project (a
// listing of every project) and the source, the tool each session came
// from (importer.Source).
type columns struct {
	project, source bool
}

// writeSessions prints metas as the session table of ls and /sessions:
// short ID, title, updated (relative), items, and the columns cols asks
// for. Short IDs are unique among metas and scope, the sessions a prefix
// is resolved against.
func writeSessions(w io.Writer, metas, scope []recall.Meta, cols columns) error {
	short := sessionref.ShortIDs(append(sessionIDs(metas), sessionIDs(scope)...))
	now := time.Now()
	head := []string{"ID", "TITLE", "UPDATED", "ITEMS"}
	if cols.source {
		head = append(head, "SOURCE")
	}
	if cols.project {
		head = append(head, "PROJECT")
	}
	rows := [][]string{head}
	for i, m := range metas {
		row := []string{short[i], displayTitle(m, titleWidth), age.Ago(m.Updated, now), strconv.Itoa(m.ItemCount)}
		if cols.source {
			row = append(row, termsafe.Escape(importer.Source(m)))
		}
		if cols.project {
			row = append(row, m.Key.Project)
		}
		rows = append(rows, row)
	}
	return writeTable(w, rows)
}

// sessionIDs returns the session IDs of metas, in order, as
// sessionref.ShortIDs takes them.
func sessionIDs(metas []recall.Meta) []string {
	ids := make([]string, len(metas))
	for i, m := range metas {
		ids[i] = m.Key.Session
	}
	return ids
}

// writeTable prints rows as columns two spaces apart, aligned by display
// width, so titles in CJK scripts line up too (text/tabwriter counts
// runes, not columns).
func writeTable(w io.Writer, rows [][]string) error {
	var widths []int
	for _, row := range rows {
		for i, cell := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], runewidth.StringWidth(cell))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		for i, cell := range row {
			if i == len(row)-1 {
				b.WriteString(cell)
				break
			}
			b.WriteString(runewidth.FillRight(cell, widths[i]+2))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// terminalWriter writes text of several lines to w with termsafe.Escape
// applied to each line: line breaks and tabs stay, every other control
// character is shown escaped. It escapes a line once it has all of it,
// so the text can come in pieces of any size (a session streamed a page
// at a time) and holds no more than one line; flush writes the last,
// unended one.
type terminalWriter struct {
	w    io.Writer
	line []byte // the start of a line whose end has not come yet
}

func (t *terminalWriter) Write(p []byte) (int, error) {
	n := len(p)
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.line = append(t.line, p...)
			return n, nil
		}
		t.line = append(t.line, p[:i]...)
		if _, err := io.WriteString(t.w, termsafe.EscapeKeepTabs(string(t.line))+"\n"); err != nil {
			return 0, err
		}
		t.line, p = t.line[:0], p[i+1:]
	}
}

// flush writes what is left of the text after its last line break.
func (t *terminalWriter) flush() error {
	if len(t.line) == 0 {
		return nil
	}
	_, err := io.WriteString(t.w, termsafe.EscapeKeepTabs(string(t.line)))
	t.line = t.line[:0]
	return err
}
