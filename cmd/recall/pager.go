package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
)

// defaultPager pages long output and just prints what fits on a screen
// (-F), leaving it on the screen (-X), with colours passed through (-R).
const defaultPager = "less -R -F -X"

// startPager sends the command's output through $PAGER (default less)
// when stdout is a terminal, and returns the function that waits for the
// pager to finish. Outside a terminal, or when the pager cannot start, the
// output goes to stdout as it is.
func (a *app) startPager() (wait func() error) {
	none := func() error { return nil }
	if !isTerminal(a.stdout) {
		return none
	}
	pager, set := os.LookupEnv("PAGER")
	if !set || pager == "" {
		pager = defaultPager
	}
	cmd := exec.Command("sh", "-c", pager)
	cmd.Stdout, cmd.Stderr = a.stdout, a.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return none
	}
	if err := cmd.Start(); err != nil {
		return none
	}
	out := a.stdout
	a.stdout = &pagerWriter{w: in}
	return func() error {
		a.stdout = out
		in.Close()
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("pager %q: %w", pager, err)
		}
		return nil
	}
}

// pagerWriter writes to the pager and stops quietly once the user has
// left it (a closed pipe), as if all had been read.
type pagerWriter struct {
	w      io.Writer
	closed bool
}

func (p *pagerWriter) Write(b []byte) (int, error) {
	if p.closed {
		return len(b), nil
	}
	if _, err := p.w.Write(b); err != nil {
		p.closed = true
	}
	return len(b), nil
}
