package mirror_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/redisstore"
	"github.com/recallkit/recall/sqlstore"
)

// The crash test runs the test binary again as a child (testkit.Main, in
// role "replicate") that replicates a file store to a shared server (while
// it keeps writing to the file store), SIGKILLs it mid-replication several
// times, and then resumes in this process: the replica must end with
// exactly the primary's logs, without a gap or a duplicate.

func TestMain(m *testing.M) {
	testkit.Main(m, map[string]func() error{"replicate": crashChild})
}

const (
	envCrashDir   = "MIRROR_CRASH_DIR"
	envCrashState = "MIRROR_CRASH_STATE"
	envCrashKind  = "MIRROR_CRASH_KIND"
	envCrashURL   = "MIRROR_CRASH_URL"
	envCrashName  = "MIRROR_CRASH_NAME"
)

// slowImport makes each Import take a while, so the child is killed with
// replication in full swing rather than done (it paces the replication;
// nothing waits on it).
type slowImport struct{ recall.Store }

func (s slowImport) Import(ctx context.Context, k recall.Key, es ...recall.Entry) (int64, error) {
	time.Sleep(2 * time.Millisecond)
	return s.Store.Import(ctx, k, es...)
}

// openCrashReplica opens the replica the crash test uses.
func openCrashReplica(ctx context.Context, kind, url, name string) (recall.Store, error) {
	if kind == "redis" {
		return redisstore.Open(ctx, url, redisstore.Options{Prefix: name + ":"})
	}
	return sqlstore.OpenPostgres(ctx, url, sqlstore.Options{Schema: name})
}

// crashChild is the child process of TestKilledMidReplicationResumes: it
// replicates until it is killed.
func crashChild() error {
	ctx := context.Background()
	primary, err := filestore.Open(filestore.Options{Dir: os.Getenv(envCrashDir)})
	if err != nil {
		return err
	}
	replica, err := openCrashReplica(ctx, os.Getenv(envCrashKind), os.Getenv(envCrashURL), os.Getenv(envCrashName))
	if err != nil {
		return err
	}
	opts := fastOptions(os.Getenv(envCrashState))
	opts.BatchSize = 3
	opts.SaveInterval = time.Millisecond // many cursor writes, to be killed in one
	m, err := mirror.New(primary, slowImport{replica}, opts)
	if err != nil {
		return err
	}
	// Keep writing while replicating: new entries, and a new session now
	// and then, paced as an agent would write.
	for i := 0; ; i++ {
		k := recall.Key{Project: "p", Session: fmt.Sprintf("s%02d", i%10)}
		if i%50 == 49 {
			k.Session = fmt.Sprintf("child-%d-%d", os.Getpid(), i)
		}
		if _, err := m.Append(ctx, k, recall.Guard{}, item(fmt.Sprintf("child %d", i)).Entry()); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
		if i > 60_000 {
			return fmt.Errorf("the parent never killed this child")
		}
	}
}

func TestKilledMidReplicationResumes(t *testing.T) {
	t.Parallel() // waits on servers and child processes, not the CPU
	for _, kind := range []string{"postgres", "redis"} {
		t.Run(kind, func(t *testing.T) {
			var url, name string
			if kind == "redis" {
				url, name = testsvc.RedisPrefix(t)
				name = name[:len(name)-1]
			} else {
				url, name = testsvc.PostgresSchema(t)
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

	probe, err := openCrashReplica(ctx, kind, url, name)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	replicated := func() int64 { return total(t, probe) }

	var last int64
	for round := range 2 {
		c := testkit.Start(t, testkit.Command("replicate", envCrashDir+"="+dir, envCrashState+"="+state,
			envCrashKind+"="+kind, envCrashURL+"="+url, envCrashName+"="+name))
		// Kill once the replica has grown by a few batches since the last
		// round: mid-replication, with more to come.
		testkit.Eventually(t, 60*time.Second, fmt.Sprintf("round %d: the replica to grow", round), func() bool {
			if c.Exited() {
				_, err := c.Wait()
				t.Fatalf("round %d: the child exited by itself: %v", round, err)
			}
			return replicated() >= last+20
		})
		c.Kill()
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
	replica, err := openCrashReplica(ctx, kind, url, name)
	if err != nil {
		t.Fatal(err)
	}
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
