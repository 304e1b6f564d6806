//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// roTmpfs mounts a tmpfs for a recall home and returns the mount point and
// a function that remounts it read-only; the mount goes when the test
// ends. It needs root; without it the test is skipped with a message.
func roTmpfs(t *testing.T) (dir string, readOnly func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a read-only tmpfs (root ignores permission bits); TestErrorsAreOneLineWithAHint covers a non-writable home as a user")
	}
	dir = filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=8m"); err != nil {
		t.Skipf("cannot mount a tmpfs (%v): no CAP_SYS_ADMIN in this container?", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	return dir, func() {
		t.Helper()
		if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
			t.Fatalf("remount read-only: %v", err)
		}
	}
}

// TestReadOnlyHome runs recall on a home that turned read-only (a
// remounted file system): the commands that read work as before; those
// that write fail with one line that names the path and says what to do,
// exit 1, and no stack trace.
func TestReadOnlyHome(t *testing.T) {
	t.Parallel()
	mnt, readOnly := roTmpfs(t) // before newEnv: its final "recall check" runs first, on the read-only home
	e := newEnv(t)
	e.home = filepath.Join(mnt, "home")
	e.vars = []string{"HOME=" + t.TempDir()}
	e.ok("", "chat", "-p", "first")
	e.ok("", "chat", "-c", "-p", "second")
	ms := e.ls()
	if len(ms) != 1 || ms[0].ItemCount != 4 {
		t.Fatalf("ls: %+v", ms)
	}
	id, title := ms[0].Key.Session, ms[0].Title

	readOnly()
	// Reads work.
	if ms := e.ls(); len(ms) != 1 || ms[0].ItemCount != 4 || ms[0].Key.Session != id {
		t.Errorf("ls on a read-only home: %+v", ms)
	}
	if m, items := e.show(id); m.ItemCount != 4 || len(items) != 4 {
		t.Errorf("show on a read-only home: %d items", len(items))
	}
	e.ok("", "show", id)
	e.ok("", "ls", "--all")
	e.ok("", "projects")
	e.ok("", "check")

	// Writes fail cleanly, naming the home.
	for _, args := range [][]string{
		{"chat", "-c", "-p", "third"},
		{"chat", "-p", "a new session"},
		{"rename", id, "New title"},
		{"archive", id},
		{"fork", id},
		{"rm", id},
	} {
		r := e.run("", args...)
		if args[0] == "chat" && args[1] == "-c" {
			t.Logf("recall chat -c on a read-only home says:\n%s", r.stderr)
		}
		checkFailure(t, r, 1, e.home, args)
		contains(t, "stderr of "+args[0], r.stderr, "read-only file system")
	}
	// and nothing changed
	if ms := e.ls("--all"); len(ms) != 1 || ms[0].ItemCount != 4 || ms[0].Title != title || ms[0].Archived {
		t.Errorf("after the refused writes: %+v", ms)
	}
}
