package sqlstore

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
)

// TestPostgresRestart restarts the PostgreSQL server while a store is
// idle. The first call afterwards must either succeed, with the right
// data, or fail with a clear error; the calls after it must succeed once
// the server is back, and nothing is lost or duplicated. It restarts the
// server twice: once before a read, once before a write.
func TestPostgresRestart(t *testing.T) {
	needPostgres(t)
	version := localCluster(t)
	ctx := context.Background()
	s := newPostgres(t)
	k := recall.Key{Project: "p", Session: "restart"}
	if _, err := s.Append(ctx, k, recall.ItemEntries(msg("one"), msg("two"))...); err != nil {
		t.Fatal(err)
	}
	want := []string{"one", "two"}

	restartPostgres(t, version)
	items, err := s.Items(ctx, k, 0)
	if err != nil {
		checkClearError(t, err)
	} else if got := texts(items); !slices.Equal(got, want) {
		t.Fatalf("first read after the restart: %q, want %q", got, want)
	}
	eventually(t, func() error {
		_, err := s.Append(ctx, k, recall.ItemEntry(msg("three")))
		return err
	})
	want = append(want, "three")
	checkItems(t, s, k, want, nil)

	restartPostgres(t, version)
	_, err = s.Append(ctx, k, recall.ItemEntry(msg("four")))
	var maybe []string
	if err != nil {
		// The outcome of a write whose connection died is unknown: the
		// item may or may not be there, but only once.
		checkClearError(t, err)
		maybe = []string{"four"}
	} else {
		want = append(want, "four")
	}
	eventually(t, func() error { _, err := s.Stat(ctx, k); return err })
	checkItems(t, s, k, want, maybe)
	verify(t, s)
}

// localCluster returns the version of the local PostgreSQL cluster the
// tests use, or skips when the server is not a local one this test can
// restart.
func localCluster(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(pgDSN())
	if err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
		t.Skip("RECALL_TEST_POSTGRES is not the local server; not restarting it")
	}
	if _, err := exec.LookPath("pg_ctlcluster"); err != nil {
		t.Skip("no pg_ctlcluster: cannot restart PostgreSQL")
	}
	dirs, err := os.ReadDir("/etc/postgresql")
	if err != nil || len(dirs) == 0 {
		t.Skip("no cluster under /etc/postgresql")
	}
	names := make([]string, len(dirs))
	for i, d := range dirs {
		names[i] = d.Name()
	}
	sort.Strings(names)
	return names[len(names)-1]
}

// restartPostgres restarts the server and waits until it answers. Whatever
// happens, the server is left running when the test ends.
func restartPostgres(t *testing.T, version string) {
	t.Helper()
	t.Cleanup(func() {
		if exec.Command("pg_isready", "-q", "-h", "127.0.0.1").Run() != nil {
			out, err := exec.Command("bash", "/work/shared/services-up").CombinedOutput()
			t.Logf("services-up: %s %v", out, err)
		}
	})
	out, err := exec.Command("pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart").CombinedOutput()
	if err != nil {
		t.Fatalf("restart PostgreSQL: %v: %s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for exec.Command("pg_isready", "-q", "-h", "127.0.0.1").Run() != nil {
		if time.Now().After(deadline) {
			t.Fatal("PostgreSQL did not come back within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkClearError accepts an error from a call that met a restarted
// server: one line, naming the store's operation.
func checkClearError(t *testing.T, err error) {
	t.Helper()
	t.Logf("first call after the restart failed: %v", err)
	if text := err.Error(); !strings.HasPrefix(text, "sqlstore: ") || strings.Contains(text, "\n") {
		t.Errorf("unclear error: %q", text)
	}
	if errors.Is(err, recall.ErrNotFound) || errors.Is(err, recall.ErrConflict) {
		t.Errorf("a lost connection reported as %v", err)
	}
}

// eventually retries f for up to 20 seconds.
func eventually(t *testing.T, f func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after the restart: %v", err)
		}
		t.Logf("retrying: %v", err)
		time.Sleep(200 * time.Millisecond)
	}
}

// checkItems checks that key's items are want, plus possibly the texts of
// maybe, in order, at the end.
func checkItems(t *testing.T, s *Store, key recall.Key, want, maybe []string) {
	t.Helper()
	items, err := s.Items(context.Background(), key, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := texts(items)
	if !slices.Equal(got, want) && !slices.Equal(got, append(slices.Clone(want), maybe...)) {
		t.Fatalf("items %q, want %q (+ maybe %q)", got, want, maybe)
	}
	m, err := s.Stat(context.Background(), key)
	if err != nil || m.ItemCount != len(got) || m.LastSeq != int64(len(got)) {
		t.Fatalf("meta %+v, %v for %d items", m, err, len(got))
	}
}

func texts(live []recall.LiveItem) []string {
	out := make([]string, len(live))
	for i, l := range live {
		out[i] = l.Item.Text()
	}
	return out
}
