package fsys_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/recallkit/recall/internal/fsys"
)

func TestStat(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(path, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byFile, err := fsys.Fstat(f)
	if err != nil {
		t.Fatal(err)
	}
	byPath, err := fsys.StatPath(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	byName, ok := fsys.StatAt(d, "a.jsonl")
	if !ok {
		t.Fatal("StatAt: not a regular file")
	}
	if byFile != byPath || byFile != byName || byFile.Size != 4 || byFile.Ino == 0 || byFile.Mtime == 0 {
		t.Fatalf("Fstat %+v, StatPath %+v, StatAt %+v: want one identity of size 4", byFile, byPath, byName)
	}

	// A file renamed over it is another file; the open one lost its name.
	other := filepath.Join(dir, "b")
	if err := os.WriteFile(other, []byte("one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if gone, err := fsys.Unlinked(f); err != nil || gone {
		t.Fatalf("Unlinked before the rename = %v, %v", gone, err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Skipf("renaming over an open file: %v", err) // Windows may refuse
	}
	if now, err := fsys.StatPath(path); err != nil || now.Ino == byFile.Ino {
		t.Fatalf("after a rename over it: %+v, %v; want another identity than %+v", now, err, byFile)
	}
	if gone, err := fsys.Unlinked(f); err != nil || !gone {
		t.Fatalf("Unlinked after the rename = %v, %v; want true", gone, err)
	}
}

func TestNotRegular(t *testing.T) {
	dir := t.TempDir()
	if _, err := fsys.StatPath(dir); !errors.Is(err, fsys.ErrNotRegular) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("StatPath of a directory: %v, want ErrNotRegular (an os.ErrNotExist)", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := fsys.Fstat(d); !errors.Is(err, fsys.ErrNotRegular) {
		t.Fatalf("Fstat of a directory: %v, want ErrNotRegular", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, ok := fsys.StatAt(d, "sub"); ok {
		t.Fatal("StatAt of a directory: ok")
	}
	if _, ok := fsys.StatAt(d, "missing"); ok {
		t.Fatal("StatAt of a missing name: ok")
	}
	if _, err := fsys.StatPath(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("StatPath of a missing name: %v", err)
	}
}

func TestDirMtime(t *testing.T) {
	dir := t.TempDir()
	before, err := fsys.DirMtime(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A name created in the directory moves its mtime; the clock's
	// granularity may hide one change, so names are made until it moves.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		if err := os.WriteFile(filepath.Join(dir, "n"+string(rune('a'+i%26))), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		now, err := fsys.DirMtime(dir)
		if err != nil {
			t.Fatal(err)
		}
		if now != before {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the directory's mtime never moved")
		}
	}
}

func TestRemoveOldTemp(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"old", "new"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	hourAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "old"), hourAgo, hourAgo); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	fsys.RemoveOldTemp(d, "old", time.Minute)
	fsys.RemoveOldTemp(d, "new", time.Minute)
	if _, err := os.Stat(filepath.Join(dir, "old")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the hour-old file is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err != nil {
		t.Fatalf("the new file went: %v", err)
	}
}

func TestProcessAndBoot(t *testing.T) {
	if fsys.ProcessGone(os.Getpid()) {
		t.Fatal("ProcessGone(this process) = true")
	}
	if fsys.ProcessGone(os.Getppid()) {
		t.Fatal("ProcessGone(the parent) = true")
	}
	if id := fsys.BootID(); (id != "") != (runtime.GOOS == "linux" || runtime.GOOS == "darwin") {
		t.Fatalf("BootID() = %q on %s", id, runtime.GOOS)
	} else if id != fsys.BootID() {
		t.Fatal("BootID changed within a boot")
	}
	exited := exec.Command(os.Args[0], "-test.run=^$")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	if !fsys.ProcessGone(exited.Process.Pid) {
		t.Fatalf("ProcessGone(%d), a child that exited and was waited for, = false", exited.Process.Pid)
	}
	start := fsys.CPUTime()
	deadline := time.Now().Add(10 * time.Second)
	for fsys.CPUTime() == start { // spin until this process's CPU time moves
		if time.Now().After(deadline) {
			t.Fatalf("CPUTime() stayed at %v", start)
		}
	}
}
