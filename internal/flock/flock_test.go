package flock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallkit/recall/internal/flock"
)

// open opens path a second time: locks belong to an open file, so two
// opens in one process contend as two processes would.
func open(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestLockExcludesOtherLockers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "log")
	a, b := open(t, path), open(t, path)
	if err := flock.Lock(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := flock.Lock(ctx, b); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while the first is held: %v, want the context's deadline", err)
	}
	// The lock is advisory: it keeps out lockers, not reads and writes
	// (on Windows it covers no byte of the data).
	if _, err := b.WriteString("x\n"); err != nil {
		t.Fatalf("write beside the lock: %v", err)
	}
	if _, err := os.ReadFile(path); err != nil {
		t.Fatalf("read beside the lock: %v", err)
	}
	a.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := flock.Lock(ctx, b); err != nil {
		t.Fatalf("lock after the holder closed: %v", err)
	}
}

func TestLockBlocksUntilReleased(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "log")
	a, b := open(t, path), open(t, path)
	if err := flock.Lock(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	// A context that never ends blocks in the system call.
	got := make(chan error, 1)
	go func() { got <- flock.Lock(context.Background(), b) }()
	// The second locker must be queued in the kernel before the release,
	// or the test would not show that it waited: wait until /proc/locks
	// lists it (elsewhere the kernel's queue cannot be seen, and the test
	// checks only that the lock is taken once released).
	for deadline := time.Now().Add(time.Minute); ; {
		select {
		case err := <-got:
			t.Fatalf("the lock was taken while the other file held it (%v)", err)
		default:
		}
		waiting, seen := lockWaiter(path)
		if waiting || !seen {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second locker never waited for the lock")
		}
		time.Sleep(time.Millisecond) // poll /proc/locks
	}
	select {
	case err := <-got:
		t.Fatalf("the lock was taken while the other file held it (%v)", err)
	default:
	}
	a.Close()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}
