package testsvc

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// SchemaText returns the text of every row of every table of schema, each
// row as PostgreSQL casts it to text, for a test that looks for bytes a
// store must not keep.
func SchemaText(t testing.TB, dsn, schema string) []byte {
	t.Helper()
	ctx := context.Background()
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
	if err != nil || len(tables) < 2 {
		t.Fatalf("tables of %s: %v, %v", schema, tables, err)
	}
	var all []byte
	for _, table := range tables {
		rows, err := c.Query(ctx, `SELECT t::text FROM `+pgx.Identifier{schema, table}.Sanitize()+` t`)
		if err != nil {
			t.Fatal(err)
		}
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, strings.Join(texts, "\n")...)
	}
	return all
}

// PrefixText returns every value under prefix on the Redis server at url:
// each key's DUMP (which may be compressed) and its plain form (strings,
// lists, hashes' fields and values, sorted sets' and sets' members,
// streams' entries), for a test that looks for bytes a store must not
// keep. A key of another type fails t.
func PrefixText(t testing.TB, url, prefix string) []byte {
	t.Helper()
	ctx := context.Background()
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
	var all bytes.Buffer
	for _, k := range keys {
		b, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString(b)
		switch typ := c.Type(ctx, k).Val(); typ {
		case "string":
			all.WriteString(c.Get(ctx, k).Val())
		case "list":
			all.WriteString(strings.Join(c.LRange(ctx, k, 0, -1).Val(), "\n"))
		case "hash":
			for f, v := range c.HGetAll(ctx, k).Val() {
				all.WriteString(f + "=" + v + "\n")
			}
		case "zset":
			all.WriteString(strings.Join(c.ZRange(ctx, k, 0, -1).Val(), "\n"))
		case "set":
			all.WriteString(strings.Join(c.SMembers(ctx, k).Val(), "\n"))
		case "stream":
			for _, m := range c.XRange(ctx, k, "-", "+").Val() {
				fmt.Fprint(&all, m.Values)
			}
		default:
			t.Errorf("key %s of type %s not read", k, typ)
		}
	}
	return all.Bytes()
}
