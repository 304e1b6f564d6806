package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall/internal/testsvc"
)

// TestStoreURLs runs a session's life on every backend through --store /
// RECALL_STORE: create, continue in a new process, fork, rename, undo,
// remove; the cleanup runs recall check on the same store.
func TestStoreURLs(t *testing.T) {
	name := fmt.Sprintf("recall_cli_%d", time.Now().UnixNano())
	backends := []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"file", func(t *testing.T) string { return "file://" + filepath.Join(t.TempDir(), "store") }},
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "recall.db") }},
		{"postgres", func(t *testing.T) string {
			dsn := testsvc.PostgresDSN(t)
			t.Cleanup(func() { dropSchema(t, dsn, name) })
			return addQuery(dsn, "schema="+name)
		}},
		{"redis", func(t *testing.T) string {
			u := testsvc.RedisURL(t)
			t.Cleanup(func() { dropPrefix(t, u, name+":") })
			return addQuery(u, "prefix="+name+":")
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t)
			url := b.url(t)
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

func addQuery(u, q string) string {
	if strings.Contains(u, "?") {
		return u + "&" + q
	}
	return u + "?" + q
}

func dropSchema(t *testing.T, dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Logf("drop schema %s: %v", schema, err)
		return
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		t.Logf("drop schema %s: %v", schema, err)
	}
}

func dropPrefix(t *testing.T, url, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Logf("redis cleanup: %v", err)
		return
	}
	c := redis.NewClient(opts)
	defer c.Close()
	iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Logf("redis cleanup: %v", err)
	}
}
