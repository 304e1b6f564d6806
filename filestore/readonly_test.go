//go:build linux

package filestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/storekit"
)

// A home the store may read but not write: a read-only mount (EROFS), or a
// directory tree without write permission (EACCES). Reads work; every
// write fails with an error that names the path and wraps the system's
// error, and changes nothing.

// readOnlyFixture fills home with two sessions (one with a subagent
// record) and returns their keys and items.
func readOnlyFixture(t *testing.T, home string) map[recall.Key][]recall.Item {
	t.Helper()
	ctx := context.Background()
	s, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[recall.Key][]recall.Item{}
	for _, k := range []recall.Key{{Project: "p", Session: "a"}, {Project: "p", Session: "b"}, {Project: "p", Session: "a", Subpath: "subagents/x"}} {
		items := []recall.Item{recall.Message("user", "q "+k.String()), recall.Message("assistant", "r "+k.String())}
		if _, err := s.Append(ctx, k, recall.Guard{}, recall.ItemEntries(items...)...); err != nil {
			t.Fatal(err)
		}
		want[k] = items
	}
	if _, err := s.List(ctx, "p", recall.ListOptions{}); err != nil { // the index, too
		t.Fatal(err)
	}
	if _, err := s.Search(ctx, recall.SearchOptions{Query: "q"}); err != nil { // and the search index
		t.Fatal(err)
	}
	return want
}

// checkReadOnly opens the store in a home it cannot write and checks that
// reads work and writes fail cleanly. errno is the error writes must wrap.
// It returns a description of the first failure, or "", so that a child
// process can run it too.
func checkReadOnly(home string, want map[recall.Key][]recall.Item, errno error) string {
	ctx := context.Background()
	s, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		return fmt.Sprintf("Open of a read-only home: %v; want it to open for reading", err)
	}
	defer s.Close()
	for k, items := range want {
		live, _, err := s.Items(ctx, k, 0)
		if err != nil || len(live) != len(items) || !bytes.Equal(live[1].Item, items[1]) {
			return fmt.Sprintf("Items(%s) = %d items, %v", k, len(live), err)
		}
		if _, es, err := s.Load(ctx, k); err != nil || len(es) != len(items) {
			return fmt.Sprintf("Load(%s) = %d entries, %v", k, len(es), err)
		}
		if _, err := s.Stat(ctx, k); err != nil {
			return fmt.Sprintf("Stat(%s): %v", k, err)
		}
	}
	page, err := s.List(ctx, "p", recall.ListOptions{IncludeArchived: true})
	if err != nil || len(page.Sessions) != 2 {
		return fmt.Sprintf("List = %d sessions, %v; want 2", len(page.Sessions), err)
	}
	if ps, err := recall.Projects(ctx, s); err != nil || len(ps) != 1 {
		return fmt.Sprintf("Projects = %v, %v", ps, err)
	}
	if err := storekit.Verify(ctx, s); err != nil {
		return fmt.Sprintf("Verify: %v", err)
	}

	// Search answers, though its index cannot be brought up to date.
	if page, err := s.Search(ctx, recall.SearchOptions{Query: "q"}); err != nil || len(page.Hits) != 2 {
		return fmt.Sprintf("Search = %d hits, %v; want the 2 main sessions' first items", len(page.Hits), err)
	}

	a := recall.Key{Project: "p", Session: "a"}
	writes := []struct {
		what string
		fn   func() error
	}{
		{"Append", func() error {
			_, err := s.Append(ctx, a, recall.Guard{}, recall.Message("user", "x").Entry())
			return err
		}},
		{"Append to a new session", func() error {
			_, err := s.Append(ctx, recall.Key{Project: "p", Session: "new"}, recall.Guard{}, recall.Message("user", "x").Entry())
			return err
		}},
		{"Append to a new project", func() error {
			_, err := s.Append(ctx, recall.Key{Project: "q", Session: "new"}, recall.Guard{}, recall.Message("user", "x").Entry())
			return err
		}},
		{"Pop", func() error { _, err := s.Pop(ctx, a); return err }},
		{"SetTitle", func() error { _, err := recall.NewSession(s, a).SetTitle(ctx, "t", recall.TitleUser); return err }},
		{"Fork", func() error {
			_, err := recall.NewSession(s, a).Fork(ctx, 0, recall.Key{Project: "p", Session: "fork"})
			return err
		}},
		{"Remove", func() error { return s.Remove(ctx, recall.Key{Project: "p", Session: "b"}) }},
	}
	for _, w := range writes {
		err := w.fn()
		switch {
		case err == nil:
			return w.what + " on a read-only home succeeded"
		case !errors.Is(err, errno):
			return fmt.Sprintf("%s on a read-only home: %v; want an error wrapping %v", w.what, err, errno)
		case !strings.Contains(err.Error(), home):
			return fmt.Sprintf("%s on a read-only home: %q does not name the path", w.what, err)
		}
	}
	// Nothing changed.
	for k, items := range want {
		if live, _, err := s.Items(ctx, k, 0); err != nil || len(live) != len(items) {
			return fmt.Sprintf("after the refused writes, Items(%s) = %d items, %v", k, len(live), err)
		}
	}
	return ""
}

// TestReadOnlyMount remounts a tmpfs home read-only.
func TestReadOnlyMount(t *testing.T) {
	mnt := mountTmpfs(t, "4m")
	home := filepath.Join(mnt, "home")
	want := readOnlyFixture(t, home)
	if err := unix.Mount("", mnt, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "probe"), nil, 0o600); !errors.Is(err, syscall.EROFS) {
		t.Fatalf("the remount did not make the mount read-only: %v", err)
	}
	if msg := checkReadOnly(home, want, syscall.EROFS); msg != "" {
		t.Fatal(msg)
	}
	// A home that does not exist on a read-only mount cannot be made: Open
	// says so, naming it.
	missing := filepath.Join(mnt, "missing")
	if _, err := filestore.Open(filestore.Options{Dir: missing}); err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, syscall.EROFS) {
		t.Errorf("Open of a home that cannot be created = %v; want EROFS naming %s", err, missing)
	}
}

const envReadOnlyChild = "FILESTORE_READONLY_CHILD" // the home the child checks

// TestReadOnlyChild runs checkReadOnly in a child process of
// TestReadOnlyPermissions that has dropped root.
func TestReadOnlyChild(t *testing.T) {
	home := os.Getenv(envReadOnlyChild)
	if home == "" {
		t.Skip("a child of TestReadOnlyPermissions")
	}
	want := map[recall.Key][]recall.Item{}
	for _, k := range []recall.Key{{Project: "p", Session: "a"}, {Project: "p", Session: "b"}, {Project: "p", Session: "a", Subpath: "subagents/x"}} {
		want[k] = []recall.Item{recall.Message("user", "q "+k.String()), recall.Message("assistant", "r "+k.String())}
	}
	if msg := checkReadOnly(home, want, fs.ErrPermission); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
	os.Exit(0)
}

// TestReadOnlyPermissions takes write permission away from every file and
// directory of a home. Root ignores permission bits, so as root the check
// runs in a child process of this test binary with the credentials of
// nobody (uid 65534), on a copy of the binary that nobody may run.
func TestReadOnlyPermissions(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	want := readOnlyFixture(t, home)
	if os.Geteuid() != 0 {
		chmodTree(t, home, false)
		t.Cleanup(func() { chmodTree(t, home, true) })
		if msg := checkReadOnly(home, want, fs.ErrPermission); msg != "" {
			t.Fatal(msg)
		}
		return
	}
	const nobody = 65534
	bin := filepath.Join(base, "filestore.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	// nobody owns the home, as a user owns theirs, but may write nothing.
	if err := filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(p, nobody, nobody)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	chmodTree(t, home, false)
	for dir := base; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
			if err := os.Chmod(dir, fi.Mode().Perm()|0o005); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, fi.Mode().Perm()) })
		}
	}
	cmd := exec.Command(bin, "-test.run=^TestReadOnlyChild$")
	cmd.Env = append(os.Environ(), envReadOnlyChild+"="+home)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// chmodTree makes every file and directory of root read-only, or
// writable by its owner again.
func chmodTree(t *testing.T, root string, writable bool) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o444)
		if d.IsDir() {
			mode = 0o555
		}
		if writable {
			mode |= 0o200
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
}
