package durable_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/recallkit/recall/internal/durable"
)

// The platform's sync calls (fdatasync, F_FULLFSYNC, FlushFileBuffers and
// the directory fsync) succeed on an ordinary file and directory.
func TestSyncCalls(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("data\n"); err != nil {
		t.Fatal(err)
	}
	if err := durable.SyncData(f); err != nil {
		t.Fatalf("SyncData: %v", err)
	}
	if err := durable.SyncDir(dir); err != nil {
		t.Fatalf("SyncDir: %v", err)
	}
}

func TestWriteFileReplaces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	for _, want := range []string{"one\n", "two\n"} {
		if err := durable.WriteFile(path, "state.tmp-*", []byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Fatalf("after WriteFile(%q): %q, %v", want, got, err)
		}
	}
	if m, _ := filepath.Glob(path + ".tmp-*"); len(m) != 0 {
		t.Fatalf("temporary files left: %v", m)
	}
}
