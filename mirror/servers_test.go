package mirror_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
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

// These tests run the mirror from a file store to real Redis and PostgreSQL
// servers. The servers that get stopped are private to the test
// (testsvc.Private*), so other packages' tests keep theirs.

func openFileStore(t testing.TB, dir string) *filestore.Store {
	t.Helper()
	fs, err := filestore.Open(filestore.Options{Dir: dir})
	if err != nil {
		t.Fatalf("filestore: %v", err)
	}
	return fs
}

func openRedis(t testing.TB, url, prefix string) *redisstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := redisstore.Open(ctx, url, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatalf("redisstore: %v", err)
	}
	return rs
}

func openPostgres(t testing.TB, dsn, schema string) *sqlstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ps, err := sqlstore.OpenPostgres(ctx, dsn, sqlstore.Options{Schema: schema})
	if err != nil {
		t.Fatalf("sqlstore: %v", err)
	}
	return ps
}

// sharedReplicas returns, by name, functions that open a fresh store on
// each shared server (Redis, PostgreSQL), cleaned up when the test ends.
func sharedReplicas() map[string]func(t *testing.T) recall.Store {
	return map[string]func(t *testing.T) recall.Store{
		"redis": func(t *testing.T) recall.Store {
			url, prefix := testsvc.RedisPrefix(t)
			return openRedis(t, url, prefix)
		},
		"postgres": func(t *testing.T) recall.Store {
			dsn, schema := testsvc.PostgresSchema(t)
			return openPostgres(t, dsn, schema)
		},
	}
}

// writer appends to a few sessions through the mirror until stopped, one
// item per call (with a title and a pop now and then), and counts what
// failed.
type writer struct {
	m      recall.Store
	stop   chan struct{}
	done   sync.WaitGroup
	writes atomic.Int64
	errs   atomic.Int64
	first  atomic.Value // the first error
}

func startWriter(m recall.Store, keys []recall.Key) *writer {
	w := &writer{m: m, stop: make(chan struct{})}
	for _, k := range keys {
		w.done.Go(func() {
			ctx := context.Background()
			for i := 0; ; i++ {
				select {
				case <-w.stop:
					return
				default:
				}
				var err error
				switch {
				case i%17 == 16:
					_, err = m.Pop(ctx, k)
				case i%23 == 22:
					_, err = recall.NewSession(m, k).SetTitle(ctx, fmt.Sprintf("title %d", i), recall.TitleAuto)
				default:
					_, err = m.Append(ctx, k, recall.Guard{}, item(fmt.Sprintf("%s #%d", k.Session, i)).Entry())
				}
				w.writes.Add(1)
				if err != nil {
					w.errs.Add(1)
					w.first.CompareAndSwap(nil, err)
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	return w
}

func (w *writer) finish(t *testing.T) {
	t.Helper()
	close(w.stop)
	w.done.Wait()
	if n := w.errs.Load(); n > 0 {
		t.Fatalf("%d of %d local writes failed while the replica was down; first: %v", n, w.writes.Load(), w.first.Load())
	}
	t.Logf("%d local writes, all acknowledged", w.writes.Load())
}

// replicaStopsMidWrite runs a writer through a mirror from a file store to
// the replica on srv, stops the server while the writer runs, starts it
// again, and checks that every local write succeeded and that the replica
// converges to exactly the primary's logs.
func replicaStopsMidWrite(t *testing.T, srv *testsvc.Server, open func() recall.Store) {
	ctx := context.Background()
	primary := openFileStore(t, t.TempDir())
	replica := open()
	opts := fastOptions(t.TempDir())
	opts.RetryMax = 200 * time.Millisecond
	opts.CallTimeout = 2 * time.Second
	m := newMirror(t, primary, replica, opts)

	keys := []recall.Key{{Project: "p", Session: "a"}, {Project: "p", Session: "b"}, {Project: "q", Session: "c"}}
	w := startWriter(m, keys)
	testkit.Eventually(t, 20*time.Second, "the replica to confirm some writes", func() bool {
		return w.writes.Load() >= 30 && !m.Summary(ctx).LastReplicated.IsZero()
	})
	srv.Stop()
	t.Log("replica server stopped")
	testkit.Eventually(t, 20*time.Second, "the mirror to see the outage", func() bool { return m.Summary(ctx).ReplicaDown })
	// The writer keeps going meanwhile.
	down := w.writes.Load()
	testkit.Eventually(t, 20*time.Second, "writes during the outage", func() bool { return w.writes.Load() >= down+100 })
	during := m.Summary(ctx)
	srv.Start()
	t.Log("replica server started")
	// The writer keeps going while the mirror finds the replica back.
	up := w.writes.Load()
	testkit.Eventually(t, 30*time.Second, "the mirror to see the replica back, and writes meanwhile", func() bool {
		return !m.Summary(ctx).ReplicaDown && w.writes.Load() >= up+50
	})
	w.finish(t)
	if during.Lag == 0 {
		t.Errorf("no lag while the replica was down: %+v", during)
	}

	flush(t, m, 60*time.Second)
	check := open() // a fresh connection, to read what the server holds
	defer check.Close()
	if err := diffLogs(t, primary, check, true); err != nil {
		t.Fatal(err)
	}
	if sum := m.Summary(ctx); sum.Lag != 0 || sum.ReplicaDown {
		t.Fatalf("summary after convergence: %+v", sum)
	}
}

func TestRedisStopsMidWrite(t *testing.T) {
	t.Parallel() // waits on servers and child processes, not the CPU
	srv := testsvc.PrivateRedis(t)
	prefix := testsvc.UniqueName("mirror_test") + ":"
	replicaStopsMidWrite(t, srv, func() recall.Store { return openRedis(t, srv.URL, prefix) })
}

func TestPostgresStopsMidWrite(t *testing.T) {
	t.Parallel() // waits on servers and child processes, not the CPU
	srv := testsvc.PrivatePostgres(t)
	schema := testsvc.UniqueName("mirror_test")
	replicaStopsMidWrite(t, srv, func() recall.Store { return openPostgres(t, srv.URL, schema) })
}

// A file store full of sessions a shared server has never seen catches up
// when the mirror starts.
func TestBacklogAtStartAgainstServers(t *testing.T) {
	t.Parallel() // waits on servers and child processes, not the CPU
	for name, open := range sharedReplicas() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			primary := openFileStore(t, dir)
			for i := range 20 {
				k := recall.Key{Project: []string{"p1", "p2"}[i%2], Session: fmt.Sprintf("s%02d", i)}
				if _, err := primary.Append(ctx, k, recall.Guard{}, recall.ItemEntries(item("a"), item("b"), item("c"))...); err != nil {
					t.Fatal(err)
				}
				if i%3 == 0 {
					if _, err := recall.NewSession(primary, k).ChangeMeta(ctx, recall.MetaChange{Archived: new(true)}); err != nil {
						t.Fatal(err)
					}
					sub := k
					sub.Subpath = "subagents/r-1"
					if _, err := primary.Append(ctx, sub, recall.Guard{}, item("sub").Entry()); err != nil {
						t.Fatal(err)
					}
				}
			}
			replica := open(t)
			m := newMirror(t, primary, replica, fastOptions(mirror.StateDir(dir, "test://"+name)))
			flush(t, m, 60*time.Second)
			if err := diffLogs(t, primary, replica, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A mirror starts, and the local store works at full speed, while the
// replica's server is down; Lazy opens the replica once it answers.
func TestReplicaDownAtStart(t *testing.T) {
	t.Parallel() // waits on servers and child processes, not the CPU
	ctx := context.Background()
	srv := testsvc.PrivateRedis(t)
	srv.Stop()
	prefix := testsvc.UniqueName("mirror_test") + ":"
	primary := openFileStore(t, t.TempDir())
	replica := mirror.Lazy(func(ctx context.Context) (recall.Store, error) {
		return redisstore.Open(ctx, srv.URL, redisstore.Options{Prefix: prefix})
	})
	opts := fastOptions(t.TempDir())
	opts.RetryMax = 100 * time.Millisecond
	m := newMirror(t, primary, replica, opts)
	k := recall.Key{Project: "p", Session: "s"}
	for i := range 20 {
		if _, err := m.Append(ctx, k, recall.Guard{}, item(fmt.Sprint(i)).Entry()); err != nil {
			t.Fatalf("append %d with the replica down: %v", i, err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "the outage to be seen", func() bool { return m.Summary(ctx).ReplicaDown })
	if sum := m.Summary(ctx); !strings.Contains(sum.LastError, "open replica") || sum.Lag != 20 {
		t.Fatalf("summary with the replica down: %+v", sum)
	}
	srv.Start()
	flush(t, m, 30*time.Second)
	check := openRedis(t, srv.URL, prefix)
	defer check.Close()
	if err := diffLogs(t, primary, check, true); err != nil {
		t.Fatal(err)
	}
}
