package main

import (
	"bytes"
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

func newShowCmd(a *app) *cobra.Command {
	var (
		format          string
		full, subagents bool
	)
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
		RunE: func(cmd *cobra.Command, argv []string) (err error) {
			if a.json && !cmd.Flags().Changed("format") {
				format = "json"
			}
			switch format {
			case "text", "markdown", "md", "json", "jsonl":
			default:
				return usageError("use text, markdown, json or jsonl", "unknown format %q", format)
			}
			ctx := cmd.Context()
			st, m, err := a.resolve(ctx, argv[0])
			if err != nil {
				return err
			}
			if format == "jsonl" {
				_, entries, err := st.Load(ctx, m.Key)
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
			if format != "json" {
				// Long sessions page in a terminal (pager.go).
				wait := a.startPager()
				defer func() {
					if perr := wait(); err == nil {
						err = perr
					}
				}()
			}
			live, _, err := st.Items(ctx, m.Key, 0)
			if err != nil {
				return err
			}
			items := recall.PlainItems(live)
			var entries []recall.Entry
			if full {
				if _, entries, err = st.Load(ctx, m.Key); err != nil {
					return err
				}
			}
			var subs []subagentRecord
			if subagents {
				if subs, err = subagentRecords(ctx, st, m.Key); err != nil {
					return err
				}
			}
			switch format {
			case "json":
				if full {
					items = nil
					for _, p := range fullHistory(entries) {
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
				}{m, items, subs})
			case "markdown", "md":
				if full {
					if m.Title != "" {
						fmt.Fprintf(a.stdout, "# %s\n\n", m.Title)
					}
					err = writeFull(a.stdout, "markdown", entries)
				} else {
					err = transcript.Markdown(a.stdout, m.Title, items)
				}
				if err != nil {
					return err
				}
				return writeSubagents(a.stdout, "markdown", subs)
			}
			// Written whole, then with control characters escaped, so the
			// session's text cannot drive the terminal.
			var buf bytes.Buffer
			if err := writeMeta(&buf, m); err != nil {
				return err
			}
			if len(items) > 0 || full && len(entries) > 0 {
				fmt.Fprintln(&buf)
			}
			if full {
				err = writeFull(&buf, "text", entries)
			} else {
				err = transcript.Text(&buf, items)
			}
			if err == nil {
				err = writeSubagents(&buf, "text", subs)
			}
			if err != nil {
				return err
			}
			_, err = io.WriteString(a.stdout, escapeTerminal(buf.String()))
			return err
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "output format: text, markdown, json or jsonl")
	cmd.Flags().BoolVar(&full, "full", false, "show every item of the log, those compactions replaced and undo removed included")
	cmd.Flags().BoolVar(&subagents, "subagents", false, "add the transcripts of the session's subagents")
	return cmd
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
