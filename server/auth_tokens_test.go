package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
)

// tokenStores are the stores the token tests run on.
func tokenStores(t *testing.T) map[string]recall.Store {
	t.Helper()
	fs, err := filestore.Open(filestore.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	return map[string]recall.Store{"memstore": memstore.New(memstore.Options{}), "filestore": fs}
}

func TestTokens(t *testing.T) {
	for name, st := range tokenStores(t) {
		t.Run(name, func(t *testing.T) { testTokens(t, st) })
	}
}

func testTokens(t *testing.T, st recall.Store) {
	ctx := context.Background()
	alice, ai, err := CreateToken(ctx, st, "alice", false)
	if err != nil {
		t.Fatal(err)
	}
	root, ri, err := CreateToken(ctx, st, "root", true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(alice, TokenPrefix) || len(alice) != len(TokenPrefix)+43 {
		t.Fatalf("token %q: want %s and 43 base64url characters", alice, TokenPrefix)
	}
	if alice == root || ai.ID == ri.ID || len(ai.ID) != tokenIDLen {
		t.Fatalf("tokens not distinct: %v %v", ai, ri)
	}
	if ai.User != "alice" || ai.Admin || !ri.Admin || ai.Created.IsZero() {
		t.Fatalf("infos %+v %+v", ai, ri)
	}

	// Only the hash is kept: the token's text appears nowhere in the store.
	_, entries, err := st.Load(ctx, tokenKey(hashToken(alice)))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(string(e.Data), alice[len(TokenPrefix):]) {
			t.Fatalf("the store keeps the token itself: %s", e.Data)
		}
	}

	u, err := Authenticate(ctx, st, alice)
	if err != nil || u != (User{Name: "alice"}) {
		t.Fatalf("Authenticate(alice) = %+v, %v", u, err)
	}
	u, err = Authenticate(ctx, st, root)
	if err != nil || u != (User{Name: "root", Admin: true}) {
		t.Fatalf("Authenticate(root) = %+v, %v", u, err)
	}
	// A token one character off, a malformed one, none at all.
	off := alice[:len(alice)-1] + "A"
	if alice[len(alice)-1] == 'A' {
		off = alice[:len(alice)-1] + "B"
	}
	for _, bad := range []string{"", "rk_", off, "Bearer " + alice, alice + "x", "sk_" + alice[3:], "rk_" + strings.Repeat("!", 43)} {
		if _, err := Authenticate(ctx, st, bad); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("Authenticate(%q) = %v, want ErrUnauthorized", bad, err)
		}
	}

	list, err := ListTokens(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0] != ai || list[1] != ri {
		t.Fatalf("ListTokens = %+v, want [%+v %+v]", list, ai, ri)
	}

	for _, id := range []string{"", "abc", "zzzzzzzzzzzz", strings.Repeat("0", 12)} {
		if _, err := RevokeToken(ctx, st, id); !errors.Is(err, ErrNoToken) {
			t.Errorf("RevokeToken(%q) = %v, want ErrNoToken", id, err)
		}
	}
	got, err := RevokeToken(ctx, st, strings.ToUpper(ai.ID))
	if err != nil || got != ai {
		t.Fatalf("RevokeToken = %+v, %v", got, err)
	}
	if _, err := Authenticate(ctx, st, alice); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("revoked token: %v, want ErrUnauthorized", err)
	}
	if _, err := RevokeToken(ctx, st, ai.ID); !errors.Is(err, ErrNoToken) {
		t.Fatalf("second revoke: %v, want ErrNoToken", err)
	}
	// Revoking by the whole hash works too.
	if _, err := RevokeToken(ctx, st, hashToken(root)); err != nil {
		t.Fatal(err)
	}
	if list, _ := ListTokens(ctx, st); len(list) != 0 {
		t.Fatalf("after revoking both: %+v", list)
	}

	for _, bad := range []string{"", "../x", "a b", "a\x00b", strings.Repeat("u", 129), ".."} {
		if _, _, err := CreateToken(ctx, st, bad, false); !errors.Is(err, recall.ErrInvalidKey) {
			t.Errorf("CreateToken(%q) = %v, want ErrInvalidKey", bad, err)
		}
	}
}
