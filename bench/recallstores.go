package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/redisstore"
	"github.com/recallkit/recall/sqlstore"
	"github.com/redis/go-redis/v9"
)

// fileStoreContender is a row of recall's file store with the sync policy
// sync, its data under root/slug. Both file stores list the durable one's
// W3 data (under root/file-always): the row not named recallRow writes
// none.
func fileStoreContender(root, name, slug string, sync filestore.SyncPolicy, note string) contender {
	c := contender{
		name:   name,
		kind:   kindRecall,
		medium: mediumFile,
		note:   note,
		open: storeOpener(func(_ context.Context, scope string) (recall.Store, error) {
			dir := filepath.Join(root, slug, scope)
			if strings.HasPrefix(scope, "list") {
				dir = filepath.Join(root, "file-always", scope)
			}
			return filestore.Open(filestore.Options{Dir: dir, Sync: sync})
		}),
		dropScope: removeGlob(filepath.Join(root, slug)),
	}
	if name != recallRow {
		c.listData = recallRow
	}
	return c
}

// recallContenders returns the rows of recall's own stores.
func recallContenders(ctx context.Context, root, pgDSN, pgDown, pgInfo, redisURL, redisDown string) []contender {
	redisNote := "recall's Redis store (`redisstore.Open`), on the server at " + hostOf(redisURL)
	if redisDown == "" {
		redisNote += " (" + redisPersistence(ctx, redisURL) + ")"
	}
	return []contender{
		fileStoreContender(root, recallRow, "file-always", filestore.SyncAlways, durableFileNote),
		fileStoreContender(root, "recall file (no fsync)", "file-never", filestore.SyncNever,
			"the same store with `Sync: SyncNever`: saves stay in the page cache (not durable across a "+
				"power loss; forks and the index are still fsynced). In W3 it lists the durable store's files."),
		{
			name:   "recall SQLite",
			kind:   kindRecall,
			medium: mediumModernc,
			note: "recall's SQL store on SQLite (`sqlstore.OpenSQLite`, modernc.org/sqlite, pure Go): WAL with " +
				"synchronous=FULL, the default, so every commit is fsynced and survives a power loss.",
			open: storeOpener(func(ctx context.Context, scope string) (recall.Store, error) {
				return sqlstore.OpenSQLite(ctx, filepath.Join(root, "sqlite", scope+".db"), sqlstore.Options{})
			}),
			dropScope: removeGlob(filepath.Join(root, "sqlite")),
		},
		{
			name:        "recall PostgreSQL",
			kind:        kindRecall,
			medium:      mediumPostgres,
			note:        "recall's SQL store on PostgreSQL (`sqlstore.OpenPostgres`, pgx), on the server at " + hostOf(pgDSN) + " (" + pgInfo + "), one schema per workload.",
			unavailable: pgDown,
			open: storeOpener(func(ctx context.Context, scope string) (recall.Store, error) {
				return sqlstore.OpenPostgres(ctx, pgDSN, sqlstore.Options{Schema: "recall_bench_" + scope})
			}),
			dropScope: dropSchema(pgDSN, "recall_bench_"),
		},
		{
			name:        "recall Redis",
			kind:        kindRecall,
			medium:      mediumRedis,
			note:        redisNote + ", one key prefix per workload.",
			unavailable: redisDown,
			open: storeOpener(func(ctx context.Context, scope string) (recall.Store, error) {
				return redisstore.Open(ctx, redisURL, redisstore.Options{Prefix: redisPrefix(scope)})
			}),
			dropScope: func(ctx context.Context, scope string) error {
				return deleteRedisPrefix(ctx, redisURL, redisPrefix(scope))
			},
		},
	}
}

// durableFileNote describes the reference row.
const durableFileNote = "recall's file store (`filestore.Open`, `Sync: SyncAlways`, the default): one JSONL log per " +
	"session, each save one write on an O_APPEND file plus fdatasync, and an index for List. The " +
	"reference of every ratio."

func redisPrefix(scope string) string { return "recall-bench:" + scope + ":" }

// removeGlob returns a dropScope that removes the scope's directory or
// files in dir: the scope itself and scope.* ("w1.db", "w1.db-wal").
func removeGlob(dir string) func(context.Context, string) error {
	return func(_ context.Context, scope string) error {
		base := filepath.Join(dir, scope)
		matches, err := filepath.Glob(base + ".*")
		if err != nil {
			return err
		}
		for _, m := range append(matches, base) {
			if err := os.RemoveAll(m); err != nil {
				return err
			}
		}
		return nil
	}
}

// pingRedis returns "" when the server answers, or why it is not used.
func pingRedis(ctx context.Context, rawURL string) string {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return fmt.Sprintf("bad Redis URL: %v", err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: Redis at %s: %v\n", hostOf(rawURL), err)
		return fmt.Sprintf("Redis at %s does not answer", hostOf(rawURL))
	}
	return ""
}

// redisPersistence describes how durable the server's writes are: it
// decides what a Redis save means.
func redisPersistence(ctx context.Context, rawURL string) string {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return "persistence unknown"
	}
	c := redis.NewClient(opts)
	defer c.Close()
	get := func(key string) string {
		v, err := c.ConfigGet(ctx, key).Result()
		if err != nil {
			return "?"
		}
		return v[key]
	}
	version := "Redis"
	if info, err := c.Info(ctx, "server").Result(); err == nil {
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				version = "Redis " + v
			}
		}
	}
	if get("appendonly") != "yes" {
		return version + ", appendonly no: saves live in memory until the next snapshot"
	}
	fsync := get("appendfsync")
	if fsync == "always" {
		return version + ", appendonly yes, appendfsync always: every write is fsynced"
	}
	return version + ", appendonly yes, appendfsync " + fsync + ": not fsynced on every write"
}

// deleteRedisPrefix deletes every key that starts with prefix.
func deleteRedisPrefix(ctx context.Context, rawURL, prefix string) error {
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return err
	}
	c := redis.NewClient(opts)
	defer c.Close()
	iter := c.Scan(ctx, 0, escapeGlob(prefix)+"*", 1000).Iterator()
	var keys []string
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		err := c.Unlink(ctx, keys...).Err()
		keys = keys[:0]
		return err
	}
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) >= 1000 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	return flush()
}

// escapeGlob escapes the glob characters of a Redis MATCH pattern.
func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	return r.Replace(s)
}
