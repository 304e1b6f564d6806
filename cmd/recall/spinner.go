package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// spinnerFrames are drawn in turn while a reply has not started.
var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// startSpinner draws a spinner with the time elapsed on w's current line
// until stop is called, which erases it. stop may be called many times.
// The first frame is drawn before startSpinner returns.
func startSpinner(w io.Writer) (stop func()) {
	start := time.Now()
	done := make(chan struct{})
	var wg sync.WaitGroup
	draw := func(i int) {
		fmt.Fprintf(w, "\r%s thinking %.1fs (Ctrl-C stops)", spinnerFrames[i%len(spinnerFrames)], time.Since(start).Seconds())
	}
	draw(0)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 1; ; i++ {
			select {
			case <-done:
				return
			case <-t.C:
				draw(i)
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			fmt.Fprint(w, "\r\x1b[K")
		})
	}
}
