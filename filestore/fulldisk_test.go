//go:build linux

package filestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/storekit"
)

// mountTmpfs mounts a tmpfs of the given size ("2m") on a new directory
// and unmounts it when the test ends. Mounting needs root (CAP_SYS_ADMIN);
// without it the test is skipped with a message saying so.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a tmpfs; run the tests as root (as CI does) to cover this")
	}
	dir := filepath.Join(t.TempDir(), "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs on %s (%v): no CAP_SYS_ADMIN in this container?", dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			// something still holds a file open: detach it now, it goes when closed
			if err2 := unix.Unmount(dir, unix.MNT_DETACH); err2 != nil {
				t.Errorf("unmount %s: %v, %v", dir, err, err2)
			}
		}
	})
	return dir
}

// fileState is a log's bytes, to show that a failed write left it alone.
func fileState(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return data
}

// wantDiskFull checks an error from a write on a full disk: it wraps
// ENOSPC, and its text says the disk is full and what was being written.
func wantDiskFull(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("%s on a full disk: %v; want an error wrapping ENOSPC", what, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "no space left on device") || !strings.Contains(msg, "filestore: ") {
		t.Errorf("%s on a full disk: the error %q does not say so clearly", what, msg)
	}
}

// noLeftovers fails if a failed write left a temporary file behind. A
// journal rewrite the store runs in the background holds one while it
// runs and removes it when it fails, so a file still there after a few
// seconds was left behind.
func noLeftovers(t *testing.T, dir string) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, "the temporary files of failed writes to go", func() bool {
		found := false
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			found = found || err == nil && strings.Contains(d.Name(), "#tmp-")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return !found
	})
}

// TestFullDisk fills a 2 MiB tmpfs with a session until an append does not
// fit, and checks every write a full disk refuses: each fails with ENOSPC
// and a clear message, and leaves the log byte for byte as it was (no
// partial line), creates no session and leaves no temporary file. Once
// space is freed, writing works again and every acknowledged item is there.
func TestFullDisk(t *testing.T) {
	ctx := context.Background()
	mnt := mountTmpfs(t, "2m")
	home := filepath.Join(mnt, "home")
	s, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Ballast takes room that the test frees at the end.
	ballast := filepath.Join(mnt, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 256<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	key := recall.Key{Project: "p", Session: "full"}
	other := recall.Key{Project: "p", Session: "other"}
	if _, err := s.Append(ctx, other, recall.Guard{}, recall.ItemEntries(recall.Message("user", "other-0"), recall.Message("assistant", "other-1"))...); err != nil {
		t.Fatal(err)
	}
	path := logPath(t, s, key)
	item := func(i, size int) recall.Item {
		return recall.Message("user", fmt.Sprintf("item-%d %s", i, strings.Repeat("x", size)))
	}

	// Fill: batches of three 20 KiB items until one does not fit. A batch
	// that fits in part is the case that matters: its write is short.
	var acked []recall.Item
	var full error
	for i := 0; full == nil; i += 3 {
		if i > 1000 {
			t.Fatal("2 MiB never filled up")
		}
		before := fileState(t, path)
		batch := []recall.Item{item(i, 20<<10), item(i+1, 20<<10), item(i+2, 20<<10)}
		_, full = s.Append(ctx, key, recall.Guard{}, recall.ItemEntries(batch...)...)
		if full != nil {
			wantDiskFull(t, "Append", full)
			if after := fileState(t, path); !bytes.Equal(after, before) {
				t.Fatalf("the failed append changed the log: %d bytes before, %d after", len(before), len(after))
			}
			break
		}
		acked = append(acked, batch...)
	}
	t.Logf("the disk filled after %d items (%d batches)", len(acked), len(acked)/3)

	// Every other write on the full disk. Small writes may still fit in
	// the last free page, so fill it up first with 1 KiB items.
	for i := 0; ; i++ {
		before := fileState(t, path)
		it := item(10_000+i, 1<<10)
		if _, err := s.Append(ctx, key, recall.Guard{}, it.Entry()); err != nil {
			wantDiskFull(t, "Append of a small item", err)
			if after := fileState(t, path); !bytes.Equal(after, before) {
				t.Fatalf("the failed small append changed the log")
			}
			break
		}
		acked = append(acked, it)
	}
	before := fileState(t, path)
	fresh := recall.Key{Project: "p", Session: "fresh"}
	_, err = s.Append(ctx, fresh, recall.Guard{}, item(-1, 30<<10).Entry())
	wantDiskFull(t, "Append to a new session", err)
	if _, err := s.Stat(ctx, fresh); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("the failed append created the session: Stat = %v", err)
	}
	_, err = recall.NewSession(s, key).Fork(ctx, 0, recall.Key{Project: "p", Session: "fork"})
	wantDiskFull(t, "Fork", err)
	if _, err := s.Stat(ctx, recall.Key{Project: "p", Session: "fork"}); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("the failed fork created the session: Stat = %v", err)
	}
	_, err = s.Append(ctx, key, recall.Guard{}, recall.ItemEntries(item(-2, 40<<10), item(-3, 40<<10))...)
	wantDiskFull(t, "Append of a batch", err)
	if after := fileState(t, path); !bytes.Equal(after, before) {
		t.Fatalf("failed writes changed the log: %d bytes before, %d after", len(before), len(after))
	}
	noLeftovers(t, home)

	// Reads work on a full disk.
	live, _, err := s.Items(ctx, key, 0)
	if err != nil || len(live) != len(acked) {
		t.Fatalf("Items on a full disk: %d items, %v; want %d", len(live), err, len(acked))
	}
	if _, err := s.List(ctx, "p", recall.ListOptions{}); err != nil {
		t.Fatalf("List on a full disk: %v", err)
	}

	// Free the room: every write works again, and nothing was lost.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	last := item(20_000, 10)
	if _, err := s.Append(ctx, key, recall.Guard{}, last.Entry()); err != nil {
		t.Fatalf("Append after space was freed: %v", err)
	}
	acked = append(acked, last)
	if it, err := s.Pop(ctx, key); err != nil || !bytes.Equal(it, last) {
		t.Fatalf("Pop after space was freed = %s, %v", it, err)
	}
	acked = acked[:len(acked)-1]
	if _, err := s.Append(ctx, fresh, recall.Guard{}, item(-1, 10).Entry()); err != nil {
		t.Fatalf("Append to a new session after space was freed: %v", err)
	}
	// A new store reads the logs from disk, not from the writer's cache.
	s2 := openStore(t, home)
	live, _, err = s2.Items(ctx, key, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != len(acked) {
		t.Fatalf("after the disk filled and was freed: %d items, want the %d acknowledged", len(live), len(acked))
	}
	for i := range acked {
		if !bytes.Equal(live[i].Item, acked[i]) {
			t.Fatalf("item %d changed: %.60s", i, live[i].Item)
		}
	}
	if m, err := s2.Stat(ctx, key); err != nil || m.Corrupt != 0 {
		t.Errorf("Stat = %+v, %v; want no corrupt line", m, err)
	}
	if err := storekit.Verify(ctx, s2); err != nil {
		t.Errorf("Verify: %v", err)
	}
	if torn, _ := filepath.Glob(path + "#torn-*"); len(torn) != 0 {
		t.Errorf("a failed write left a torn tail behind: %v", torn)
	}
	noLeftovers(t, home)
}

// TestFullDiskTornTail covers a log with a torn tail (a crash mid-write)
// on a disk too full to keep the tail aside: the next append fails rather
// than glue onto the torn bytes or drop them, and once there is room the
// tail goes into its side file, whole, and the append lands cleanly.
func TestFullDiskTornTail(t *testing.T) {
	ctx := context.Background()
	mnt := mountTmpfs(t, "1m")
	home := filepath.Join(mnt, "home")
	s, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := recall.Key{Project: "p", Session: "torn"}
	first := recall.Message("user", "first")
	if _, err := s.Append(ctx, key, recall.Guard{}, first.Entry()); err != nil {
		t.Fatal(err)
	}
	path := logPath(t, s, key)
	// A crash cut a large batch: 64 KiB of it are on disk, unterminated.
	torn := append([]byte(`{"seq":2,"kind":"item","time":"2025-06-01T10:00:00Z","more":true,"data":{"c":"`), bytes.Repeat([]byte("t"), 64<<10)...)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(torn); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Fill the disk to the last byte.
	filler, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := filler.Write(make([]byte, 4096)); err != nil {
			break
		}
	}
	filler.Close()
	before := fileState(t, path)
	_, err = s.Append(ctx, key, recall.Guard{}, recall.Message("user", "second").Entry())
	wantDiskFull(t, "Append after a torn tail", err)
	if after := fileState(t, path); !bytes.Equal(after, before) {
		t.Fatalf("the failed append changed the log (%d bytes, was %d)", len(after), len(before))
	}
	if live, _, err := s.Items(ctx, key, 0); err != nil || len(live) != 1 || !bytes.Equal(live[0].Item, first) {
		t.Fatalf("Items with a torn tail on a full disk = %v, %v", live, err)
	}
	noLeftovers(t, home)

	if err := os.Remove(filepath.Join(mnt, "filler")); err != nil {
		t.Fatal(err)
	}
	second := recall.Message("user", "second")
	if seq, err := s.Append(ctx, key, recall.Guard{}, second.Entry()); err != nil || seq != 2 {
		t.Fatalf("Append once there is room = %d, %v; want seq 2", seq, err)
	}
	side, _ := filepath.Glob(path + "#torn-*")
	if len(side) != 1 {
		t.Fatalf("side files: %v; want one", side)
	}
	if kept, err := os.ReadFile(side[0]); err != nil || !bytes.Equal(kept, torn) {
		t.Fatalf("the side file holds %d bytes, %v; want the %d torn bytes", len(kept), err, len(torn))
	}
	live, _, err := openStore(t, home).Items(ctx, key, 0)
	if err != nil || len(live) != 2 || !bytes.Equal(live[0].Item, first) || !bytes.Equal(live[1].Item, second) {
		t.Fatalf("Items after the repair = %d items, %v", len(live), err)
	}
}
