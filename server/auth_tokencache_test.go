package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
)

// countingStore counts the Stats of token sessions, and runs onStat (when
// set) after each one has read the store, and the Stats of other sessions,
// which fail while failStats is set.
type countingStore struct {
	recall.Store
	stats        atomic.Int64
	onStat       func()
	sessionStats atomic.Int64
	failStats    atomic.Bool
}

func (s *countingStore) Stat(ctx context.Context, key recall.Key) (recall.Meta, error) {
	m, err := s.Store.Stat(ctx, key)
	if key.Project != TokenProject {
		s.sessionStats.Add(1)
		if s.failStats.Load() {
			return recall.Meta{}, errors.New("the store went away")
		}
		return m, err
	}
	s.stats.Add(1)
	if s.onStat != nil {
		s.onStat()
	}
	return m, err
}

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// removeElsewhere removes the token's session from the store without
// RevokeToken, as a revocation by another process (recall token revoke,
// another replica) does as far as this process can tell.
func removeElsewhere(t *testing.T, st recall.Store, token string) {
	t.Helper()
	if err := st.Remove(context.Background(), tokenKey(hashToken(token))); err != nil {
		t.Fatal(err)
	}
}

// TestTokenCacheTTL: a verified token is not looked up again for
// TokenTTL; a revocation in another process is refused once that is up,
// and not before (the README's auth model).
func TestTokenCacheTTL(t *testing.T) {
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	const ttl = 5 * time.Second
	e := newEnv(t, st, Options{TokenTTL: ttl, RateLimit: -1}, func(s *Server) { s.auth.now = clock.now })
	st.stats.Store(0) // making the tokens looked them up

	e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)
	if n := st.stats.Load(); n != 1 {
		t.Fatalf("first request: %d token lookups, want 1", n)
	}
	for range 10 {
		e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)
	}
	if n := st.stats.Load(); n != 1 {
		t.Fatalf("10 more requests within the TTL: %d token lookups in all, want 1", n)
	}
	// Another user's token is looked up on its own.
	e.do("GET", "/api/v1/me", "bob", nil).want(t, http.StatusOK)
	if n := st.stats.Load(); n != 2 {
		t.Fatalf("bob's first request: %d token lookups in all, want 2", n)
	}

	// Revoked by another process: accepted until the TTL is up, from the
	// verification on, then refused.
	removeElsewhere(t, st, e.tokens["alice"])
	clock.add(ttl - time.Millisecond)
	e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)
	clock.add(time.Millisecond)
	e.do("GET", "/api/v1/me", "alice", nil).wantError(t, http.StatusUnauthorized)
	e.do("GET", "/api/v1/me", "alice", nil).wantError(t, http.StatusUnauthorized)
	// The web viewer's cookie goes through the same cache: refused too.
	req, _ := http.NewRequest("GET", e.ts.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: e.tokens["alice"]})
	c := e.ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin" {
		t.Fatalf("the viewer with a revoked token's cookie: %d to %q, want 303 to /signin", res.StatusCode, res.Header.Get("Location"))
	}

	// bob's entry expires too, and is verified again.
	before := st.stats.Load()
	e.do("GET", "/api/v1/me", "bob", nil).want(t, http.StatusOK)
	if n := st.stats.Load(); n != before+1 {
		t.Fatalf("bob after the TTL: %d token lookups, want 1", n-before)
	}
}

// TestTokenCacheRevokeHere: RevokeToken in this process ends the cached
// verification at once, whatever the clock says.
func TestTokenCacheRevokeHere(t *testing.T) {
	st := memstore.New(memstore.Options{})
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	e := newEnv(t, st, Options{TokenTTL: time.Hour, RateLimit: -1}, func(s *Server) { s.auth.now = clock.now })
	e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)
	e.do("GET", "/api/v1/me", "bob", nil).want(t, http.StatusOK)
	if _, err := RevokeToken(context.Background(), st, hashToken(e.tokens["alice"])); err != nil {
		t.Fatal(err)
	}
	e.do("GET", "/api/v1/me", "alice", nil).wantError(t, http.StatusUnauthorized)
	e.do("GET", "/api/v1/me", "bob", nil).want(t, http.StatusOK) // verified again, still good
}

// TestTokenCacheRevokeDuringLookup: a lookup that read the token just
// before a revocation in this process completed does not keep it.
func TestTokenCacheRevokeDuringLookup(t *testing.T) {
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	e := newEnv(t, st, Options{TokenTTL: time.Hour, RateLimit: -1}, nil)
	st.stats.Store(0) // making the tokens looked them up
	var once sync.Once
	st.onStat = func() {
		// The token was found; a revocation (of another token: alice's
		// own would make the next lookup fail anyway) completes now.
		once.Do(func() {
			if _, err := RevokeToken(context.Background(), st.Store, hashToken(e.tokens["bob"])); err != nil {
				t.Error(err)
			}
		})
	}
	e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)
	e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)
	if n := st.stats.Load(); n != 2 {
		t.Fatalf("%d token lookups, want 2: a verification that a revocation overtook is not kept", n)
	}
	e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)
	if n := st.stats.Load(); n != 2 {
		t.Fatalf("%d token lookups, want 2: the second verification is kept", n)
	}
}

// TestTokenCacheOff: a negative TokenTTL looks every request's token up,
// so a revocation by another process is refused at the next request.
func TestTokenCacheOff(t *testing.T) {
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	e := newEnv(t, st, Options{TokenTTL: -1, RateLimit: -1}, nil)
	st.stats.Store(0) // making the tokens looked them up
	for range 3 {
		e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)
	}
	if n := st.stats.Load(); n != 3 {
		t.Fatalf("3 requests: %d token lookups, want 3", n)
	}
	removeElsewhere(t, st, e.tokens["alice"])
	e.do("GET", "/api/v1/me", "alice", nil).wantError(t, http.StatusUnauthorized)
}

// guess is a well-formed token that no store holds.
func guess(i int) string {
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%032d", i))
}

// TestUnknownTokens: an unknown token is looked up once and then refused
// from the negative cache for unknownTokenTTL; an address that presents
// more than unknownTokenBurst unknown tokens gets 429s with Retry-After,
// without a lookup, until its bucket refills, while other addresses and
// verified tokens go on; and the maps stay bounded.
func TestUnknownTokens(t *testing.T) {
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	e := newEnv(t, st, Options{RateLimit: -1}, func(s *Server) { s.auth.now = clock.now })
	e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK) // verified: cached
	st.stats.Store(0)

	e.do("GET", "/api/v1/me", guess(0), nil).wantError(t, http.StatusUnauthorized)
	e.do("GET", "/api/v1/me", guess(0), nil).wantError(t, http.StatusUnauthorized)
	if n := st.stats.Load(); n != 1 {
		t.Fatalf("one unknown token twice: %d lookups, want 1", n)
	}
	for i := 1; i < unknownTokenBurst; i++ {
		e.do("GET", "/api/v1/me", guess(i), nil).wantError(t, http.StatusUnauthorized)
	}
	if n := st.stats.Load(); n != unknownTokenBurst {
		t.Fatalf("%d unknown tokens: %d lookups", unknownTokenBurst, n)
	}
	r := e.do("GET", "/api/v1/me", guess(100), nil)
	if ae := r.wantError(t, http.StatusTooManyRequests); ae.Error.Code != "rate_limit_exceeded" || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("one unknown token too many: %+v, Retry-After %q", ae, r.Header.Get("Retry-After"))
	}
	e.do("GET", "/api/v1/me", "bob", nil).wantError(t, http.StatusTooManyRequests) // not verified lately
	e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK)                 // verified
	if n := st.stats.Load(); n != unknownTokenBurst {
		t.Fatalf("after the burst: %d lookups, want still %d", n, unknownTokenBurst)
	}
	// Another address is not held back.
	if u, err := e.srv.auth.authenticate(context.Background(), st, "192.0.2.1", e.tokens["bob"]); err != nil || u.Name != "bob" {
		t.Fatalf("bob from another address: %+v, %v", u, err)
	}
	// A second later the bucket has one more, and guess(0) is looked up
	// again.
	clock.add(unknownTokenTTL)
	e.do("GET", "/api/v1/me", guess(0), nil).wantError(t, http.StatusUnauthorized)
	if n := st.stats.Load(); n != unknownTokenBurst+2 {
		t.Fatalf("a second later: %d lookups in all, want %d", n, unknownTokenBurst+2)
	}
	e.do("GET", "/api/v1/me", guess(5), nil).wantError(t, http.StatusTooManyRequests) // that was the one
	e.do("GET", "/api/v1/me", "bob", nil).want(t, http.StatusOK)                      // verified above

	// Bounded: guesses from more addresses than the bound keep both maps
	// at it.
	c := e.srv.auth
	for i := range tokenCacheMax + 10 {
		c.missed(fmt.Sprint("198.51.", i/256, ".", i%256), hashToken(guess(1000+i)), clock.now())
	}
	if len(c.misses) > tokenCacheMax || len(c.guesses) > tokenCacheMax {
		t.Fatalf("%d misses and %d addresses kept, bound %d", len(c.misses), len(c.guesses), tokenCacheMax)
	}
	clock.add(time.Hour)
	c.missed("203.0.113.1", hashToken(guess(1)), clock.now())
	if len(c.misses) != 1 || len(c.guesses) != 1 {
		t.Fatalf("an hour later, one more miss: %d misses and %d addresses kept, want the expired ones gone", len(c.misses), len(c.guesses))
	}
}

// downStore fails every Stat, naming the key as stores do.
type downStore struct{ recall.Store }

func (downStore) Stat(_ context.Context, key recall.Key) (recall.Meta, error) {
	return recall.Meta{}, fmt.Errorf("stat %s: connection refused", key)
}

// TestTokenHashNotLogged: while the store is down, a request's token
// lookup fails with a 5xx, and the log line names the token by its ID,
// never by its whole hash.
func TestTokenHashNotLogged(t *testing.T) {
	st := memstore.New(memstore.Options{})
	e := newEnv(t, st, Options{RateLimit: -1}, nil)
	e.srv.store = downStore{e.srv.store}
	r := e.do("GET", "/api/v1/me", "alice", nil)
	if r.StatusCode < 500 {
		t.Fatalf("a token lookup while the store is down: %d, want a 5xx", r.StatusCode)
	}
	hash := hashToken(e.tokens["alice"])
	if log := e.log.String(); strings.Contains(log, hash) || !strings.Contains(log, hash[:tokenIDLen]) {
		t.Fatalf("the log names the token other than by its ID %s:\n%s", hash[:tokenIDLen], log)
	}
}

// TestTokenExpiry: a token made with an expiry works until then and is
// refused (401) from then on, even when the server verified it moments
// before and keeps verified tokens far longer; one made expired already
// is refused at once; ListTokens shows the expiry.
func TestTokenExpiry(t *testing.T) {
	ctx := context.Background()
	st := &countingStore{Store: memstore.New(memstore.Options{})}
	clock := &fakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	e := newEnv(t, st, Options{TokenTTL: 24 * time.Hour, RateLimit: -1}, func(s *Server) { s.auth.now = clock.now })
	expires := clock.now().Add(time.Hour)
	tok, info, err := CreateTokenWith(ctx, st, "carol", TokenOptions{Expires: expires})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Expires.Equal(expires) {
		t.Errorf("created with expiry %v, want %v", info.Expires, expires)
	}
	old, _, err := CreateTokenWith(ctx, st, "dave", TokenOptions{Admin: true, Expires: clock.now().Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}

	e.do("GET", "/api/v1/me", tok, nil).want(t, http.StatusOK)
	looked := st.stats.Load()
	clock.add(time.Hour - time.Millisecond)
	e.do("GET", "/api/v1/me", tok, nil).want(t, http.StatusOK)
	if n := st.stats.Load(); n != looked {
		t.Errorf("before the expiry: %d more token lookups, want 0 (cached)", n-looked)
	}
	clock.add(time.Millisecond)
	e.do("GET", "/api/v1/me", tok, nil).wantError(t, http.StatusUnauthorized)
	e.do("GET", "/api/v1/me", tok, nil).wantError(t, http.StatusUnauthorized)
	e.do("GET", "/api/v1/me", old, nil).wantError(t, http.StatusUnauthorized)
	e.do("GET", "/api/v1/me", "alice", nil).want(t, http.StatusOK) // tokens without an expiry go on

	tokens, err := ListTokens(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Time{}
	for _, ti := range tokens {
		got[ti.User] = ti.Expires
	}
	if !got["carol"].Equal(expires) || !got["alice"].IsZero() || got["dave"].IsZero() {
		t.Errorf("listed expiries %v", got)
	}
}
