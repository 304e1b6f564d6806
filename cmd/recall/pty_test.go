package main

// A pseudo-terminal driver for the end-to-end tests of what a person sees:
// the recall binary runs on a real pty, the test types keys and waits for
// text on the screen.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyRun is one recall process on a pseudo-terminal.
type ptyRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	out  bytes.Buffer // everything the process wrote
	mark int          // where the next expect starts looking, in all()
	done chan struct{}
	code int
}

// startPty starts recall with args in e's project on a 100x30 terminal.
// It answers the terminal queries a real terminal answers (the cursor
// position report), as a terminal emulator would.
func (e *env) startPty(args ...string) *ptyRun {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = e.dir
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + filepath.Join(e.home, "user"),
		"RECALL_HOME=" + e.home,
		"TERM=xterm-256color",
		"GORACE=atexit_sleep_ms=0",
	}, e.vars...)
	if e.store != "" {
		cmd.Env = append(cmd.Env, "RECALL_STORE="+e.store)
	}
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 30, Cols: 100})
	if err != nil {
		e.t.Fatalf("start recall on a pty: %v", err)
	}
	p := &ptyRun{t: e.t, cmd: cmd, tty: tty, done: make(chan struct{})}
	go p.pump()
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-p.done
		tty.Close()
	})
	return p
}

func (p *ptyRun) pump() {
	buf := make([]byte, 4096)
	for {
		n, err := p.tty.Read(buf)
		if n > 0 {
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			if bytes.Contains(buf[:n], []byte("\x1b[6n")) {
				_, _ = p.tty.Write([]byte("\x1b[1;1R"))
			}
		}
		if err != nil {
			break
		}
	}
	err := p.cmd.Wait()
	p.code = p.cmd.ProcessState.ExitCode()
	_ = err
	close(p.done)
}

// ansiSeq matches the escape sequences a screen is drawn with.
var ansiSeq = regexp.MustCompile(`\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[=>78]`)

// inputOn marks, in the screen text, where a bubbletea program (the line
// editor or the picker) took the keyboard: it turns bracketed paste on
// after it put the terminal in raw mode. Keys typed before it are read by
// the terminal in cooked mode: echoed, and an Enter becomes a newline in
// the text being edited instead of sending it.
const inputOn = "\x00"

// screenText is out without escape sequences and carriage returns, with
// inputOn where bracketed paste was turned on.
func screenText(out string) string {
	out = strings.ReplaceAll(out, "\x1b[?2004h", inputOn)
	return strings.ReplaceAll(ansiSeq.ReplaceAllString(out, ""), "\r", "")
}

// expect waits until the screen text written since the last expect
// (escape sequences removed) shows each of wants, in order, and moves past
// the last; it returns the text up to there.
func (p *ptyRun) expect(wants ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		text := p.all()
		if p.mark > len(text) {
			p.mark = len(text)
		}
		seen, at, ok := text[p.mark:], 0, true
		for _, w := range wants {
			i := strings.Index(seen[at:], w)
			if i < 0 {
				ok = false
				break
			}
			at += i + len(w)
		}
		if ok {
			p.mark += at
			return seen[:at]
		}
		select {
		case <-p.done:
			if text == p.all() {
				p.t.Fatalf("recall exited (%d) without showing %q; it showed:\n%s", p.code, wants, seen)
			}
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("screen never showed %q; it showed:\n%s", wants, seen)
		}
	}
}

// reply waits for want and then for the line editor of the next message
// to take the keyboard and show its prompt, so that keys sent next reach it.
func (p *ptyRun) reply(want string) string {
	p.t.Helper()
	return p.expect(want, inputOn, "> ")
}

// send types s.
func (p *ptyRun) send(s string) {
	p.t.Helper()
	if _, err := p.tty.Write([]byte(s)); err != nil {
		p.t.Fatalf("type %q: %v", s, err)
	}
}

// wait waits for the process to end and returns its exit code and all it
// wrote, escape sequences removed.
func (p *ptyRun) wait() (int, string) {
	p.t.Helper()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Fatalf("recall did not exit; it showed:\n%s", p.all())
	}
	return p.code, p.all()
}

// leave types Ctrl-D at an empty prompt and waits for recall to exit 0.
func (p *ptyRun) leave() {
	p.t.Helper()
	p.send(keyCtrlD)
	if code, out := p.wait(); code != 0 {
		p.t.Fatalf("Ctrl-D: exit %d\n%s", code, out)
	}
}

func (p *ptyRun) all() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return screenText(p.out.String())
}

// Keys, as a terminal sends them.
const (
	keyUp     = "\x1b[A"
	keyLeft   = "\x1b[D"
	keyHome   = "\x1b[H"
	keyEnter  = "\r"
	keyAltRet = "\x1b\r"
	keyCtrlJ  = "\n"
	keyCtrlL  = "\x0c"
	keyCtrlC  = "\x03"
	keyCtrlD  = "\x04"
	keyCtrlU  = "\x15"
	keyCtrlW  = "\x17"
)

// paste wraps s in the bracketed-paste markers a terminal sends.
func paste(s string) string { return "\x1b[200~" + s + "\x1b[201~" }
