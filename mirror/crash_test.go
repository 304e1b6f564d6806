package mirror_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/mirror"
)

// The crash test re-executes the test binary as a child that replicates a
// file store to a shared server (while it keeps writing to the file store),
// SIGKILLs it mid-replication several times, and then resumes in this
// process: the replica must end with exactly the primary's logs, without a
// gap or a duplicate.

const (
	envCrashChild = "MIRROR_CRASH_CHILD"
	envCrashDir   = "MIRROR_CRASH_DIR"
	envCrashState = "MIRROR_CRASH_STATE"
	envCrashKind  = "MIRROR_CRASH_KIND"
	envCrashURL   = "MIRROR_CRASH_URL"
	envCrashName  = "MIRROR_CRASH_NAME"
)

// slowImport makes each Import take a while, so the child is killed with
// replication in full swing rather than done.
type slowImport struct{ recall.Store }

func (s slowImport) Import(ctx context.Context, k recall.Key, es ...recall.Entry) (int64, error) {
	time.Sleep(2 * time.Millisecond)
	return s.Store.Import(ctx, k, es...)
}

// openCrashReplica opens the replica the crash test uses.
func openCrashReplica(t testing.TB, kind, url, name string) recall.Store {
	if kind == "redis" {
		return openRedis(t, url, name+":")
	}
	return openPostgres(t, url, name)
}

// TestCrashChild is the child process of TestKilledMidReplicationResumes;
// it does nothing unless started by it.
func TestCrashChild(t *testing.T) {
	if os.Getenv(envCrashChild) != "1" {
		t.Skip("child process of TestKilledMidReplicationResumes")
	}
	primary := openFileStore(t, os.Getenv(envCrashDir))
	replica := openCrashReplica(t, os.Getenv(envCrashKind), os.Getenv(envCrashURL), os.Getenv(envCrashName))
	opts := fastOptions(os.Getenv(envCrashState))
	opts.BatchSize = 3
	opts.SaveInterval = time.Millisecond // many cursor writes, to be killed in one
	m, err := mirror.New(primary, slowImport{replica}, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Keep writing while replicating: new entries, and a new session now
	// and then.
	ctx := context.Background()
	for i := 0; ; i++ {
		k := recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", i%10)}
		if i%50 == 49 {
			k.Session = fmt.Sprintf("child-%d-%d", os.Getpid(), i)
		}
		if _, err := m.Append(ctx, k, recall.Guard{}, recall.ItemEntry(item(fmt.Sprintf("child %d", i)))); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
		if i > 60_000 {
			t.Fatal("the parent never killed this child")
		}
	}
}

func TestKilledMidReplicationResumes(t *testing.T) {
	if os.Getenv(envCrashChild) == "1" {
		t.Skip("this is the child")
	}
	t.Parallel() // waits on servers and child processes, not the CPU
	for _, kind := range []string{"postgres", "redis"} {
		t.Run(kind, func(t *testing.T) {
			var url, name string
			if kind == "redis" {
				url, name = sharedRedis(t)
				name = name[:len(name)-1]
			} else {
				url, name = sharedPostgres(t)
			}
			killedMidReplication(t, kind, url, name)
		})
	}
}

func killedMidReplication(t *testing.T, kind, url, name string) {
	ctx := context.Background()
	dir := t.TempDir()
	state := filepath.Join(dir, "mirror-state")

	// A backlog the replica has never seen.
	primary := openFileStore(t, dir)
	for i := range 10 {
		k := recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", i)}
		for range 5 {
			items := make([]recall.Item, 8)
			for j := range items {
				items[j] = item(fmt.Sprintf("backlog %d", j))
			}
			if _, err := primary.Append(ctx, k, recall.Guard{}, recall.ItemEntries(items...)...); err != nil {
				t.Fatal(err)
			}
		}
	}
	primary.Close()

	probe := openCrashReplica(t, kind, url, name)
	defer probe.Close()
	replicated := func() int64 { return total(t, probe) }

	var last int64
	for round := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
		cmd.Env = append(os.Environ(), envCrashChild+"=1", envCrashDir+"="+dir, envCrashState+"="+state,
			envCrashKind+"="+kind, envCrashURL+"="+url, envCrashName+"="+name)
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// Kill once the replica has grown by a few batches since the last
		// round: mid-replication, with more to come.
		deadline := time.Now().Add(60 * time.Second)
		for replicated() < last+20 {
			select {
			case err := <-exited:
				t.Fatalf("round %d: the child exited by itself: %v\n%s", round, err, out.String())
			default:
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("round %d: the replica did not grow\n%s", round, out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-exited
		last = replicated()
		p := openFileStore(t, dir)
		behind := total(t, p) - last
		p.Close()
		if behind <= 0 {
			t.Fatalf("round %d: the replica was complete when the child died: the kill was not mid-replication", round)
		}
		t.Logf("round %d: killed the child with %d entries replicated, %d behind", round, last, behind)
	}

	// The cursor file survived the kills whole (it is written atomically).
	b, err := os.ReadFile(filepath.Join(state, "cursors.json"))
	if err != nil {
		t.Fatalf("cursor file: %v", err)
	}
	if !json.Valid(b) {
		t.Fatalf("cursor file torn by a kill:\n%s", b)
	}

	// Resume in this process and drain.
	primary = openFileStore(t, dir)
	replica := openCrashReplica(t, kind, url, name)
	m := newMirror(t, primary, replica, fastOptions(state))
	flush(t, m, 60*time.Second)
	if err := diffLogs(t, primary, probe, true); err != nil {
		t.Fatal(err)
	}
	t.Logf("resumed from %d to %d entries; replica equals primary", last, replicated())
}

// total sums the LastSeq of every session record of s.
func total(t testing.TB, s recall.Store) int64 {
	var n int64
	for _, k := range allKeys(t, s) {
		if m, err := s.Stat(context.Background(), k); err == nil {
			n += m.LastSeq
		}
	}
	return n
}

// syncBuffer is a bytes buffer safe for the child's two output streams.
type syncBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}
