package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	tea "github.com/charmbracelet/bubbletea"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/termsafe"
	"github.com/recallkit/recall/internal/transcript"
)

// itemPicker is the bubbletea model of /rewind's picker on a terminal:
// the newest items of the view, oldest at the top, the cursor on the
// newest. Up and Down move, Enter picks, Esc or Ctrl-C leaves.
type itemPicker struct {
	rows   []string // one line an item
	refs   []recall.ItemRef
	more   bool // the view holds older items than rows
	cursor int
	height int
	chosen *recall.ItemRef
}

// pickItem lets the person pick one of the newest items of key's view on
// the terminal; errNoChoice when they leave.
func pickItem(ctx context.Context, in io.Reader, out io.Writer, st recall.Store, key recall.Key) (recall.ItemRef, error) {
	page, err := recall.NewSession(st, key).ReadItems(ctx, recall.ItemPageOptions{Limit: rewindListed})
	if err != nil {
		return recall.ItemRef{}, err
	}
	if len(page.Items) == 0 {
		return recall.ItemRef{}, errNoChoice
	}
	items := slices.Clone(page.Items)
	slices.Reverse(items)
	p := itemPicker{more: page.More, cursor: len(items) - 1}
	for _, l := range items {
		p.rows = append(p.rows, itemRow(l))
		p.refs = append(p.refs, l.Ref)
	}
	return runChooser(ctx, in, out, p, "item picker", func(p itemPicker) *recall.ItemRef { return p.chosen })
}

// itemRow is the line that shows an item: its ref, what it is and the
// start of its text.
func itemRow(l recall.LiveItem) string {
	p := transcript.Describe(l.Item)
	text := p.Text
	if p.Name != "" {
		text = p.Name + " " + text
	}
	return fmt.Sprintf("%8s  %-11s  %s", l.Ref, p.Kind, termsafe.Escape(clip(text, 70)))
}

func (p itemPicker) Init() tea.Cmd { return nil }

func (p itemPicker) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		p.height = msg.Height
	case tea.KeyMsg:
		switch msg.Type {
		case tea.KeyCtrlC, tea.KeyEsc:
			return p, tea.Quit
		case tea.KeyEnter:
			ref := p.refs[p.cursor]
			p.chosen = &ref
			return p, tea.Quit
		case tea.KeyUp:
			p.cursor = max(p.cursor-1, 0)
		case tea.KeyDown:
			p.cursor = min(p.cursor+1, len(p.rows)-1)
		}
	}
	return p, nil
}

func (p itemPicker) View() string {
	var b strings.Builder
	b.WriteString("Rewind to just after which item? The items after it leave the view; /redo brings them back.\n")
	b.WriteString("↑/↓ move · Enter rewinds · Esc leaves\n\n")
	if p.more {
		b.WriteString("  … older items: /rewind SEQ reaches them\n")
	}
	from, to := 0, len(p.rows)
	if room := p.height - 5; room > 0 && len(p.rows) > room {
		from = min(max(p.cursor-room+1, 0), len(p.rows)-room)
		to = from + room
	}
	for i := from; i < to; i++ {
		mark := "  "
		if i == p.cursor {
			mark = "> "
		}
		b.WriteString(mark + p.rows[i] + "\n")
	}
	return b.String()
}
