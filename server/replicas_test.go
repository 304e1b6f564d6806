package server

import (
	"context"
	"net/http"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/testsvc"
	"github.com/recallkit/recall/sqlstore"
)

// openPostgresPair opens two stores over one fresh PostgreSQL schema, as
// two replicas would, and drops the schema when the test ends.
func openPostgresPair(t *testing.T) (recall.Store, recall.Store) {
	t.Helper()
	dsn, schema := testsvc.PostgresSchema(t)
	var sts [2]recall.Store
	for i := range sts {
		st, err := sqlstore.OpenPostgres(context.Background(), dsn, sqlstore.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		sts[i] = st
	}
	return sts[0], sts[1]
}

func TestTokensPostgres(t *testing.T) {
	st, _ := openPostgresPair(t)
	testTokens(t, st)
}

// TestTokensSharedByReplicas runs two servers over two connections to one
// PostgreSQL schema: a token made through one store handle works on both
// servers, and a revocation through the other stops it on both at once.
func TestTokensSharedByReplicas(t *testing.T) {
	st1, st2 := openPostgresPair(t)
	a := newEnv(t, st1, Options{RateLimit: -1}, nil) // makes alice, bob and root on st1
	b := &env{t: t, st: st2, tokens: a.tokens, log: a.log}
	srvB, err := New(context.Background(), st2, Options{RateLimit: -1, Logger: a.srv.log})
	if err != nil {
		t.Fatal(err)
	}
	b.srv, b.ts = srvB, newTestListener(t, srvB)

	id := a.newConv("alice", msg("user", "made on replica A's store"))
	for _, e := range []*env{a, b} {
		var s session
		e.do("GET", "/api/v1/sessions/"+id, "alice", nil).want(t, http.StatusOK).decode(t, &s)
		if s.ItemCount != 1 {
			t.Fatalf("session %+v", s)
		}
		e.do("GET", "/api/v1/sessions/"+id, "bob", nil).wantError(t, http.StatusNotFound)
		e.do("GET", "/api/v1/sessions?all=true", "root", nil).want(t, http.StatusOK)
	}

	// A token made on B's store works on A at once.
	ctx := context.Background()
	carol, info, err := CreateToken(ctx, st2, "carol", false)
	if err != nil {
		t.Fatal(err)
	}
	a.tokens["carol"] = carol
	a.do("GET", "/api/v1/me", "carol", nil).want(t, http.StatusOK)
	b.do("GET", "/api/v1/me", "carol", nil).want(t, http.StatusOK)
	// Revoked through A's store by RevokeToken in this process: refused
	// by both servers of this process at the next request, though both
	// have carol's token cached. (A replica in another process refuses it
	// within its TokenTTL: TestTokenCacheTTL.)
	if _, err := RevokeToken(ctx, st1, info.ID); err != nil {
		t.Fatal(err)
	}
	a.do("GET", "/api/v1/me", "carol", nil).wantError(t, http.StatusUnauthorized)
	b.do("GET", "/api/v1/me", "carol", nil).wantError(t, http.StatusUnauthorized)
	list, err := ListTokens(ctx, st2)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("tokens after the revoke: %+v", list)
	}
}
