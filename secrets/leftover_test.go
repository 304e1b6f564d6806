package secrets_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/redisstore"
	"github.com/recallkit/recall/secrets"
	"github.com/recallkit/recall/sqlstore"
)

const leftover = "ghp_4fJ9kQ2mX7pL0vR8sT3wY6zB1cN5dH9gK2aE"

// redactStored stores a session holding leftover in an item, a title and
// its first prompt, searches it (so that search rows exist), redacts it
// after the fact and returns its key.
func redactStored(t *testing.T, st recall.Store) {
	t.Helper()
	ctx := context.Background()
	key := recall.Key{Project: "p", Session: "s"}
	if _, err := st.Append(ctx, key, recall.Guard{}, recall.Message("user", "GH_TOKEN="+leftover).Entry(),
		recall.Message("assistant", "stored "+leftover).Entry()); err != nil {
		t.Fatal(err)
	}
	if _, err := recall.NewSession(st, key).SetTitle(ctx, "token "+leftover, recall.TitleUser); err != nil {
		t.Fatal(err)
	}
	if page, err := recall.Search(ctx, st, recall.SearchOptions{Query: leftover[:12]}); err != nil || len(page.Hits) == 0 {
		t.Fatalf("search before: %d hits, %v", len(page.Hits), err)
	}
	r, err := secrets.New(secrets.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.Session(ctx, st, key, false); err != nil || res.Report.Total() != 3 {
		t.Fatalf("redact: %+v, %v", res, err)
	}
}

// TestRedactLeavesNoRow: after a redaction no row of any table of the
// PostgreSQL schema (entries, sessions, the search rows) holds a byte of
// the secret.
func TestRedactLeavesNoRow(t *testing.T) {
	dsn, schema := testsvc.PostgresSchema(t)
	ctx := context.Background()
	st, err := sqlstore.OpenPostgres(ctx, dsn, sqlstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	redactStored(t, st)
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 3 {
		t.Fatalf("tables of %s: %v, %v", schema, tables, err)
	}
	for _, table := range tables {
		rows, err := c.Query(ctx, `SELECT t::text FROM `+pgx.Identifier{schema, table}.Sanitize()+` t`)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if all := strings.Join(texts, "\n"); strings.Contains(all, leftover) || strings.Contains(strings.ToLower(all), strings.ToLower(leftover)) {
			t.Errorf("table %s still holds the secret", table)
		}
	}
}

// TestRedactLeavesNoValue: after a redaction no Redis value under the
// store's prefix (the log, the metadata hash, the indexes) holds it.
func TestRedactLeavesNoValue(t *testing.T) {
	url, prefix := testsvc.RedisPrefix(t)
	ctx := context.Background()
	st, err := redisstore.Open(ctx, url, redisstore.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	redactStored(t, st)
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys under %s: %v, %v", prefix, keys, err)
	}
	for _, k := range keys {
		var vals []string
		switch c.Type(ctx, k).Val() {
		case "string":
			vals = []string{c.Get(ctx, k).Val()}
		case "list":
			vals = c.LRange(ctx, k, 0, -1).Val()
		case "hash":
			for f, v := range c.HGetAll(ctx, k).Val() {
				vals = append(vals, f, v)
			}
		case "zset":
			vals = c.ZRange(ctx, k, 0, -1).Val()
		}
		vals = append(vals, c.Dump(ctx, k).Val())
		if strings.Contains(strings.Join(vals, "\n"), leftover) {
			t.Errorf("key %s still holds the secret", k)
		}
	}
}
