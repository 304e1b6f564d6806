package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"
	"github.com/mattn/go-runewidth"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/internal/sessionref"
	"github.com/recallkit/recall/internal/termsafe"
	"github.com/recallkit/recall/title"
)

// errNoChoice reports that the user left the picker without choosing
// (Esc or Ctrl-C). A command that ends with it exits 130, as a process
// the user interrupted does, and prints nothing.
var errNoChoice = &cliError{err: errors.New("no session chosen"), code: exitNoChoice}

// exitNoChoice is the exit status of a command left in the picker: the
// status of a process ended by SIGINT.
const exitNoChoice = 130

// isTerminal reports whether f is an *os.File open on a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(file.Fd())
}

// pickFromStore lets the user choose a session of project (metas, newest
// first, already read; every project's when all) in a full-screen list on
// the terminal: typing filters by title, first prompt, ID and project
// and, a moment later, by the conversations' text (recall.Search); Tab
// switches between this project's sessions and every project's; the
// arrows move, Enter resumes, Esc and Ctrl-C leave with errNoChoice.
//
// first may be the first page only (more): the picker shows it at once
// and reads the rest while the user looks.
func pickFromStore(ctx context.Context, in io.Reader, out io.Writer, st recall.Store, project string, first opening) (recall.Meta, error) {
	p := newPicker(first.metas, time.Now())
	p.ctx, p.project, p.allProjects, p.more = ctx, project, first.all, first.more
	p.load = func(ctx context.Context, all bool) ([]recall.Meta, []contentHit, error) {
		scope := project
		if all {
			scope = ""
		}
		metas, err := sessionref.All(ctx, st, scope, false)
		return metas, nil, err
	}
	p.searchIn = func(all bool) contentSearch {
		if all {
			return storeSearch(st, "")
		}
		return storeSearch(st, project)
	}
	p.search = p.searchIn(first.all)
	return runPicker(ctx, in, out, p)
}

// pickerFirstPage is how many sessions the picker reads before it opens;
// it reads the rest once open, so it opens as fast over 10,000 sessions
// as over 100.
const pickerFirstPage = 200

// opening is what the picker opens with.
type opening struct {
	metas []recall.Meta
	more  bool // metas is the first page only: there are others
	all   bool // metas are every project's, since the project has none
}

// firstSessions returns what the picker opens with: the newest sessions
// of project (the first page only when page, with more set when there
// are others; all of them otherwise) or, when project has none, every
// project's (all set).
func firstSessions(ctx context.Context, st recall.Store, project string, page bool) (opening, error) {
	read := func(project string) ([]recall.Meta, bool, error) {
		if !page {
			metas, err := sessionref.All(ctx, st, project, false)
			return metas, false, err
		}
		p, err := st.List(ctx, project, recall.ListOptions{Limit: pickerFirstPage})
		return p.Sessions, p.Next != "", err
	}
	metas, more, err := read(project)
	if err != nil || len(metas) > 0 {
		return opening{metas: metas, more: more}, err
	}
	metas, more, err = read("")
	return opening{metas: metas, more: more, all: true}, err
}

// runPicker runs the picker p on the terminal and returns the choice.
func runPicker(ctx context.Context, in io.Reader, out io.Writer, p picker) (recall.Meta, error) {
	return runChooser(ctx, in, out, p, "session picker", func(p picker) *recall.Meta { return p.chosen })
}

// runChooser runs the bubbletea model m full-screen on the terminal
// until it quits, and returns what chosen finds in its final state:
// errNoChoice when that is nil (the user left without choosing). what
// names the model in an error.
func runChooser[M tea.Model, T any](ctx context.Context, in io.Reader, out io.Writer, m M, what string, chosen func(M) *T) (T, error) {
	var none T
	prog := tea.NewProgram(m, tea.WithInput(in), tea.WithOutput(out), tea.WithContext(ctx), tea.WithAltScreen())
	final, err := prog.Run()
	if err != nil {
		return none, fmt.Errorf("%s: %w", what, err)
	}
	if c := chosen(final.(M)); c != nil {
		return *c, nil
	}
	return none, errNoChoice
}

// picker is the bubbletea model of the session picker.
type picker struct {
	all     []recall.Meta
	short   []string // the short ID of each session of all
	keys    []string // lower-case text the filter searches, per session
	now     time.Time
	filter  string
	matches []int // indexes into all, in order
	cursor  int   // index into matches
	height  int
	width   int // the terminal's; 0: unknown, rows are not cut
	chosen  *recall.Meta

	// Tab: load reads the sessions of the current project (or of every
	// project), with the text of a hit under each when it found them by
	// their text (search -i), and searchIn returns the content search of
	// either; nil load: Tab does nothing. allProjects is the scope shown
	// (rows then show their project); loadGen numbers the Tab presses,
	// so a slow load of an older one is dropped.
	project     string
	allProjects bool
	load        func(ctx context.Context, all bool) ([]recall.Meta, []contentHit, error)
	searchIn    func(all bool) contentSearch
	loadGen     int
	loadErr     error
	// more is set while all is only the first page of the scope: Init
	// reads the whole of it.
	more bool

	// The content search: search finds sessions by their text (nil: the
	// filter matches titles only); snippets holds the hit whose text is
	// shown under a session found that way; gen numbers the filter's
	// edits, so a search of an older filter is dropped.
	search   contentSearch
	ctx      context.Context
	index    map[recall.Key]int
	snippets map[recall.Key]contentHit
	gen      int
}

// contentSearch finds the sessions whose conversation text matches the
// filter, best first, with the text that matched.
type contentSearch func(ctx context.Context, filter string) ([]contentHit, error)

// contentHit is one session a contentSearch found, with the text of
// its hit and the byte ranges of that text that matched.
type contentHit struct {
	key     recall.Key
	snippet string
	matches []recall.Span
}

const (
	// pickerDebounce is how long the filter must stay unchanged before
	// the picker searches the text: typing a word runs one search.
	pickerDebounce = 150 * time.Millisecond
	// pickerSearchHits is how many hits one content search reads.
	pickerSearchHits = 100
)

// Messages of the content search: the debounce timer of filter edit gen
// fired; the search of edit gen finished.
type (
	searchTick struct{ gen int }
	searchDone struct {
		gen  int
		hits []contentHit
	}
)

// searchLater returns the command that searches the text once the filter
// has stayed unchanged for pickerDebounce, or nil when there is nothing
// to search.
func (p picker) searchLater() tea.Cmd {
	if p.search == nil || strings.TrimSpace(p.filter) == "" {
		return nil
	}
	gen := p.gen
	return tea.Tick(pickerDebounce, func(time.Time) tea.Msg { return searchTick{gen: gen} })
}

// setSnippets shows the text of each hit under its session, as content
// matches do.
func (p *picker) setSnippets(hits []contentHit) {
	p.snippets = make(map[recall.Key]contentHit, len(hits))
	for _, h := range hits {
		p.snippets[h.key] = h
	}
}

// addContent adds the sessions hits found after the title matches, in
// the order found, each once.
func (p *picker) addContent(hits []contentHit) {
	in := map[int]bool{}
	for _, i := range p.matches {
		in[i] = true
	}
	matches := slices.Clone(p.matches)
	snippets := maps.Clone(p.snippets)
	if snippets == nil {
		snippets = map[recall.Key]contentHit{}
	}
	for _, h := range hits {
		if i, ok := p.index[h.key]; ok && !in[i] {
			in[i] = true
			matches = append(matches, i)
			snippets[h.key] = h
		}
	}
	p.matches, p.snippets = matches, snippets
}

// newPicker returns a picker over metas. Rows are rendered when shown,
// so opening it over many sessions costs a sort of their IDs and one
// lower-casing of each one's searchable text.
func newPicker(metas []recall.Meta, now time.Time) picker {
	p := picker{height: 20, now: now}
	p.setSessions(metas)
	return p
}

// setSessions makes metas the sessions the picker lists, keeping the
// filter.
func (p *picker) setSessions(metas []recall.Meta) {
	p.all, p.short = metas, sessionref.ShortIDs(sessionIDs(metas))
	p.index = make(map[recall.Key]int, len(metas))
	p.keys = make([]string, len(metas))
	for i, m := range metas {
		p.index[m.Key] = i
		p.keys[i] = strings.ToLower(m.Title + "\x00" + m.FirstPrompt + "\x00" + m.Key.Session + "\x00" + m.Key.Project)
	}
	p.cursor = 0
	p.refilter()
}

// isFallbackTitle reports whether t is the title a session gets when no
// model could title it ("Session 2006-01-02 15:04"): it tells sessions
// apart less than their first prompt does.
func isFallbackTitle(t string) bool {
	_, err := time.ParseInLocation(title.FallbackLayout, t, time.Local)
	return err == nil
}

// rowText is what a row shows of a session: its title, or its first
// prompt when the title is empty or a fallback, with the pinned and
// archived marks, escaped for the terminal.
func rowText(m recall.Meta) string {
	t := m.Title
	if (t == "" || isFallbackTitle(t)) && m.FirstPrompt != "" {
		t = "“" + m.FirstPrompt + "”"
	}
	if t == "" {
		t = "(untitled)"
	}
	t = termsafe.Escape(t)
	if m.Archived {
		t = "[archived] " + t
	}
	if m.Pinned {
		t = "[pinned] " + t
	}
	return t
}

// projectWidth is the display width of the project column.
const projectWidth = 28

// Display widths of a row's parts: the mark and short ID before the
// title, the age and item count after it, and the narrowest title a row
// is cut to so that its project shows on a narrow terminal.
const (
	rowHead      = 2 + 9 + 1
	rowTail      = 2 + 10 + 1 + 9
	minRowTitle  = 20
	snippetStart = rowHead // the text of a hit is shown under the title
)

// row renders the session all[i] as one line: short ID, title or first
// prompt, age, item count, and, when the list is every project's, its
// project, for which a title is cut shorter on a narrow terminal.
func (p picker) row(i int) string {
	m := p.all[i]
	width := titleWidth
	if p.allProjects && p.width > 0 {
		width = max(minRowTitle, min(titleWidth, p.width-rowHead-rowTail-2-projectWidth))
	}
	line := fmt.Sprintf("%-9s %s  %-10s %9s", p.short[i], runewidth.FillRight(runewidth.Truncate(rowText(m), width, "…"), width),
		age.Ago(m.Updated, p.now), count(m.ItemCount, "item"))
	if p.allProjects {
		line += "  " + shortProject(m.Key.Project, projectWidth)
	}
	return line
}

// shortProject cuts a project key to width columns from the left: its
// end, the folder's own name, is what tells projects apart.
func shortProject(p string, width int) string {
	if len(p) <= width {
		return p
	}
	return "…" + p[len(p)-width+1:]
}

// refilter keeps the sessions whose title, ID or project contains every
// word of the filter, case-insensitively.
func (p *picker) refilter() {
	words := strings.Fields(strings.ToLower(p.filter))
	// A new slice: Update works on copies of the model, which must not
	// share a backing array.
	p.matches = make([]int, 0, len(p.keys))
	for i, k := range p.keys {
		ok := true
		for _, w := range words {
			if !strings.Contains(k, w) {
				ok = false
				break
			}
		}
		if ok {
			p.matches = append(p.matches, i)
		}
	}
	p.cursor = min(p.cursor, max(len(p.matches)-1, 0))
	if p.search != nil {
		// A new filter: the text matches of the old one go.
		p.gen++
		p.snippets = nil
	}
}

// Init implements tea.Model.
func (p picker) Init() tea.Cmd {
	if !p.more || p.load == nil {
		return nil
	}
	return p.loadCmd()
}

// loadCmd returns the command that reads the sessions of the scope shown.
func (p picker) loadCmd() tea.Cmd {
	load, ctx, all, gen := p.load, p.ctx, p.allProjects, p.loadGen
	return func() tea.Msg {
		metas, hits, err := load(ctx, all)
		return pickerLoaded{gen: gen, metas: metas, hits: hits, err: err}
	}
}

// Update implements tea.Model.
func (p picker) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		p.height, p.width = msg.Height, msg.Width
	case pickerLoaded:
		if msg.gen != p.loadGen {
			return p, nil // Tab was pressed again since
		}
		p.loadErr, p.more = msg.err, false
		if msg.err == nil && msg.hits != nil {
			p.setSnippets(msg.hits)
		}
		if msg.err == nil {
			// The session under the cursor stays under it.
			var at *recall.Key
			if p.cursor < len(p.matches) {
				k := p.all[p.matches[p.cursor]].Key
				at = &k
			}
			p.search = p.searchIn(p.allProjects)
			p.setSessions(msg.metas)
			if at != nil {
				if i := slices.IndexFunc(p.matches, func(j int) bool { return p.all[j].Key == *at }); i >= 0 {
					p.cursor = i
				}
			}
			return p, p.searchLater()
		}
	case searchTick:
		if msg.gen != p.gen {
			return p, nil // the filter changed since
		}
		search, ctx, filter, gen := p.search, p.ctx, p.filter, p.gen
		return p, func() tea.Msg {
			hits, err := search(ctx, filter)
			if err != nil {
				return nil // the title matches stay; a failing store is not the picker's to report
			}
			return searchDone{gen: gen, hits: hits}
		}
	case searchDone:
		if msg.gen == p.gen {
			p.addContent(msg.hits)
		}
	case tea.KeyMsg:
		switch msg.Type {
		case tea.KeyCtrlC, tea.KeyEsc:
			return p, tea.Quit
		case tea.KeyTab:
			if p.load == nil {
				return p, nil
			}
			p.allProjects = !p.allProjects
			p.loadGen++
			return p, p.loadCmd()
		case tea.KeyEnter:
			if len(p.matches) > 0 {
				m := p.all[p.matches[p.cursor]]
				p.chosen = &m
			}
			return p, tea.Quit
		case tea.KeyUp, tea.KeyCtrlP:
			p.cursor = max(p.cursor-1, 0)
		case tea.KeyDown, tea.KeyCtrlN:
			p.cursor = min(p.cursor+1, max(len(p.matches)-1, 0))
		case tea.KeyPgUp:
			p.cursor = max(p.cursor-p.visible(), 0)
		case tea.KeyPgDown:
			p.cursor = min(p.cursor+p.visible(), max(len(p.matches)-1, 0))
		case tea.KeyBackspace:
			if r := []rune(p.filter); len(r) > 0 {
				p.filter = string(r[:len(r)-1])
				p.refilter()
				return p, p.searchLater()
			}
		case tea.KeyCtrlU:
			p.filter = ""
			p.refilter()
		case tea.KeyRunes, tea.KeySpace:
			p.filter += string(msg.Runes)
			p.cursor = 0
			p.refilter()
			return p, p.searchLater()
		}
	}
	return p, nil
}

// pickerLoaded is the message of a load: the sessions of the scope Tab
// press gen chose, and the hits to show under them (nil: the load did
// not search).
type pickerLoaded struct {
	gen   int
	metas []recall.Meta
	hits  []contentHit
	err   error
}

// snippetWidth is the display width of the text shown under a session
// found by its content when the terminal's width is unknown.
const snippetWidth = 80

// visible is how many rows fit under the header: a session found by its
// text takes two lines, its row and the text.
func (p picker) visible() int {
	lines := p.height - 4
	if len(p.snippets) > 0 {
		lines /= 2
	}
	return max(lines, 3)
}

// View implements tea.Model.
func (p picker) View() string {
	var b strings.Builder
	scope, other := "this project", "all projects"
	if p.allProjects {
		scope, other = other, scope
	}
	tab := ""
	if p.load != nil {
		tab = " · Tab: " + other
	}
	total := strconv.Itoa(len(p.all))
	if p.more {
		total += "+" // the rest is being read
	}
	fmt.Fprintf(&b, "Resume a session of %s (%s) · type to filter · ↑↓ move · Enter resume%s · Esc cancel\n", scope, total, tab)
	fmt.Fprintf(&b, "> %s\n", termsafe.Escape(p.filter))
	if p.loadErr != nil {
		fmt.Fprintf(&b, "  (could not list the sessions: %s)\n", termsafe.Escape(p.loadErr.Error()))
	} else {
		b.WriteString("\n")
	}
	if len(p.matches) == 0 {
		if len(p.all) == 0 && !p.allProjects && p.load != nil {
			b.WriteString("  (no session in this project: Tab shows every project's)\n")
		} else {
			b.WriteString("  (no session matches)\n")
		}
		return b.String()
	}
	n := p.visible()
	start := max(0, min(p.cursor-n/2, len(p.matches)-n))
	for j := start; j < len(p.matches) && j < start+n; j++ {
		mark := "  "
		if j == p.cursor {
			mark = "▸ "
		}
		line := mark + p.row(p.matches[j])
		if p.width > 0 {
			line = runewidth.Truncate(line, p.width, "…")
		}
		b.WriteString(line + "\n")
		if h, ok := p.snippets[p.all[p.matches[j]].Key]; ok {
			width := snippetWidth
			if p.width > 0 {
				width = max(p.width-snippetStart, 10)
			}
			b.WriteString(strings.Repeat(" ", snippetStart) + fitSnippet(h.snippet, h.matches, width) + "\n")
		}
	}
	return b.String()
}

// fitSnippet cuts snippet (its control characters escaped) to width
// columns around its first match, so that the match shows whole: about a
// third of the room left is given to the text before it, more when the
// text after it is short. A cut side is marked "…". Spans out of range
// (from a store that got them wrong) are ignored; with none, the snippet
// is cut at its end.
func fitSnippet(snippet string, spans []recall.Span, width int) string {
	whole := termsafe.Escape(snippet)
	if runewidth.StringWidth(whole) <= width {
		return whole
	}
	if len(spans) == 0 || !validSpan(snippet, spans[0]) {
		return runewidth.Truncate(whole, width, "…")
	}
	s := spans[0]
	before, match, after := termsafe.Escape(snippet[:s.Start]), termsafe.Escape(snippet[s.Start:s.End]), termsafe.Escape(snippet[s.End:])
	wb, wm, wa := runewidth.StringWidth(before), runewidth.StringWidth(match), runewidth.StringWidth(after)
	room := width - wm
	if room < 2 { // the match alone fills the line
		return runewidth.Truncate(match+after, width, "…")
	}
	keep := min(wb, max(room/3, room-wa)) // columns of the text before
	if keep < wb {
		before = runewidth.TruncateLeft(before, wb-keep+1, "…")
	}
	return before + match + runewidth.Truncate(after, width-runewidth.StringWidth(before)-wm, "…")
}

// validSpan reports whether s is a non-empty range of snippet that starts
// and ends between characters.
func validSpan(snippet string, s recall.Span) bool {
	return s.Start >= 0 && s.Start < s.End && s.End <= len(snippet) &&
		utf8.RuneStart(snippet[s.Start]) && (s.End == len(snippet) || utf8.RuneStart(snippet[s.End]))
}
