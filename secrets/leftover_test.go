package secrets_test

import (
	"bytes"
	"context"
	"testing"

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
	if all := testsvc.SchemaText(t, dsn, schema); bytes.Contains(all, []byte(leftover)) {
		t.Errorf("a row of schema %s still holds the secret", schema)
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
	if all := testsvc.PrefixText(t, url, prefix); bytes.Contains(all, []byte(leftover)) {
		t.Errorf("a value under %s still holds the secret", prefix)
	}
}
