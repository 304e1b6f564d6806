package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/sessionref"
)

// titleWidth is the display width a title gets in a listing.
const titleWidth = 50

// ago renders t relative to now the way listings show it.
func ago(t, now time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "-"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	default:
		return t.Local().Format("2006-01-02")
	}
}

// count renders n things: "1 item", "2 items".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// displayTitle is a session's title for a listing: cut to width display
// columns (never inside a character), with its archived and pinned marks.
func displayTitle(m recall.Meta, width int) string {
	t := m.Title
	if t == "" {
		t = "(untitled)"
	}
	var marks []string
	if m.Pinned {
		marks = append(marks, "[pinned]")
	}
	if m.Archived {
		marks = append(marks, "[archived]")
	}
	if len(marks) > 0 {
		t = strings.Join(marks, " ") + " " + t
	}
	return runewidth.Truncate(t, width, "…")
}

// writeSessions prints metas as the session table of ls and /sessions:
// short ID, title, updated (relative), items, and the project when
// withProject. Short IDs are unique among scope, the sessions a prefix
// would be resolved against.
func writeSessions(w io.Writer, metas, scope []recall.Meta, withProject bool) error {
	ids := make([]string, 0, len(scope)+len(metas))
	for _, m := range metas {
		ids = append(ids, m.Key.Session)
	}
	for _, m := range scope {
		ids = append(ids, m.Key.Session)
	}
	short := sessionref.ShortIDs(ids)
	now := time.Now()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "ID\tTITLE\tUPDATED\tITEMS"
	if withProject {
		head += "\tPROJECT"
	}
	fmt.Fprintln(tw, head)
	for i, m := range metas {
		line := fmt.Sprintf("%s\t%s\t%s\t%d", short[i], displayTitle(m, titleWidth), ago(m.Updated, now), m.ItemCount)
		if withProject {
			line += "\t" + m.Key.Project
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}
