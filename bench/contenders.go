package main

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/mattn/go-sqlite3" // the driver LangChainGo uses, for its INSERT floor
	_ "modernc.org/sqlite"          // the driver sqlstore uses, for its INSERT floor
)

// allContenders returns every row of the report, in report order: recall's
// stores, the peer, the baselines, the floors. Those whose server does not
// answer are marked unavailable.
func allContenders(ctx context.Context, root, pgDSN, redisURL string) []contender {
	pgDown := pingPostgres(ctx, pgDSN)
	pgInfo := "server settings unknown"
	if pgDown == "" {
		pgInfo = pgSettings(ctx, pgDSN)
	}
	redisDown := pingRedis(ctx, redisURL)

	cs := recallContenders(ctx, root, pgDSN, pgDown, pgInfo, redisURL, redisDown)
	cs = append(cs,
		langChainContender(root),
		sdkContender(root),
		simpleContender(root),
		headTailContender(root),
		fileFloorContender(root),
		sqliteFloor(root, "floor: SQLite INSERT", mediumModernc, "sqlite",
			"a bare single-row INSERT loop (n rows for a batch of n, one autocommit each) on modernc.org/sqlite "+
				"with the settings of sqlstore's `?synchronous=normal` (WAL, synchronous=NORMAL: no fsync per commit).",
			"?_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=busy_timeout(10000)"),
		sqliteFloor(root, "floor: SQLite INSERT (mattn)", mediumMattn, "sqlite3",
			"the same INSERT loop on mattn/go-sqlite3 with LangChainGo's settings (rollback journal, "+
				"synchronous=FULL). It sits out W5, where its 16 writers would take half a minute a run to show "+
				"what W1 shows already.",
			"?_busy_timeout=30000"),
		postgresFloor(pgDSN, pgInfo, pgDown),
	)
	return cs
}

// openInDir returns a contender's open: it opens a scope with open, on the
// path of the scope in dir.
func openInDir(dir string, open func(context.Context, string) (subject, error)) func(context.Context, string) (subject, error) {
	return func(ctx context.Context, scope string) (subject, error) {
		return open(ctx, filepath.Join(dir, scope))
	}
}

// langChainContender is the peer: LangChainGo's SQLite chat message
// history, one database a scope in root's folder langchaingo.
func langChainContender(root string) contender {
	return contender{
		name:   langRow,
		kind:   kindPeer,
		medium: mediumMattn,
		note: "LangChainGo v0.1.14 `memory/sqlite3` chat message history, on mattn/go-sqlite3 (cgo) with its " +
			"defaults (rollback journal, synchronous=FULL: every save is durable) plus a busy timeout. It keeps " +
			"a message's text and type only, so each item's JSON is stored as the text. A batch is one insert " +
			"per item (not atomic); it has no newest-n read (reads all, keeps the tail), no fork (Messages plus " +
			"SetMessages), no pop (Messages plus SetMessages of all but the last) and no list. Messages returns " +
			"at most 1,000 rows unless told otherwise and orders by a timestamp of one-second resolution (the " +
			"rows came back in order here, and are checked); SetMessages binds 3 variables a message in one " +
			"statement, so it cannot rewrite a history of more than 10,922 messages.",
		skip: map[string]string{"W3": "no API lists sessions"},
		open: func(ctx context.Context, scope string) (subject, error) {
			if err := os.MkdirAll(filepath.Join(root, "langchaingo"), 0o755); err != nil {
				return nil, err
			}
			return openLangChain(ctx, filepath.Join(root, "langchaingo", scope)+".db")
		},
		dropScope: removeGlob(filepath.Join(root, "langchaingo")),
	}
}

// simpleContender is the baseline recall replaces: one JSONL file a
// session, rewritten whole on every save, in root's folder simple.
func simpleContender(root string) contender {
	return contender{
		name:      simpleRow,
		kind:      kindBaseline,
		medium:    mediumFile,
		stateless: true,
		skip:      map[string]string{"W7": "rewrites the whole session on every save (W1 shows its cost)"},
		note: "the design recall replaces: one JSONL file per session; the agent keeps the history in " +
			"memory and every save re-serialises all of it and rewrites the file (truncate, write, fsync: " +
			"durable but not crash-atomic, and cheaper than a safe temp-file rename); loading and listing " +
			"parse every line of every file.",
		open:      openInDir(filepath.Join(root, "simple"), openSimpleJSONL),
		dropScope: removeGlob(filepath.Join(root, "simple")),
	}
}

// headTailContender is Claude Code's way of listing sessions, over the
// files simpleContender writes; it measures listing only.
func headTailContender(root string) contender {
	notAStore := "a listing strategy, not a store"
	return contender{
		name:      headTailRow,
		kind:      kindBaseline,
		medium:    mediumFile,
		stateless: true,
		note: "Claude Code's session picker: stat every session file and read its first and last 64 KiB, " +
			"32 files at a time, decoding the lines found there; then sort by modification time. It lists " +
			"the files the simple JSONL baseline writes.",
		skip: map[string]string{
			"W1": notAStore, "W2": notAStore, "W4": notAStore, "W5": notAStore, "W6": notAStore, "W7": notAStore,
		},
		listData: simpleRow,
		open:     openInDir(filepath.Join(root, "simple"), openHeadTail),
	}
}

// fileFloorContender is the physical floor of a file store, in root's
// folder floor (and, for listing, the folder simple, which
// simpleContender writes).
func fileFloorContender(root string) contender {
	return contender{
		name:      "floor: file",
		kind:      kindFloor,
		medium:    mediumFile,
		stateless: true,
		note: "the physical floor of a file store: a bare write+fsync of the items on an open file (W1, W5); " +
			"a bare read + line split + json.Valid (W2; the last items by reading 64 KiB blocks back from the " +
			"end); a bare readdir + stat of the project folder (W3); read + write + fsync of a copy (W4); read " +
			"the last block, ftruncate, fsync (W6). Its files hold the bare items, smaller than any store's; in W3 " +
			"it reads the folder simple JSONL wrote.",
		noListCheck: true,
		listData:    simpleRow,
		open: func(ctx context.Context, scope string) (subject, error) {
			if strings.HasPrefix(scope, "list") {
				return openFileFloor(ctx, filepath.Join(root, "simple", scope))
			}
			return openFileFloor(ctx, filepath.Join(root, "floor", scope))
		},
		dropScope: removeGlob(filepath.Join(root, "floor")),
	}
}

// postgresFloor is the INSERT loop on the PostgreSQL server at pgDSN,
// which pgInfo describes; pgDown says why it is not used, or is "".
func postgresFloor(pgDSN, pgInfo, pgDown string) contender {
	return contender{
		name:        "floor: PostgreSQL INSERT",
		kind:        kindFloor,
		medium:      mediumPostgres,
		note:        "the same INSERT loop on PostgreSQL over pgx (" + pgInfo + ").",
		unavailable: pgDown,
		skip:        sqlFloorSkips,
		open: func(ctx context.Context, scope string) (subject, error) {
			return openPGFloor(ctx, pgDSN, "recall_bench_floor_"+scope, "t")
		},
		dropScope: dropSchema(pgDSN, "recall_bench_floor_"),
	}
}

// sqlFloorSkips are the workloads the SQL floors sit out: they have an
// INSERT loop only.
var sqlFloorSkips = map[string]string{
	"W2": "no SQL floor", "W3": "no SQL floor", "W4": "no SQL floor", "W6": "no SQL floor",
}

func sqliteFloor(root, name string, med medium, driver, note, params string) contender {
	dir := filepath.Join(root, string(med)+"-floor")
	skip := sqlFloorSkips
	if med == mediumMattn {
		skip = maps.Clone(sqlFloorSkips)
		skip["W5"] = "too slow to be worth its time"
	}
	return contender{
		name:   name,
		kind:   kindFloor,
		medium: med,
		note:   note,
		skip:   skip,
		open: func(ctx context.Context, scope string) (subject, error) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			db, err := sql.Open(driver, "file:"+filepath.Join(dir, scope+".db")+params)
			if err != nil {
				return nil, err
			}
			f, err := newSQLFloor(ctx, db, "floor")
			if err != nil {
				db.Close()
				return nil, err
			}
			return f, nil
		},
		dropScope: removeGlob(dir),
	}
}

// dropSchema returns a dropScope that drops the PostgreSQL schema prefix+scope.
func dropSchema(dsn, prefix string) func(context.Context, string) error {
	return func(ctx context.Context, scope string) error {
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+prefix+scope+" CASCADE")
		return err
	}
}

// pingPostgres returns "" when the server answers, or why it is not used.
func pingPostgres(ctx context.Context, dsn string) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err == nil {
		err = conn.Ping(ctx)
		conn.Close(ctx)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: PostgreSQL at %s: %v\n", hostOf(dsn), err)
		return fmt.Sprintf("PostgreSQL at %s does not answer", hostOf(dsn))
	}
	return ""
}

// pgSettings describes the server: its version and whether a commit waits
// for its WAL flush.
func pgSettings(ctx context.Context, dsn string) string {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "server settings unknown"
	}
	defer conn.Close(ctx)
	var version, commit, fsync string
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('synchronous_commit'), current_setting('fsync')").Scan(&version, &commit, &fsync); err != nil {
		return "server settings unknown"
	}
	return fmt.Sprintf("PostgreSQL %s, synchronous_commit %s, fsync %s", version, commit, fsync)
}

// hostOf returns the host:port of a URL, never its password.
func hostOf(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(bad URL)"
	}
	return u.Host
}
