package main

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// TestReleaseBuild: the release build (scripts/release) leaves out the
// symbol table, the debugging information and the paths of the machine
// it was built on, and the binary runs.
func TestReleaseBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("the long tier builds the release binary, a build of its own")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the sections are checked in ELF binaries")
	}
	dist := t.TempDir()
	cmd := exec.Command("bash", "../../scripts/release")
	cmd.Env = append(os.Environ(), "DIST="+dist)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release: %v\n%s", err, out)
	}
	bin := filepath.Join(dist, "recall-"+runtime.GOOS+"-"+runtime.GOARCH)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, name := range []string{".symtab", ".debug_info", ".debug_line"} {
		if f.Section(name) != nil {
			t.Errorf("the release binary has a %s section", name)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(bin); err != nil || bytes.Contains(data, []byte(root+"/")) {
		t.Errorf("the release binary names the build's folder %s (%v)", root, err)
	}
	if out, err := exec.Command(bin, "--version").CombinedOutput(); err != nil || !bytes.HasPrefix(out, []byte("recall ")) {
		t.Errorf("recall --version: %v\n%s", err, out)
	}
}
