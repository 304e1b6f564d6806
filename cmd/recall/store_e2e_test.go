package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall/internal/testsvc"
)

// TestStoreURLs runs a session's life on every backend through --store /
// RECALL_STORE: create, continue in a new process, fork, rename, undo,
// remove; the cleanup runs recall check on the same store.
func TestStoreURLs(t *testing.T) {
	t.Parallel()
	backends := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"file", func(t *testing.T) string { return "file://" + filepath.Join(t.TempDir(), "store") }},
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "recall.db") }},
		{"postgres", postgresStore},
		{"redis", redisStore},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			url := b.url(t)
			e := newEnv(t)
			e.store = url
			if r := e.ok("", "chat", "-p", "first"); r.stdout != reply(0, "first") {
				t.Fatalf("run 1: %q", r.stdout)
			}
			r := e.ok("", "chat", "-c", "-p", "second")
			if r.stdout != reply(2, "second") {
				t.Fatalf("run 2: %q", r.stdout)
			}
			contains(t, "stderr", r.stderr, "restored 2 items")
			ms := e.ls()
			if len(ms) != 1 || ms[0].ItemCount != 4 {
				t.Fatalf("ls: %+v", ms)
			}
			id := ms[0].Key.Session
			e.ok("", "rename", id, "On", b.name)
			e.ok("", "fork", "On "+b.name, "--name", "Fork")
			e.ok("/undo\n", "chat", "-r", "Fork")
			if m, items := e.show("Fork"); m.ItemCount != 2 || len(items) != 2 {
				t.Errorf("fork after /undo: %d items", m.ItemCount)
			}
			if m, _ := e.show(id); m.ItemCount != 4 || m.Title != "On "+b.name {
				t.Errorf("original: %+v", m)
			}
			e.ok("", "rm", "Fork")
			if n := len(e.ls("--all")); n != 1 {
				t.Errorf("after rm: %d sessions", n)
			}
			// The default file store in RECALL_HOME was never touched.
			e.store = ""
			if n := len(e.ls("--all")); n != 0 {
				t.Errorf("the default home holds %d sessions", n)
			}
			e.store = url
		})
	}
}

// postgresStore returns the URL of a PostgreSQL store in a schema of the
// test's own, dropped when the test ends. Call it before newEnv, so that
// the check newEnv runs at the end sees the store before it is dropped.
func postgresStore(t *testing.T) string {
	t.Helper()
	dsn, schema := testsvc.PostgresSchema(t)
	return addQuery(dsn, "schema="+schema)
}

// redisStore returns the URL of a Redis store under a key prefix of the
// test's own, deleted when the test ends; call it before newEnv.
func redisStore(t *testing.T) string {
	t.Helper()
	u, prefix := testsvc.RedisPrefix(t)
	return addQuery(u, "prefix="+prefix)
}

func addQuery(u, q string) string {
	if strings.Contains(u, "?") {
		return u + "&" + q
	}
	return u + "?" + q
}
