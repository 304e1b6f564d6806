package remotestore_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/remotestore"
	"github.com/recallkit/recall/server"
	"github.com/recallkit/recall/sqlstore"
	"github.com/recallkit/recall/storetest"
)

// backend is a store a recall serve of the tests serves.
type backend struct {
	name string
	open func(t testing.TB) recall.Store
}

var backends = []backend{
	{"file", func(t testing.TB) recall.Store {
		st, err := filestore.Open(filestore.Options{Dir: t.TempDir(), Sync: filestore.SyncNever})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
	{"postgres", func(t testing.TB) recall.Store {
		dsn, schema := testsvc.PostgresSchema(t)
		st, err := sqlstore.OpenPostgres(context.Background(), dsn, sqlstore.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// serve starts recall serve (server.New behind a real TCP listener) over
// st with opts, its logs discarded and no rate limit.
func serve(t testing.TB, st recall.Store, opts server.Options) *httptest.Server {
	t.Helper()
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.RateLimit = -1
	h, err := server.New(context.Background(), st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// users hands out user names no other store of the run has.
var users atomic.Int64

// newUser makes a token of a new user of st and returns the remote store
// of that user at srv: empty, as the suite needs, since a user sees
// nothing of another's.
func newUser(t testing.TB, srv *httptest.Server, st recall.Store, opts server.TokenOptions) *remotestore.Store {
	t.Helper()
	name := fmt.Sprintf("u%d", users.Add(1))
	token, _, err := server.CreateTokenWith(context.Background(), st, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := remotestore.Open(context.Background(), srv.URL, remotestore.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	return rs
}

// TestConformance runs storetest against the remote store of a real
// recall serve, on each backend, each store a new user of one server
// under --auth token. The damaged-data cases need a record planted in the
// server's store and the blocked-write case a lock held there: neither
// hook reaches through HTTP, so they are left to the backends' own runs.
func TestConformance(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			srv := serve(t, st, server.Options{Auth: server.AuthToken})
			storetest.RunConfig(t, storetest.Config{
				New: func(t *testing.T) recall.Store { return newUser(t, srv, st, server.TokenOptions{}) },
				// A user's project P is "users.N.NAME.P" on the server,
				// so it has the room of a key's project less that prefix.
				MaxProject: 255 - len("users.9.u999999."),
			})
		})
	}
}

// TestConformanceLocal runs storetest against the local viewer's remote
// store (recall serve --auth none on loopback), whose projects are the
// home's, named as there: the full room of a key. Its server answers
// pages of 3, so that every read of the suite bigger than that goes
// through the client's paging.
func TestConformanceLocal(t *testing.T) {
	storetest.Run(t, func(t *testing.T) recall.Store {
		srv := serve(t, backends[0].open(t), server.Options{Auth: server.AuthNone, StorePage: 3})
		rs, err := remotestore.Open(context.Background(), srv.URL, remotestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rs.Close() })
		return rs
	})
}
