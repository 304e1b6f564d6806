package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/bubbles/cursor"
	"github.com/charmbracelet/bubbles/key"
	"github.com/charmbracelet/bubbles/textarea"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
)

// errInterrupt is what the line editor returns when Ctrl-C is pressed on
// an empty line.
var errInterrupt = errors.New("interrupted")

// historyMax bounds the entries a project's input history keeps.
const historyMax = 1000

// lineEditor reads the REPL's input in a terminal: a multi-line editor
// (bubbles' textarea) with the usual keys and an input history kept in a
// file, one JSON string a line.
type lineEditor struct {
	in    io.Reader
	out   io.Writer
	file  string // the history file ("" keeps the history in memory)
	hist  []string
	lines int // entries in the file, up to twice historyMax
}

// newLineEditor returns an editor whose history is the file, read now
// when it exists. The file is created by the first entry saved.
func newLineEditor(in io.Reader, out io.Writer, file string) *lineEditor {
	e := &lineEditor{in: in, out: out, file: file}
	e.hist, e.lines = loadHistory(file)
	return e
}

// historyFile returns the file of the project's input history under home.
func historyFile(home, project string) string {
	sum := sha256.Sum256([]byte(project))
	return filepath.Join(home, "history", hex.EncodeToString(sum[:8])+".jsonl")
}

// loadHistory reads the newest historyMax entries of file, and how many
// lines it has; a missing or damaged file gives what could be read.
func loadHistory(file string) ([]string, int) {
	if file == "" {
		return nil, 0
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, 0
	}
	defer f.Close()
	var (
		hist  []string
		lines int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		lines++
		var s string
		if json.Unmarshal(sc.Bytes(), &s) == nil && s != "" {
			hist = append(hist, s)
		}
	}
	if len(hist) > historyMax {
		hist = hist[len(hist)-historyMax:]
	}
	return hist, lines
}

// add appends s to the history and its file, unless it repeats the last
// entry. The file is rewritten whole when it has grown to twice the bound.
func (e *lineEditor) add(s string) error {
	if s == "" || len(e.hist) > 0 && e.hist[len(e.hist)-1] == s {
		return nil
	}
	e.hist = append(e.hist, s)
	if len(e.hist) > historyMax {
		e.hist = e.hist[len(e.hist)-historyMax:]
	}
	rewrite := e.lines >= 2*historyMax
	if e.file == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(e.file), 0o700); err != nil {
		return fmt.Errorf("input history: %w", err)
	}
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	lines := []string{s}
	if rewrite {
		flags, lines = os.O_CREATE|os.O_WRONLY|os.O_TRUNC, e.hist
	}
	f, err := os.OpenFile(e.file, flags, 0o600)
	if err != nil {
		return fmt.Errorf("input history: %w", err)
	}
	w := bufio.NewWriter(f)
	for _, l := range lines {
		b, _ := json.Marshal(l)
		w.Write(append(b, '\n'))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("input history: %w", err)
	}
	if rewrite {
		e.lines = 0
	}
	e.lines += len(lines)
	return f.Close()
}

// read edits one message and returns it: Enter sends (unless the line
// ends in a backslash, which continues it), Alt-Enter or Ctrl-J inserts a
// newline, a paste is inserted whole. Ctrl-C clears the text, or returns
// errInterrupt on an empty line; Ctrl-D on an empty line returns io.EOF.
func (e *lineEditor) read(ctx context.Context) (string, error) {
	m := newEditModel(e.hist, termWidth(e.out))
	prog := tea.NewProgram(m, tea.WithInput(e.in), tea.WithOutput(e.out), tea.WithContext(ctx), tea.WithoutSignalHandler())
	final, err := prog.Run()
	if err != nil {
		return "", fmt.Errorf("line editor: %w", err)
	}
	fm := final.(editModel)
	switch fm.result {
	case editEOF:
		return "", io.EOF
	case editInterrupt:
		return "", errInterrupt
	}
	return fm.ta.Value(), nil
}

// termWidth returns the width of the terminal w writes to (80 if unknown).
func termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if width, _, err := term.GetSize(f.Fd()); err == nil && width > 0 {
			return width
		}
	}
	return 80
}

// editResult is how an edit ended.
type editResult int

const (
	editing editResult = iota
	editSent
	editEOF
	editInterrupt
)

// editModel is the bubbletea model of one edit.
type editModel struct {
	ta     textarea.Model
	hist   []string
	pos    int    // index into hist being shown; len(hist): the new text
	draft  string // the new text, kept while browsing the history
	result editResult
}

func newEditModel(hist []string, width int) editModel {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.CharLimit = 0
	ta.MaxHeight = 0
	ta.Placeholder = ""
	ta.SetPromptFunc(2, func(line int) string {
		if line == 0 {
			return "> "
		}
		return ". "
	})
	plain := textarea.Style{Base: lipgloss.NewStyle(), Text: lipgloss.NewStyle(), Prompt: lipgloss.NewStyle(),
		CursorLine: lipgloss.NewStyle(), EndOfBuffer: lipgloss.NewStyle(), Placeholder: lipgloss.NewStyle(),
		LineNumber: lipgloss.NewStyle(), CursorLineNumber: lipgloss.NewStyle()}
	ta.FocusedStyle, ta.BlurredStyle = plain, plain
	ta.KeyMap.InsertNewline = key.NewBinding(key.WithKeys("alt+enter", "ctrl+j"))
	ta.KeyMap.DeleteCharacterForward = key.NewBinding(key.WithKeys("delete"))
	ta.KeyMap.WordForward = key.NewBinding(key.WithKeys("alt+right", "ctrl+right", "alt+f"))
	ta.KeyMap.WordBackward = key.NewBinding(key.WithKeys("alt+left", "ctrl+left", "alt+b"))
	ta.KeyMap.Paste = key.NewBinding() // the terminal pastes (bracketed)
	ta.SetWidth(width)
	ta.SetHeight(1)
	ta.Cursor.SetMode(cursor.CursorStatic) // no blinking: nothing redraws while idle
	ta.Focus()
	return editModel{ta: ta, hist: hist, pos: len(hist)}
}

func (m editModel) Init() tea.Cmd { return nil }

func (m editModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	k, isKey := msg.(tea.KeyMsg)
	if isKey && (k.Type == tea.KeyRunes && !k.Alt || k.Paste) {
		// Typed or pasted text is inserted as it is: matched against the
		// key bindings, the word "end" would move to the end of the line.
		m.change(func() { m.ta.InsertString(string(k.Runes)) })
		return m, nil
	}
	if isKey {
		switch k.String() {
		case "ctrl+c":
			if m.ta.Value() == "" {
				m.result = editInterrupt
				return m, tea.Quit
			}
			m.ta.Reset()
			m.pos, m.draft = len(m.hist), ""
			m.fit()
			return m, nil
		case "ctrl+d":
			if m.ta.Value() == "" {
				m.result = editEOF
				return m, tea.Quit
			}
			return m, nil // with text, Ctrl-D does nothing
		case "ctrl+l":
			return m, tea.ClearScreen
		case "enter":
			v := m.ta.Value()
			if strings.HasSuffix(v, `\`) && m.ta.Line() == m.ta.LineCount()-1 {
				// A trailing backslash continues the message on a new line.
				m.change(func() {
					m.ta.CursorEnd()
					m.ta, _ = m.ta.Update(tea.KeyMsg{Type: tea.KeyBackspace})
					m.ta.InsertRune('\n')
				})
				return m, nil
			}
			m.result = editSent
			m.ta.Blur()
			return m, tea.Quit
		case "up", "ctrl+p":
			if m.ta.Line() == 0 && m.pos > 0 {
				m.browse(m.pos - 1)
				return m, nil
			}
		case "down", "ctrl+n":
			if m.ta.Line() == m.ta.LineCount()-1 && m.pos < len(m.hist) {
				m.browse(m.pos + 1)
				return m, nil
			}
		}
	}
	var cmd tea.Cmd
	m.change(func() { m.ta, cmd = m.ta.Update(msg) })
	return m, cmd
}

// browse shows history entry i (len(hist): the draft).
func (m *editModel) browse(i int) {
	if m.pos == len(m.hist) {
		m.draft = m.ta.Value()
	}
	m.pos = i
	text := m.draft
	if i < len(m.hist) {
		text = m.hist[i]
	}
	m.change(func() { m.ta.SetValue(text) })
}

// editRows is the most rows the editor grows to; a longer text scrolls in
// it.
const editRows = 12

// change makes edit to the text with the editor at its full height, then
// fits the editor to the text. The textarea scrolls its viewport to the
// cursor during the edit: had it been fitted only after, a box one row
// high would keep the row it scrolled by, and typing x1, Ctrl-J, y2 would
// show ". y2" with "> x1" hidden above it.
func (m *editModel) change(edit func()) {
	m.ta.SetHeight(editRows)
	edit()
	m.fit()
}

// fit sizes the editor to its text, up to editRows, and keeps the cursor
// in view. A line wider than the editor takes at least one row per width
// (more where the textarea wraps between words: the cursor stays in view,
// the first rows may scroll off).
func (m *editModel) fit() {
	rows := 0
	if w := m.ta.Width(); w > 0 {
		for _, l := range strings.Split(m.ta.Value(), "\n") {
			rows += max(1, (lipgloss.Width(l)+w-1)/w)
		}
	}
	m.ta.SetHeight(min(max(rows, 1), editRows))
	m.ta, _ = m.ta.Update(nil) // scroll to the cursor within the new height
}

func (m editModel) View() string {
	if m.result == editing {
		return m.ta.View()
	}
	if m.result != editSent {
		return "> \n"
	}
	// The final screen: the text as sent, without the cursor.
	var b strings.Builder
	for i, l := range strings.Split(m.ta.Value(), "\n") {
		if i == 0 {
			b.WriteString("> ")
		} else {
			b.WriteString(". ")
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}

// replInterruptCode is the exit status of a REPL left with Ctrl-C twice,
// the usual status of a process ended by SIGINT.
const replInterruptCode = 130

// historyHome is the folder the input history is kept under: --home,
// else $RECALL_HOME, else ~/.recall, whatever the store.
func (a *app) historyHome() string {
	if a.home != "" {
		return a.home
	}
	if h := os.Getenv("RECALL_HOME"); h != "" {
		return h
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".recall")
	}
	return ""
}
