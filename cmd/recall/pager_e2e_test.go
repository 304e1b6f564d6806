package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// show pages through $PAGER in a terminal, and never when piped.
func TestShowPager(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("first words\nsecond words\n", "chat")
	id := replLs(e)[0].Key.Session
	paged := filepath.Join(t.TempDir(), "paged")
	script := filepath.Join(t.TempDir(), "pager.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" > "+paged+".args\ncat > "+paged+"\necho PAGER-DONE\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.vars = append(e.vars, "PAGER="+script+" --from-env")
	p := e.startPty("show", id)
	p.expect("PAGER-DONE")
	code, screen := p.wait()
	if code != 0 {
		t.Fatalf("show in a terminal: exit %d\n%s", code, screen)
	}
	b, err := os.ReadFile(paged)
	if err != nil {
		t.Fatalf("the pager did not run: %v\n%s", err, screen)
	}
	contains(t, "paged text", string(b), "second words")
	if strings.Contains(screen, "second words") {
		t.Errorf("the transcript reached the terminal around the pager:\n%s", screen)
	}
	if args, _ := os.ReadFile(paged + ".args"); strings.TrimSpace(string(args)) != "--from-env" {
		t.Errorf("pager arguments %q", args)
	}
	// Piped: no pager.
	os.Remove(paged)
	r := e.ok("", "show", id)
	contains(t, "stdout", r.stdout, "second words")
	if _, err := os.Stat(paged); err == nil {
		t.Error("the pager ran with stdout piped")
	}
	// Without $PAGER, less -R -F -X: short output just prints.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "less"), []byte("#!/bin/sh\necho \"$@\" > "+paged+".args\ncat > "+paged+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.vars = []string{"PATH=" + bin + ":" + os.Getenv("PATH")}
	p = e.startPty("show", id)
	if code, screen := p.wait(); code != 0 {
		t.Fatalf("exit %d\n%s", code, screen)
	}
	if args, _ := os.ReadFile(paged + ".args"); strings.TrimSpace(string(args)) != "-R -F -X" {
		t.Errorf("default pager arguments %q, want -R -F -X", args)
	}
}
