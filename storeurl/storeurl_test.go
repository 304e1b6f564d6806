package storeurl

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/redisstore"
	"github.com/recallkit/recall/sqlstore"
)

var key = recall.Key{Project: "p", Session: "s"}

func item(text string) recall.Item { return recall.Message("user", text) }

// open opens rawURL and closes the store when the test ends.
func open(t *testing.T, rawURL string) recall.Store {
	t.Helper()
	st, err := Open(context.Background(), rawURL)
	if err != nil {
		t.Fatalf("Open(%s): %v", rawURL, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// roundTrip writes an item and reads it back.
func roundTrip(t *testing.T, st recall.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Append(ctx, key, recall.Guard{}, item("hello").Entry()); err != nil {
		t.Fatal(err)
	}
	items, _, err := st.Items(ctx, key, 0)
	if err != nil || len(items) != 1 || items[0].Item.Text() != "hello" {
		t.Fatalf("read back %v, %v", items, err)
	}
}

// openErr opens rawURL, which must fail, and returns the error text after
// checking it is one line without the test password.
func openErr(t *testing.T, rawURL string) error {
	t.Helper()
	st, err := Open(context.Background(), rawURL)
	if err == nil {
		_ = st.Close()
		t.Fatalf("Open(%s) succeeded", rawURL)
	}
	if msg := err.Error(); strings.Contains(msg, "s3cret") || strings.Contains(msg, "\n") {
		t.Errorf("Open(%s) error is not one redacted line: %q", rawURL, msg)
	}
	return err
}

func TestSchemes(t *testing.T) {
	want := []string{"file", "http", "https", "mem", "postgres", "postgresql", "redis", "rediss", "sqlite"}
	// ExampleRegister's init registers its scheme in this test binary too.
	got := slices.DeleteFunc(Schemes(), func(s string) bool { return s == "scratch" })
	if !slices.Equal(got, want) {
		t.Fatalf("Schemes() = %v, want %v", got, want)
	}
}

func TestFile(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("RECALL_HOME", filepath.Join(home, "recall-home"))
	for _, tc := range []struct{ url, dir string }{
		{filepath.Join(home, "plain"), filepath.Join(home, "plain")},
		{"~/tilde", filepath.Join(home, "tilde")},
		{"file://" + filepath.Join(home, "url"), filepath.Join(home, "url")},
		{"file://localhost" + filepath.Join(home, "local"), filepath.Join(home, "local")},
		{"file://" + filepath.Join(home, "never") + "?sync=never", filepath.Join(home, "never")},
		{"file://" + filepath.Join(home, "with space"), filepath.Join(home, "with space")},
		{(&url.URL{Scheme: "file", Path: filepath.Join(home, "escaped dir%")}).String(), filepath.Join(home, "escaped dir%")},
		{"file://", filepath.Join(home, "recall-home")},
	} {
		t.Run(tc.url, func(t *testing.T) {
			st := open(t, tc.url)
			if _, ok := st.(*filestore.Store); !ok {
				t.Fatalf("got a %T", st)
			}
			roundTrip(t, st)
			// the data is where the URL said: a plain open of that directory sees it
			again, err := filestore.Open(filestore.Options{Dir: tc.dir})
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if m, err := again.Stat(context.Background(), key); err != nil || m.ItemCount != 1 {
				t.Fatalf("the store in %s: %+v, %v", tc.dir, m, err)
			}
		})
	}
	small := open(t, "file://"+filepath.Join(home, "small")+"?max_item_size=32")
	if _, err := small.Append(context.Background(), key, recall.Guard{}, item("longer than thirty-two bytes").Entry()); !errors.Is(err, recall.ErrTooLarge) {
		t.Errorf("max_item_size=32 was not applied: %v", err)
	}
	for _, tc := range []struct{ url, want string }{
		{"file://" + home + "?sync=sometimes", "sync"},
		{"file://" + home + "?snyc=never", "unknown option snyc (this store takes sync, max_item_size)"},
		{"file://" + home + "?max_item_size=big", "max_item_size"},
		{"file://elsewhere/tmp/x", "local path"},
	} {
		if err := openErr(t, tc.url); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s): %v, want it to mention %q", tc.url, err, tc.want)
		}
	}
}

func TestSQLite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sessions.db")
	st := open(t, "sqlite://"+path)
	if _, ok := st.(*sqlstore.Store); !ok {
		t.Fatalf("got a %T", st)
	}
	roundTrip(t, st)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no database at %s: %v", path, err)
	}
	small := open(t, "sqlite://"+filepath.Join(dir, "small.db")+"?max_item_size=32")
	if _, err := small.Append(context.Background(), key, recall.Guard{}, item("longer than thirty-two bytes").Entry()); !errors.Is(err, recall.ErrTooLarge) {
		t.Errorf("max_item_size=32 was not applied: %v", err)
	}
	for _, sync := range []string{"full", "normal", "NORMAL"} {
		roundTrip(t, open(t, "sqlite://"+filepath.Join(dir, sync+".db")+"?synchronous="+sync))
	}
	for _, tc := range []struct{ url, want string }{
		{"sqlite://", "no database path"},
		{"sqlite://" + path + "?journal=off", "unknown option journal (this store takes synchronous, max_item_size)"},
		{"sqlite://" + path + "?synchronous=off", `synchronous="off": want full or normal`},
	} {
		if err := openErr(t, tc.url); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s): %v, want it to mention %q", tc.url, err, tc.want)
		}
	}
}

func TestMem(t *testing.T) {
	for _, u := range []string{"mem://", "mem:", "MEM://"} {
		st := open(t, u)
		if _, ok := st.(*memstore.Store); !ok {
			t.Fatalf("%s: got a %T", u, st)
		}
		roundTrip(t, st)
	}
	if err := openErr(t, "mem://somewhere"); !strings.Contains(err.Error(), "mem://") {
		t.Errorf("mem://somewhere: %v", err)
	}
}

func TestUnknownScheme(t *testing.T) {
	for _, u := range []string{"ftp://u:s3cret@example.com/x", "postgress://u:s3cret@h/db?password=s3cret", "s3://bucket/key",
		"sqlite3://u:s3cret@/tmp/x.db?key=s3cret", "mysql://u:s3cret@h/%zz?password=s3cret"} {
		err := openErr(t, u)
		if !errors.Is(err, ErrUnknownScheme) {
			t.Errorf("Open(%s): %v, want ErrUnknownScheme", u, err)
		}
		for _, s := range Schemes() {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("Open(%s): %q does not list scheme %s", u, err, s)
			}
		}
	}
	if _, err := Open(context.Background(), "  "); err == nil {
		t.Error("an empty URL opened a store")
	}
	if err := openErr(t, "redis://u:s3cret@[::1"); !strings.Contains(err.Error(), "storeurl") {
		t.Errorf("a malformed URL: %v", err)
	}
}

// TestInvalidURL: a URL refused as written is ErrInvalidURL, whichever
// part is wrong, and a store that cannot be reached is not.
func TestInvalidURL(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the DSN must not become a directory here
	for _, u := range []string{" ", "sqlite://", "postgres://u:s3cret@h/%zz", "redis://u:s3cret@[::1",
		"host=h password=s3cret", "file:///tmp/x?sync=sometimes", "mem://?bogus=1", "sqlite:x.db?max_item_size=-1",
		"redis://u:s3cret@127.0.0.1:1/0?ttl=forever"} {
		if err := openErr(t, u); !errors.Is(err, ErrInvalidURL) {
			t.Errorf("Open(%q): %v, want ErrInvalidURL", u, err)
		}
	}
	// A database under a file cannot be created: the URL is fine.
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := openErr(t, "sqlite://"+filepath.Join(dir, "f", "x.db")); errors.Is(err, ErrInvalidURL) {
		t.Errorf("a database that cannot be created: %v, want an error other than ErrInvalidURL", err)
	}
}

// --- the servers

// withQuery adds parameters to a URL.
func withQuery(t *testing.T, raw string, kv ...string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func TestRedis(t *testing.T) {
	ctx := context.Background()
	redisURL := testsvc.RedisURL(t)
	o, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { _ = rdb.Close() }) // after the clean-up below
	prefix := fmt.Sprintf("storeurltest:%016x:", rand.Uint64())
	t.Cleanup(func() {
		// test clean-up only: the store itself never scans the keyspace
		it := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for it.Next(ctx) {
			rdb.Del(ctx, it.Val())
		}
	})
	st := open(t, withQuery(t, redisURL, "prefix", prefix, "ttl", "1h", "dial_timeout", "3s"))
	if _, ok := st.(*redisstore.Store); !ok {
		t.Fatalf("got a %T", st)
	}
	roundTrip(t, st)
	pt, err := rdb.PTTL(ctx, prefix+"meta:"+key.String()).Result()
	if err != nil || pt <= 59*time.Minute || pt > time.Hour {
		t.Fatalf("the session under the URL's prefix has TTL %v, %v; want about 1h", pt, err)
	}
	for _, tc := range []struct{ url, want string }{
		{withQuery(t, redisURL, "ttl", "soon"), "ttl"},
		{withQuery(t, redisURL, "prefix", prefix, "nonsense", "1"), "unexpected option"},
		{"redis://:s3cret@127.0.0.1:1/0", "redisstore"},
	} {
		if err := openErr(t, tc.url); !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s): %v, want it to mention %q", Redact(tc.url), err, tc.want)
		}
	}
}

func TestPostgres(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pgURL := testsvc.PostgresDSN(t)
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, scheme := range []string{"postgres", "postgresql"} {
		t.Run(scheme, func(t *testing.T) {
			_, schema := testsvc.PostgresSchema(t)
			raw := withQuery(t, pgURL, "schema", schema)
			raw = scheme + strings.TrimPrefix(raw, strings.SplitN(raw, ":", 2)[0])
			st := open(t, raw)
			if _, ok := st.(*sqlstore.Store); !ok {
				t.Fatalf("got a %T", st)
			}
			roundTrip(t, st)
			var n int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", schema).Scan(&n); err != nil || n == 0 {
				t.Fatalf("no tables in schema %s (%d, %v): the schema option was not applied", schema, n, err)
			}
		})
	}
	if err := openErr(t, "postgres://postgres:s3cret@127.0.0.1:1/test?sslmode=disable&connect_timeout=5"); !strings.Contains(err.Error(), "postgres") {
		t.Errorf("unreachable PostgreSQL: %v", err)
	}
}
