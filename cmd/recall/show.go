package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/transcript"
)

// showFlags are the flags of recall show.
type showFlags struct {
	format          string
	full, subagents bool
}

func newShowCmd(a *app) *cobra.Command {
	var f showFlags
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print a session: its metadata and conversation",
		Long: `Print a session. ID is a full ID, a unique ID prefix, or an exact title.

Formats:
  text      metadata, then the conversation as the model sees it (default)
  markdown  the conversation as Markdown, headed by the title
  json      {"session": metadata, "items": [items as stored]}
  jsonl     the session's whole entry log, one JSON entry a line: a lossless
            export, including titles, pops, clears and compactions

--full shows every item the log holds rather than the view the model gets:
the items compactions replaced (with a mark where each compaction is), and
the items undo removed (marked). --subagents adds the transcripts of the
subagents the session's agent ran (in json, as "subagents").`,
		Example: `  recall show 0199a3f2-1b
  recall show "Fix the parser" --format markdown > notes.md
  recall show 0199a3f2-1b --full --subagents`,
		Args: args(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if a.json && !cmd.Flags().Changed("format") {
				f.format = "json"
			}
			return a.show(cmd.Context(), argv[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.format, "format", "f", "text", "output format: text, markdown, json or jsonl")
	fl.BoolVar(&f.full, "full", false, "show every item of the log, those compactions replaced and undo removed included")
	fl.BoolVar(&f.subagents, "subagents", false, "add the transcripts of the session's subagents")
	return cmd
}

// shownSession is what show reads of a session to print it.
type shownSession struct {
	meta    recall.Meta
	items   []recall.Item    // the view the model gets
	entries []recall.Entry   // the whole log, with --full
	subs    []subagentRecord // the subagents' transcripts, with --subagents
}

// show prints the session ref in f.format: the whole log for jsonl, else
// the session read by readShown, paged in a terminal unless it is json.
func (a *app) show(ctx context.Context, ref string, f showFlags) (err error) {
	switch f.format {
	case "text", "markdown", "md", "json", "jsonl":
	default:
		return usageError("use text, markdown, json or jsonl", "unknown format %q", f.format)
	}
	st, m, err := a.resolve(ctx, ref)
	if err != nil {
		return err
	}
	if f.format == "jsonl" {
		return a.printLog(ctx, st, m.Key)
	}
	if f.format != "json" {
		// Long sessions page in a terminal (pager.go).
		wait := a.startPager()
		defer func() {
			if perr := wait(); err == nil {
				err = perr
			}
		}()
	}
	s, err := readShown(ctx, st, m, f)
	if err != nil {
		return err
	}
	switch f.format {
	case "json":
		return a.showJSON(s, f.full)
	case "markdown", "md":
		return a.showMarkdown(s, f.full)
	}
	return a.showText(s, f.full)
}

// printLog prints key's whole entry log, one JSON entry a line: show's
// jsonl format.
func (a *app) printLog(ctx context.Context, st recall.Store, key recall.Key) error {
	_, entries, err := st.Load(ctx, key)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(a.stdout)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}

// readShown reads what show prints of the session m of st: its view, its
// whole log with f.full, its subagents' transcripts with f.subagents.
func readShown(ctx context.Context, st recall.Store, m recall.Meta, f showFlags) (shownSession, error) {
	s := shownSession{meta: m}
	live, _, err := st.Items(ctx, m.Key, 0)
	if err != nil {
		return s, err
	}
	s.items = recall.PlainItems(live)
	if f.full {
		if _, s.entries, err = st.Load(ctx, m.Key); err != nil {
			return s, err
		}
	}
	if f.subagents {
		if s.subs, err = subagentRecords(ctx, st, m.Key); err != nil {
			return s, err
		}
	}
	return s, nil
}

// showJSON prints s as {"session", "items", "subagents"}: with full, the
// items are every item of the log rather than the view.
func (a *app) showJSON(s shownSession, full bool) error {
	items := s.items
	if full {
		items = nil
		for _, p := range fullHistory(s.entries) {
			if p.marker == "" {
				items = append(items, p.item)
			}
		}
	}
	if items == nil {
		items = []recall.Item{}
	}
	return a.printJSON(struct {
		Session   recall.Meta      `json:"session"`
		Items     []recall.Item    `json:"items"`
		Subagents []subagentRecord `json:"subagents,omitempty"`
	}{s.meta, items, s.subs})
}

// showMarkdown prints s as Markdown headed by its title: the view, or with
// full the whole log, then the subagents' transcripts.
func (a *app) showMarkdown(s shownSession, full bool) error {
	var err error
	if full {
		if s.meta.Title != "" {
			fmt.Fprintf(a.stdout, "# %s\n\n", s.meta.Title)
		}
		err = writeFull(a.stdout, "markdown", s.entries)
	} else {
		err = transcript.Markdown(a.stdout, s.meta.Title, s.items)
	}
	if err != nil {
		return err
	}
	return writeSubagents(a.stdout, "markdown", s.subs)
}

// showText prints s as text: its metadata, then the view (or with full
// the whole log), then the subagents' transcripts. It is written whole,
// then with control characters escaped, so the session's text cannot
// drive the terminal.
func (a *app) showText(s shownSession, full bool) error {
	var buf bytes.Buffer
	if err := writeMeta(&buf, s.meta); err != nil {
		return err
	}
	if len(s.items) > 0 || full && len(s.entries) > 0 {
		fmt.Fprintln(&buf)
	}
	var err error
	if full {
		err = writeFull(&buf, "text", s.entries)
	} else {
		err = transcript.Text(&buf, s.items)
	}
	if err == nil {
		err = writeSubagents(&buf, "text", s.subs)
	}
	if err != nil {
		return err
	}
	_, err = io.WriteString(a.stdout, escapeTerminal(buf.String()))
	return err
}

// writeMeta prints a session's metadata as aligned "name value" lines.
func writeMeta(w io.Writer, m recall.Meta) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	now := time.Now()
	row := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	row("session", "%s", m.Key.Session)
	if m.Title != "" {
		row("title", "%s (%s)", m.Title, m.TitleSource)
	}
	row("project", "%s", m.Key.Project)
	row("created", "%s", m.Created.Local().Format("2006-01-02 15:04:05"))
	row("updated", "%s (%s)", m.Updated.Local().Format("2006-01-02 15:04:05"), ago(m.Updated, now))
	row("items", "%d", m.ItemCount)
	var state []string
	if m.Pinned {
		state = append(state, "pinned")
	}
	if m.Archived {
		state = append(state, "archived")
	}
	if len(state) > 0 {
		row("state", "%s", strings.Join(state, ", "))
	}
	if len(m.Labels) > 0 {
		row("labels", "%s", strings.Join(m.Labels, ", "))
	}
	if f := m.ForkedFrom; f != nil {
		row("forked", "from %s at seq %d", f.Key.Session, f.Seq)
	}
	if !m.Usage.IsZero() {
		row("usage", "%d tokens (%d in, %d out)", m.Usage.TotalTokens, m.Usage.InputTokens, m.Usage.OutputTokens)
	}
	if m.Corrupt > 0 {
		row("corrupt", "%d unreadable log lines kept on disk; run 'recall check'", m.Corrupt)
	}
	return tw.Flush()
}
