package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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
// resumes, Esc cancels with errNoChoice.
func pickSession(ctx context.Context, in io.Reader, out io.Writer, metas []recall.Meta) (recall.Meta, error) {
	p := tea.NewProgram(newPicker(metas, time.Now()), tea.WithInput(in), tea.WithOutput(out), tea.WithContext(ctx), tea.WithAltScreen())
	final, err := p.Run()
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
}

func newPicker(metas []recall.Meta, now time.Time) picker {
	ids := make([]string, len(metas))
	for i, m := range metas {
		ids[i] = m.Key.Session
	}
	short := sessionref.ShortIDs(ids)
	p := picker{all: metas, height: 20}
	for i, m := range metas {
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
}

// Init implements tea.Model.
func (p picker) Init() tea.Cmd { return nil }

// Update implements tea.Model.
func (p picker) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		p.height = msg.Height
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
			}
		case tea.KeyCtrlU:
			p.filter = ""
			p.refilter()
		case tea.KeyRunes, tea.KeySpace:
			p.filter += string(msg.Runes)
			p.cursor = 0
			p.refilter()
		}
	}
	return p, nil
}

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
		b.WriteString(mark + p.rows[p.matches[j]] + "\n")
	}
	return b.String()
}
