package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/term"
	"github.com/mattn/go-runewidth"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/sessionref"
)

// errNoChoice reports that the user left the picker without choosing.
var errNoChoice = errors.New("no session chosen")

// isTerminal reports whether f is an *os.File open on a terminal.
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(file.Fd())
}

// pickSession lets the user choose among metas (newest first) in a
// full-screen list on the terminal: typing filters, the arrows move, Enter
// resumes, Esc cancels with errNoChoice. The filter matches titles, IDs
// and projects at once and, through search when it is not nil, the
// conversations' text a moment later: those sessions follow the title
// matches, each with the text that matched.
func pickSession(ctx context.Context, in io.Reader, out io.Writer, metas []recall.Meta, search contentSearch) (recall.Meta, error) {
	p := newPicker(metas, time.Now())
	p.search, p.ctx = search, ctx
	return runPicker(ctx, in, out, p)
}

// runPicker runs the picker p on the terminal and returns the choice.
func runPicker(ctx context.Context, in io.Reader, out io.Writer, p picker) (recall.Meta, error) {
	prog := tea.NewProgram(p, tea.WithInput(in), tea.WithOutput(out), tea.WithContext(ctx), tea.WithAltScreen())
	final, err := prog.Run()
	if err != nil {
		return recall.Meta{}, fmt.Errorf("session picker: %w", err)
	}
	if m := final.(picker); m.chosen != nil {
		return *m.chosen, nil
	}
	return recall.Meta{}, errNoChoice
}

// picker is the bubbletea model of the session picker.
type picker struct {
	all     []recall.Meta
	rows    []string // one rendered row per session of all
	keys    []string // lower-case text the filter searches, per session
	filter  string
	matches []int // indexes into all, in order
	cursor  int   // index into matches
	height  int
	chosen  *recall.Meta

	// The content search: search finds sessions by their text (nil: the
	// filter matches titles only); snippets holds the text shown beside
	// a session found that way, by index into all; gen numbers the
	// filter's edits, so a search of an older filter is dropped.
	search   contentSearch
	ctx      context.Context
	index    map[recall.Key]int
	snippets map[int]string
	gen      int
}

// contentSearch finds the sessions whose conversation text matches the
// filter, best first, with the text that matched.
type contentSearch func(ctx context.Context, filter string) ([]contentHit, error)

// contentHit is one session a contentSearch found.
type contentHit struct {
	key     recall.Key
	snippet string
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

// setSnippets shows each text beside its session, as content matches do.
func (p *picker) setSnippets(byKey map[recall.Key]string) {
	p.snippets = map[int]string{}
	for k, s := range byKey {
		if i, ok := p.index[k]; ok {
			p.snippets[i] = s
		}
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
		snippets = map[int]string{}
	}
	for _, h := range hits {
		if i, ok := p.index[h.key]; ok && !in[i] {
			in[i] = true
			matches = append(matches, i)
			snippets[i] = h.snippet
		}
	}
	p.matches, p.snippets = matches, snippets
}

func newPicker(metas []recall.Meta, now time.Time) picker {
	ids := make([]string, len(metas))
	for i, m := range metas {
		ids[i] = m.Key.Session
	}
	short := sessionref.ShortIDs(ids)
	p := picker{all: metas, height: 20, index: map[recall.Key]int{}}
	for i, m := range metas {
		p.index[m.Key] = i
		p.rows = append(p.rows, fmt.Sprintf("%-14s %s  %-10s %4d items", short[i], runewidth.FillRight(displayTitle(m, titleWidth), titleWidth), ago(m.Updated, now), m.ItemCount))
		p.keys = append(p.keys, strings.ToLower(m.Title+" "+m.Key.Session+" "+m.Key.Project))
	}
	p.refilter()
	return p
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
func (p picker) Init() tea.Cmd { return nil }

// Update implements tea.Model.
func (p picker) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		p.height = msg.Height
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

// snippetWidth is the display width of the text shown beside a session
// found by its content.
const snippetWidth = 60

// visible is how many rows fit under the header.
func (p picker) visible() int { return max(p.height-4, 3) }

// View implements tea.Model.
func (p picker) View() string {
	var b strings.Builder
	b.WriteString("Resume a session: type to filter, ↑/↓ to move, Enter to resume, Esc to cancel\n")
	fmt.Fprintf(&b, "> %s\n\n", p.filter)
	if len(p.matches) == 0 {
		b.WriteString("  (no session matches)\n")
		return b.String()
	}
	n := p.visible()
	start := max(0, min(p.cursor-n/2, len(p.matches)-n))
	for j := start; j < len(p.matches) && j < start+n; j++ {
		mark := "  "
		if j == p.cursor {
			mark = "▸ "
		}
		b.WriteString(mark + p.rows[p.matches[j]])
		if s, ok := p.snippets[p.matches[j]]; ok {
			b.WriteString("  " + runewidth.Truncate(escapeControl(s), snippetWidth, "…"))
		}
		b.WriteString("\n")
	}
	return b.String()
}
