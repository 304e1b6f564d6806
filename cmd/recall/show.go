package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/export"
	"github.com/recallkit/recall/internal/age"
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

--full shows the whole history rather than the view the model gets, as
'recall export' renders it: every item the log ever held, in turns, with a
note where a fork, compaction or clear changed the view, and compaction
summaries and the items undo removed marked. --subagents adds the
transcripts of the subagents the session's agent ran (in json, as
"subagents").`,
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
	fl.BoolVar(&f.full, "full", false, "show the whole history: every item of the log, those compactions replaced and undo removed included")
	fl.BoolVar(&f.subagents, "subagents", false, "add the transcripts of the session's subagents")
	return cmd
}

// shownSession is what show reads of a session to print it.
type shownSession struct {
	meta recall.Meta
	// items are the view the model gets or, for json with --full, every
	// item of the history; text and markdown stream the history instead.
	items []recall.Item
	subs  []subagentRecord // the subagents' transcripts, with --subagents
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
	switch {
	case f.format == "json":
		return a.showJSON(s)
	case f.full:
		return a.showFull(ctx, st, s, f.format)
	case f.format == "text":
		return a.showText(s)
	}
	return a.showMarkdown(s)
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

// readShown reads what show prints of the session m of st, but for the
// history text and markdown print with f.full, which they stream: its
// view, or for json with f.full every item of its history, and its
// subagents' transcripts with f.subagents.
func readShown(ctx context.Context, st recall.Store, m recall.Meta, f showFlags) (shownSession, error) {
	s := shownSession{meta: m}
	var err error
	switch {
	case f.full && f.format == "json":
		s.items = []recall.Item{}
		err = export.HistoryItems(ctx, st, m.Key, func(it recall.Item) error {
			s.items = append(s.items, it)
			return nil
		})
	case !f.full:
		var live []recall.LiveItem
		live, _, err = st.Items(ctx, m.Key, 0)
		s.items = recall.PlainItems(live)
	}
	if err != nil {
		return s, err
	}
	if f.subagents {
		if s.subs, err = subagentRecords(ctx, st, m.Key); err != nil {
			return s, err
		}
	}
	return s, nil
}

// showJSON prints s as {"session", "items", "subagents"}: with --full,
// the items are every item of the history rather than the view.
func (a *app) showJSON(s shownSession) error {
	return a.printJSON(struct {
		Session   recall.Meta      `json:"session"`
		Items     []recall.Item    `json:"items"`
		Subagents []subagentRecord `json:"subagents,omitempty"`
	}{s.meta, orEmpty(s.items), s.subs})
}

// showMarkdown prints s as Markdown headed by its title: the view, then
// the subagents' transcripts.
func (a *app) showMarkdown(s shownSession) error {
	if err := transcript.Markdown(a.stdout, s.meta.Title, s.items); err != nil {
		return err
	}
	return writeSubagents(a.stdout, "markdown", s.subs)
}

// showText prints s as text: its metadata, then the view, then the
// subagents' transcripts.
func (a *app) showText(s shownSession) error {
	return a.writeText(s, func(w io.Writer) error {
		if len(s.items) > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		return transcript.Text(w, s.items)
	})
}

// showFull prints the whole history of the session of s as export
// renders it, then the subagents' transcripts: in markdown, export's
// Markdown of the session; in text, its metadata, then the history as
// export writes it in text.
func (a *app) showFull(ctx context.Context, st recall.Store, s shownSession, format string) error {
	if format == "text" {
		return a.writeText(s, func(w io.Writer) error {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
			return export.StreamText(ctx, w, st, s.meta.Key)
		})
	}
	if err := export.StreamRecord(ctx, a.stdout, export.FormatMarkdown, st, s.meta.Key); err != nil {
		return err
	}
	return writeSubagents(a.stdout, "markdown", s.subs)
}

// writeText prints s as text: its metadata, what body writes, then the
// subagents' transcripts, through a terminalWriter, so the session's
// text cannot drive the terminal.
func (a *app) writeText(s shownSession, body func(io.Writer) error) error {
	tw := &terminalWriter{w: a.stdout}
	err := writeMeta(tw, s.meta)
	if err == nil {
		err = body(tw)
	}
	if err == nil {
		err = writeSubagents(tw, "text", s.subs)
	}
	if err == nil {
		err = tw.flush()
	}
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
	row("updated", "%s (%s)", m.Updated.Local().Format("2006-01-02 15:04:05"), age.Ago(m.Updated, now))
	row("items", "%d", m.ItemCount)
	if states := sessionStates(m); len(states) > 0 {
		row("state", "%s", strings.Join(states, ", "))
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
