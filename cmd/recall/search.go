package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-runewidth"
	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/internal/pagefilter"
	"github.com/recallkit/recall/internal/sessionref"
	"github.com/recallkit/recall/internal/termsafe"
	"github.com/recallkit/recall/search"
)

// searchFlags are the flags of recall search.
type searchFlags struct {
	all, archived, wholeLog, interactive bool
	dir, role, since, cursor, source     string
	limit                                int
}

func newSearchCmd(a *app) *cobra.Command {
	var f searchFlags
	cmd := &cobra.Command{
		Use:   "search QUERY...",
		Short: "Find the sessions and messages that mention something",
		Long: `Search the conversations of this project (--all: every project), newest
hits first: message text of every role, tool calls and their output, and
session titles. The words of the query may come in any order; a "quoted
phrase" must appear as written; case does not matter; any part of a word
matches, so Chinese or Japanese text without spaces is found.

Each hit shows the session's title, short ID, age and role (with --all or
--source, the tool the session came from: recall, or the import it came in
by), and the text around the match (highlighted on a terminal). --source
keeps only the hits in sessions of one tool. Popped, removed, cleared and
compacted-away items are left out unless --whole-log asks for them.
-i lists the sessions that match and resumes the one you pick with Enter.

The file store and the SQL stores answer from an index; other stores are
read whole.`,
		Example: `  recall search tokenizer
  recall search '"connection refused"' --all --since 7d
  recall search 张三 --role user --json
  recall search migration --all --source codex
  recall search parser -i`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			return a.search(cmd, strings.Join(argv, " "), f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.all, "all", "a", false, "search every project")
	fl.StringVar(&f.dir, "project", "", "search the sessions of this project directory (default: the working directory)")
	fl.BoolVar(&f.archived, "archived", false, "search archived sessions too")
	fl.StringVar(&f.role, "role", "", "only hits of this `ROLE`: user, assistant, system, tool or title")
	fl.StringVar(&f.since, "since", "", "only hits newer than this `AGE` (30d, 12h, 90m)")
	fl.IntVarP(&f.limit, "limit", "n", recall.DefaultSearchLimit, fmt.Sprintf("show at most `N` hits (1-%d)", recall.MaxSearchLimit))
	fl.StringVar(&f.source, "source", "", "only hits in the sessions that came from `TOOL`: recall, or an import's name (claude-code, codex, ...)")
	fl.StringVar(&f.cursor, "cursor", "", "continue after the page whose \"next\" (in --json output) is `CURSOR`")
	fl.BoolVar(&f.wholeLog, "whole-log", false, "search removed, popped, cleared and compacted-away items too")
	fl.BoolVarP(&f.interactive, "interactive", "i", false, "pick one of the matching sessions and resume it (needs a terminal)")
	return cmd
}

// search runs recall search.
func (a *app) search(cmd *cobra.Command, query string, f searchFlags) error {
	ctx := cmd.Context()
	opts := recall.SearchOptions{
		Query: query, IncludeArchived: f.archived, Role: f.role,
		WholeLog: f.wholeLog, Limit: f.limit, Cursor: f.cursor,
	}
	switch {
	case f.limit < 1 || f.limit > recall.MaxSearchLimit:
		return usageError(fmt.Sprintf("--limit takes 1 to %d", recall.MaxSearchLimit), "--limit %d is out of range", f.limit)
	case f.all && f.dir != "":
		return usageError("use one of them", "--all and --project both choose where to search")
	case f.interactive && a.json:
		return usageError("use one of them", "--interactive and --json both choose the output")
	}
	if err := checkSource(cmd, f.source); err != nil {
		return err
	}
	if f.since != "" {
		d, err := age.Parse(f.since)
		if err != nil {
			return usageError("--since takes an age such as 7d or 12h", "%v", err)
		}
		opts.Since = time.Now().Add(-d)
	}
	if !f.all {
		p, err := project(f.dir)
		if err != nil {
			return err
		}
		opts.Project = p
	}
	if f.cursor != "" {
		if _, err := search.ParseCursor(f.cursor); err != nil {
			return usageError(cursorHint("search"), "bad search cursor %q", f.cursor)
		}
	}
	if err := search.Check(opts); err != nil {
		return usageError(`words in any order, "quoted phrases"; --role takes user, assistant, system, tool or title`, "%v", err)
	}
	if f.interactive && (!isTerminal(a.stdin) || !isTerminal(a.stdout)) {
		return usageError("run it without -i to print the hits", "--interactive needs a terminal")
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	keep := pagefilter.OfSource(f.source)
	page, err := pagefilter.Search(ctx, st, opts, keep)
	if errors.Is(err, recall.ErrInvalidQuery) {
		return usageError(`words in any order, "quoted phrases"`, "%v", err)
	}
	if err != nil {
		return err
	}
	if a.json {
		return a.printJSON(hitsJSON(page))
	}
	if len(page.Hits) == 0 {
		where := "this project"
		if f.all {
			where = "any project"
		}
		if f.source != "" {
			where += "'s sessions from " + f.source
		}
		a.notef("no hits for %s in %s\n", query, where)
		return nil
	}
	if f.interactive {
		return a.pickHit(cmd, st, opts, keep, page)
	}
	scope, err := sessionref.All(ctx, st, "", true)
	if err != nil {
		return err
	}
	color := isTerminal(a.stdout) && os.Getenv("NO_COLOR") == ""
	cols := columns{project: f.all, source: f.all || f.source != ""}
	if err := writeHits(a.stdout, page, scope, cols, color, time.Now()); err != nil {
		return err
	}
	if page.Next != "" {
		a.notef("(more hits: --limit %d, or --json and --cursor to page)\n", min(2*f.limit, recall.MaxSearchLimit))
	}
	return nil
}

// cursorHint is the hint of a --cursor that command (ls or search)
// cannot read.
func cursorHint(command string) string {
	return fmt.Sprintf("the --cursor value is invalid: it takes the \"next\" of a previous 'recall %s --json' page, as printed", command)
}

// searchPageJSON is what search --json prints: the hits, each with the
// source of its session, and the cursor of the next page.
type searchPageJSON struct {
	Hits []hitJSON `json:"hits"`
	Next string    `json:"next,omitempty"`
}

// hitJSON is a hit in search --json: recall.Hit's fields and the source
// of its session (importer.Source).
type hitJSON struct {
	recall.Hit
	Source string `json:"source"`
}

// hitsJSON returns page as search --json prints it.
func hitsJSON(page pagefilter.SearchPage) searchPageJSON {
	out := searchPageJSON{Hits: make([]hitJSON, 0, len(page.Hits)), Next: page.Next}
	for _, h := range page.Hits {
		out.Hits = append(out.Hits, hitJSON{Hit: h, Source: importer.Source(page.Sessions[h.Key])})
	}
	return out
}

// writeHits prints the hits of page: a line with the title, short ID, age
// and role (and the session's source and project when cols asks for
// them), then the snippet, indented, its matches highlighted when color.
// Short IDs are unique among scope.
func writeHits(w io.Writer, page pagefilter.SearchPage, scope []recall.Meta, cols columns, color bool, now time.Time) error {
	hits := page.Hits
	ids := make([]string, 0, len(hits)+len(scope))
	for _, h := range hits {
		ids = append(ids, h.Key.Session)
	}
	short := sessionref.ShortIDs(append(ids, sessionIDs(scope)...))
	var b strings.Builder
	for i, h := range hits {
		title := h.Title
		if title == "" {
			title = "(untitled)"
		}
		head := []string{runewidth.Truncate(termsafe.Escape(title), titleWidth, "…"), short[i], age.Ago(h.Time, now), h.Role}
		if cols.source {
			head = append(head, termsafe.Escape(importer.Source(page.Sessions[h.Key])))
		}
		if cols.project {
			head = append(head, h.Key.Project)
		}
		line := strings.Join(head, "  ")
		if color {
			line = "\x1b[1m" + line + "\x1b[0m"
		}
		b.WriteString(line + "\n    " + highlight(h.Snippet, h.Matches, color) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// highlight renders a snippet with its control characters escaped and,
// when color, its matches in bold yellow. Spans out of range (from a
// store that got them wrong) are ignored rather than trusted.
func highlight(snippet string, spans []recall.Span, color bool) string {
	var b strings.Builder
	end := 0
	for _, s := range spans {
		if s.Start < end || s.End <= s.Start || s.End > len(snippet) {
			continue
		}
		b.WriteString(termsafe.Escape(snippet[end:s.Start]))
		if color {
			b.WriteString("\x1b[1;33m" + termsafe.Escape(snippet[s.Start:s.End]) + "\x1b[0m")
		} else {
			b.WriteString(termsafe.Escape(snippet[s.Start:s.End]))
		}
		end = s.End
	}
	b.WriteString(termsafe.Escape(snippet[end:]))
	return b.String()
}

// pickHit lets the user choose among the sessions of the hits of opts
// that keep accepts, each shown with the text of its newest hit, and
// resumes the one chosen with recall chat. The picker opens on the
// sessions of first (the first page of hits) and reads the rest while the
// user looks, so every matching session can be reached; Tab switches
// between the hits of this project and every project's.
func (a *app) pickHit(cmd *cobra.Command, st recall.Store, opts recall.SearchOptions, keep pagefilter.Keep, first pagefilter.SearchPage) error {
	ctx := cmd.Context()
	var found hitSessions
	found.add(first)
	here := opts.Project
	if here == "" {
		here, _ = project("") // Tab's "this project"; "" (no working directory): every project's
	}
	p := newPicker(found.metas, time.Now())
	p.setSnippets(found.hits)
	p.ctx, p.project, p.allProjects, p.more = ctx, here, opts.Project == "", first.Next != ""
	p.load = func(ctx context.Context, all bool) ([]recall.Meta, []contentHit, error) {
		o := opts
		o.Project = here
		if all {
			o.Project = ""
		}
		metas, hits, err := searchSessions(ctx, st, o, keep)
		if hits == nil {
			hits = []contentHit{} // not nil: the picker keeps its snippets on a nil
		}
		return metas, hits, err
	}
	p.searchIn = func(bool) contentSearch { return nil } // typing filters the sessions found
	m, err := runPicker(ctx, a.stdin, a.stdout, p)
	if err != nil { // errNoChoice too: exit 130
		return err
	}
	return a.resume(cmd.Context(), m.Key)
}

// searchSessions reads the sessions keep accepts of every hit of opts
// from its cursor on, a page of hits at a time, each with the text of its
// newest hit.
func searchSessions(ctx context.Context, st recall.Store, opts recall.SearchOptions, keep pagefilter.Keep) ([]recall.Meta, []contentHit, error) {
	opts.Limit = recall.MaxSearchLimit
	var found hitSessions
	for {
		page, err := pagefilter.Search(ctx, st, opts, keep)
		if err != nil {
			return nil, nil, err
		}
		found.add(page)
		if page.Next == "" || len(page.Hits) == 0 {
			return found.metas, found.hits, nil
		}
		opts.Cursor = page.Next
	}
}

// hitSessions are the sessions search hits are in, each once, in the
// order of their first (newest) hit, with that hit.
type hitSessions struct {
	metas []recall.Meta
	hits  []contentHit
	seen  map[recall.Key]bool
}

// add adds the sessions of the hits of page not seen yet, with the
// metadata the page holds of them.
func (f *hitSessions) add(page pagefilter.SearchPage) {
	if f.seen == nil {
		f.seen = map[recall.Key]bool{}
	}
	for _, h := range firstHits(page.Hits, f.seen) {
		f.metas = append(f.metas, page.Sessions[h.key])
		f.hits = append(f.hits, h)
	}
}

// firstHits returns the first of hits in each session not in seen, in
// order, and adds those sessions to seen.
func firstHits(hits []recall.Hit, seen map[recall.Key]bool) []contentHit {
	var out []contentHit
	for _, h := range hits {
		if !seen[h.Key] {
			seen[h.Key] = true
			out = append(out, contentHit{key: h.Key, snippet: h.Snippet, matches: h.Matches})
		}
	}
	return out
}

// resume runs recall chat --resume on key, as if typed.
func (a *app) resume(ctx context.Context, key recall.Key) error {
	chat := newChatCmd(a)
	chat.SetContext(ctx)
	if err := chat.Flags().Set("resume", key.String()); err != nil {
		return err
	}
	return chat.RunE(chat, nil)
}

// storeSearch is the picker's content search over st: the sessions of
// project (every project when "") whose text matches filter, newest hit
// first, each with the snippet of its newest hit. A filter that is not a
// valid query (an open quote while typing) finds nothing.
func storeSearch(st recall.Store, project string) contentSearch {
	return func(ctx context.Context, filter string) ([]contentHit, error) {
		opts := recall.SearchOptions{Query: filter, Project: project, Limit: pickerSearchHits}
		if search.Check(opts) != nil {
			return nil, nil
		}
		page, err := recall.Search(ctx, st, opts)
		if err != nil {
			return nil, err
		}
		return firstHits(page.Hits, map[recall.Key]bool{}), nil
	}
}
