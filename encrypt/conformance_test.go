package encrypt_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/encrypt"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/redisstore"
	"github.com/recallkit/recall/sqlstore"
	"github.com/recallkit/recall/storetest"
)

// testRing is one key for every project, the same in every test.
func testRing(t testing.TB) encrypt.Keyring {
	t.Helper()
	k, err := encrypt.NewKEK([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	return encrypt.Keyring{Current: k}
}

// backends opens a new, empty store of each backend (the services'
// ones skip without their server).
var backends = []struct {
	name string
	open func(t testing.TB) recall.Store
}{
	{"memstore", func(t testing.TB) recall.Store { return memstore.New(memstore.Options{}) }},
	{"filestore", func(t testing.TB) recall.Store { return openFile(t, t.TempDir()) }},
	{"sqlite", func(t testing.TB) recall.Store { return openSQLite(t, filepath.Join(t.TempDir(), "recall.db")) }},
	{"postgres", func(t testing.TB) recall.Store {
		dsn, schema := testsvc.PostgresSchema(t)
		return openPostgres(t, dsn, schema)
	}},
	{"redis", func(t testing.TB) recall.Store {
		url, prefix := testsvc.RedisPrefix(t)
		s, err := redisstore.Open(context.Background(), url, redisstore.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

func openFile(t testing.TB, dir string) recall.Store {
	t.Helper()
	s, err := filestore.Open(filestore.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openSQLite(t testing.TB, path string) recall.Store {
	t.Helper()
	s, err := sqlstore.OpenSQLite(context.Background(), path, sqlstore.Options{SQLiteSync: sqlstore.SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openPostgres(t testing.TB, dsn, schema string) recall.Store {
	t.Helper()
	s, err := sqlstore.OpenPostgres(context.Background(), dsn, sqlstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance runs the conformance suite on the encrypted store over
// every backend. Under -short (the fast tier) it runs over the memory, file
// and Redis stores only: the SQL stores run the same wrapper code as they
// (the wrapper sees a store's abilities, not its backend), their own
// conformance suites run in the same tier, and TestAtRestSQLite and
// TestAtRestPostgres read sealed sessions back through each SQL store; the
// long tier runs all five.
func TestConformance(t *testing.T) {
	for _, b := range backends {
		if testing.Short() && (b.name == "sqlite" || b.name == "postgres") {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			storetest.Run(t, func(t *testing.T) recall.Store {
				return encrypt.Wrap(b.open(t), testRing(t), encrypt.Options{})
			})
		})
	}
}
