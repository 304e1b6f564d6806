package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// The input history keeps multi-line entries, skips repeats, and its file
// stays bounded: at most twice historyMax lines, the newest historyMax
// entries read back.
func TestHistoryFileBounded(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "history", "p.jsonl")
	e := newLineEditor(nil, nil, file)
	if _, err := os.Stat(filepath.Dir(file)); err == nil {
		t.Fatal("opening the editor created the history folder")
	}
	for i := range 3*historyMax + 7 {
		if err := e.add(fmt.Sprintf("message %d\nline two", i)); err != nil {
			t.Fatal(err)
		}
		if err := e.add(fmt.Sprintf("message %d\nline two", i)); err != nil { // a repeat
			t.Fatal(err)
		}
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	if n > 2*historyMax {
		t.Errorf("history file has %d lines, want at most %d", n, 2*historyMax)
	}
	hist, _ := loadHistory(file)
	if len(hist) != historyMax || hist[len(hist)-1] != fmt.Sprintf("message %d\nline two", 3*historyMax+6) || hist[0] != fmt.Sprintf("message %d\nline two", 2*historyMax+7) {
		t.Errorf("read back %d entries, first %q, last %q", len(hist), hist[0], hist[len(hist)-1])
	}
}
