package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testkit"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/storekit"
)

func TestSchemaTooNewSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "recall.db")
	s, err := OpenSQLite(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	k := recall.Key{Project: "p", Session: "s"}
	if _, err := s.Append(ctx, k, recall.Guard{}, msg("kept").Entry()); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Reopening the same version migrates nothing and keeps the data.
	s, err = OpenSQLite(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	if m, err := s.Stat(ctx, k); err != nil || m.ItemCount != 1 {
		t.Fatalf("after reopen: %+v, %v", m, err)
	}
	s.Close()

	// A newer program recorded version SchemaVersion+1.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO recall_schema (version) VALUES ($1)`, SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	db.Close()

	_, err = OpenSQLite(ctx, path, Options{})
	checkTooNew(t, err, "sqlite")
}

func TestSchemaTooNewPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, dsn, schema := newPostgresSchema(t)
	s.Close()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "recall_schema"}.Sanitize()+` (version) VALUES ($1)`, SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err = OpenPostgres(ctx, dsn, Options{Schema: schema})
	checkTooNew(t, err, "postgres")
}

func checkTooNew(t *testing.T, err error, store string) {
	t.Helper()
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("open of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	for _, want := range []string{"open " + store, fmt.Sprint("schema version ", SchemaVersion+1), "upgrade"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Log(err)
}

func TestMigrationsAreDense(t *testing.T) {
	for _, d := range []string{"sqlite", "postgres"} {
		ms, err := loadMigrations(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := ms[len(ms)-1].version; got != SchemaVersion {
			t.Errorf("%s: newest migration is %d, SchemaVersion is %d", d, got, SchemaVersion)
		}
	}
}

// TestOpenPostgresConcurrently opens one new schema from several goroutines
// at once: the advisory lock makes exactly one of them migrate.
func TestOpenPostgresConcurrently(t *testing.T) {
	t.Parallel()
	dsn, schema := testsvc.PostgresSchema(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := OpenPostgres(context.Background(), dsn, Options{Schema: schema})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestOpenSQLiteConcurrently opens new database files from several
// connections at once, many times over: switching a new database to WAL
// mode can meet SQLITE_BUSY without a wait on busy_timeout (about one
// open in 200 failed before setWAL retried it), and no open may fail.
func TestOpenSQLiteConcurrently(t *testing.T) {
	t.Parallel()
	const openers = 4
	rounds := testkit.Size(30, 150)
	for i := range rounds {
		path := filepath.Join(t.TempDir(), "recall.db")
		errs := make(chan error, openers)
		for range openers {
			go func() {
				s, err := OpenSQLite(context.Background(), path, Options{})
				if err == nil {
					err = s.Close()
				}
				errs <- err
			}()
		}
		for range openers {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
	}
}

func TestOpenPostgresErrors(t *testing.T) {
	testsvc.PostgresDSN(t)
	const secret = "s3cr3t-pw"
	cases := []struct {
		name, dsn string
	}{
		{"unreachable", "postgres://postgres:" + secret + "@127.0.0.1:1/test?sslmode=disable&connect_timeout=2"},
		{"no such database", "postgres://postgres:" + secret + "@127.0.0.1:5432/recall_no_such_db?sslmode=disable"},
		{"malformed url", "postgres://postgres:" + secret + "@127.0.0.1:notaport/test"},
		{"bad parameter", "postgres://postgres:" + secret + "@127.0.0.1/test?sslmode=bogus"},
		{"keyword form", "host=127.0.0.1 port=1 user=postgres password=" + secret + " dbname=test connect_timeout=2"},
		{"localhost, two addresses", "postgres://postgres:" + secret + "@localhost:1/test?connect_timeout=2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := OpenPostgres(context.Background(), tc.dsn, Options{Schema: testsvc.UniqueName("recall_test")})
			if err == nil {
				s.Close()
				t.Fatal("open succeeded")
			}
			text := err.Error()
			t.Log(text)
			if strings.Contains(text, secret) {
				t.Errorf("error shows the password: %s", text)
			}
			if strings.Contains(text, "\n") {
				t.Errorf("error is not one line: %q", text)
			}
			if !strings.HasPrefix(text, "sqlstore: open postgres ") {
				t.Errorf("error does not name the store: %s", text)
			}
		})
	}
}

func TestOpenSQLiteErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	notDB := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"empty":        "",
		"under a file": filepath.Join(file, "recall.db"),
		"not a db":     notDB,
		"query string": filepath.Join(dir, "x.db?mode=ro"),
		"memory":       ":memory:",
		"isadirectory": dir,
	} {
		t.Run(name, func(t *testing.T) {
			s, err := OpenSQLite(context.Background(), path, Options{})
			if err == nil {
				s.Close()
				t.Fatal("open succeeded")
			}
			t.Log(err)
			if text := err.Error(); !strings.HasPrefix(text, "sqlstore: open sqlite ") || strings.Contains(text, "\n") {
				t.Errorf("error is not one line naming the store: %q", text)
			}
			if damaged := errors.Is(err, ErrDamaged) && errors.Is(err, recall.ErrCorrupt); damaged != (path == notDB) {
				t.Errorf("errors.Is(err, ErrDamaged and recall.ErrCorrupt) = %v for %s", damaged, name)
			}
		})
	}
}

// TestOpenErrorsHideSecrets: an open that fails on a bad DSN (no server
// needed) gives one line naming the store, without the password, however
// the DSN is broken.
func TestOpenErrorsHideSecrets(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{
		"postgres://u:s3cret@h/%zz?password=s3cret",
		"postgresql://u:s3cret@h:port/db?sslpassword=s3cret",
		"postgres://u:s3cret@h/db?password=s3cret&pool_max_conns=many",
		"host=h password=s3cret port=x",
		"host=h password='s3cret' sslpassword=s3cret port=x",
		"postgres://u:s3cret@[::1/db",
	} {
		s, err := OpenPostgres(ctx, dsn, Options{})
		if err == nil {
			s.Close()
			t.Errorf("OpenPostgres(%q) succeeded", dsn)
			continue
		}
		if text := err.Error(); !strings.HasPrefix(text, "sqlstore: open postgres ") || strings.Contains(text, "s3cret") || strings.Contains(text, "\n") {
			t.Errorf("OpenPostgres(%q): %q", dsn, text)
		}
	}
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "r.db")+"?_auth_pass=s3cret", Options{})
	if err == nil {
		s.Close()
		t.Fatal("OpenSQLite with a query succeeded")
	}
	if text := err.Error(); strings.Contains(text, "s3cret") {
		t.Errorf("OpenSQLite: %q", text)
	}
}

// TestTooLarge: an item over the limit is refused before anything is
// written, on a new session and on an existing one.
func TestTooLarge(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "r.db"), Options{MaxItemSize: 1024})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		checkTooLarge(t, s)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, schema := testsvc.PostgresSchema(t)
		s, err := OpenPostgres(context.Background(), dsn, Options{MaxItemSize: 1024, Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		checkTooLarge(t, s)
	})
}

func checkTooLarge(t *testing.T, s *Store) {
	ctx := context.Background()
	big := msg(strings.Repeat("x", 1024))
	k := recall.Key{Project: "p", Session: "big"}
	_, err := s.Append(ctx, k, recall.Guard{}, msg("ok").Entry(), big.Entry())
	if !errors.Is(err, recall.ErrTooLarge) {
		t.Fatalf("append of %d bytes: %v, want ErrTooLarge", len(big), err)
	}
	if _, err := s.Stat(ctx, k); !errors.Is(err, recall.ErrNotFound) {
		t.Fatalf("refused batch created the session: %v", err)
	}
	if _, err := s.Append(ctx, k, recall.Guard{}, msg("first").Entry()); err != nil {
		t.Fatal(err)
	}
	// in a compaction too, which takes the general path
	comp := recall.NewEntry(recall.KindCompaction, recall.Compaction{Through: 1, Items: []recall.Item{big}})
	if _, err := s.Append(ctx, k, recall.Guard{}, comp); !errors.Is(err, recall.ErrTooLarge) {
		t.Fatalf("compaction with a big item: %v, want ErrTooLarge", err)
	}
	if _, err := s.Import(ctx, k, recall.Entry{Seq: 2, Kind: recall.KindItem, Time: storekit.Now(), Data: []byte(big)}); !errors.Is(err, recall.ErrTooLarge) {
		t.Fatalf("import of a big item: %v, want ErrTooLarge", err)
	}
	m, err := s.Stat(ctx, k)
	if err != nil || m.LastSeq != 1 || m.ItemCount != 1 {
		t.Fatalf("after refusals: %+v, %v", m, err)
	}
	// exactly at the limit is fine
	exact := msg(strings.Repeat("x", 1024-len(msg(""))))
	if _, err := s.Append(ctx, k, recall.Guard{}, exact.Entry()); err != nil {
		t.Fatalf("item of exactly the limit: %v", err)
	}
	verify(t, s)
}
