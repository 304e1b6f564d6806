package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/recallkit/recall"
)

// DefaultTokenTTL is the default of Options.TokenTTL.
const DefaultTokenTTL = 5 * time.Second

// tokenCacheMax bounds the entries of a tokenCache; past it, expired ones
// are swept (only tokens the store has verified are kept, so the cache
// holds at most the store's live tokens).
const tokenCacheMax = 10_000

// revocations counts the tokens RevokeToken has removed in this process.
// A cached verification is good only while the count is the one read
// before the store was asked, so a revocation in this process ends every
// cached verification of every Server at once, whatever store instance
// it went through; a revocation in another process (recall token revoke,
// another replica) takes effect here when the entry expires.
var revocations atomic.Uint64

// Unknown tokens (guesses, or a client with a stale one) cost a store
// lookup each. So that a client cannot turn that into store load, an
// unknown token is answered from a short negative cache for
// unknownTokenTTL, and each client address may present unknownTokenRate
// unknown tokens a second (bursts of unknownTokenBurst); past that, a
// token not verified lately is answered 429 without a lookup until the
// address's bucket refills.
const (
	unknownTokenTTL   = time.Second
	unknownTokenRate  = rate.Limit(1)
	unknownTokenBurst = 10
)

// tokenCache keeps the users of recently verified tokens, by the tokens'
// hashes, for ttl, so a request does not cost a store lookup of its
// token, and limits the lookups of unknown ones (above). A token made
// anywhere works within unknownTokenTTL of a failed try.
type tokenCache struct {
	ttl time.Duration    // <= 0: no caching
	now func() time.Time // time.Now; a test's clock
	mu  sync.RWMutex
	m   map[string]cachedToken

	// Under their own lock: the hashes of unknown tokens, until when
	// they are answered without a lookup, and the client addresses'
	// buckets of unknown tokens.
	missMu  sync.Mutex
	misses  map[string]time.Time
	guesses map[string]*rate.Limiter
	crowd   *rate.Limiter // the bucket of the addresses past the bound
}

type cachedToken struct {
	user    User
	expires time.Time
	gen     uint64 // revocations when the store was asked
}

func newTokenCache(ttl time.Duration) *tokenCache {
	if ttl == 0 {
		ttl = DefaultTokenTTL
	}
	return &tokenCache{ttl: ttl, now: time.Now, m: map[string]cachedToken{},
		misses: map[string]time.Time{}, guesses: map[string]*rate.Limiter{},
		crowd: rate.NewLimiter(unknownTokenRate, unknownTokenBurst)}
}

// authenticate is Authenticate through the cache, for a request from the
// client address addr (its IP).
func (c *tokenCache) authenticate(ctx context.Context, st recall.Store, addr, token string) (User, error) {
	if !wellFormed(token) {
		return User{}, ErrUnauthorized
	}
	hash := hashToken(token)
	gen := revocations.Load()
	now := c.now()
	var cached bool
	if c.ttl > 0 {
		c.mu.RLock()
		e, ok := c.m[hash]
		c.mu.RUnlock()
		if ok && e.gen == gen && now.Before(e.expires) {
			return e.user, nil
		}
		cached = ok
	}
	if err := c.mayLookUp(addr, hash, now); err != nil {
		return User{}, err
	}
	u, expires, err := authenticateHash(ctx, st, hash, now)
	if errors.Is(err, ErrUnauthorized) {
		c.missed(addr, hash, now)
	}
	if err != nil || c.ttl <= 0 {
		if cached { // verified before, not now
			c.mu.Lock()
			delete(c.m, hash)
			c.mu.Unlock()
		}
		return u, err
	}
	c.mu.Lock()
	if len(c.m) >= tokenCacheMax {
		for h, e := range c.m {
			if !now.Before(e.expires) || e.gen != gen {
				delete(c.m, h)
			}
		}
	}
	if len(c.m) < tokenCacheMax {
		// Kept for the TTL, or until the token expires if that is sooner.
		until := now.Add(c.ttl)
		if !expires.IsZero() && expires.Before(until) {
			until = expires
		}
		c.m[hash] = cachedToken{user: u, expires: until, gen: gen}
	}
	c.mu.Unlock()
	return u, nil
}

// mayLookUp says whether the store may be asked for a token: not when it
// was unknown less than unknownTokenTTL ago (ErrUnauthorized), nor when
// addr has used up its unknown tokens (a 429).
func (c *tokenCache) mayLookUp(addr, hash string, now time.Time) error {
	c.missMu.Lock()
	defer c.missMu.Unlock()
	if until, ok := c.misses[hash]; ok && now.Before(until) {
		return ErrUnauthorized
	}
	lim := c.guesses[addr]
	if lim == nil && len(c.guesses) >= tokenCacheMax {
		lim = c.crowd
	}
	if lim == nil {
		return nil
	}
	if tokens := lim.TokensAt(now); tokens < 1 {
		wait := time.Duration((1 - tokens) / float64(unknownTokenRate) * float64(time.Second))
		return &APIError{Status: http.StatusTooManyRequests, Type: "requests", Code: "rate_limit_exceeded", RetryAfter: wait,
			Message: "Too many unknown API keys from your address. Please retry after the time in the Retry-After header with a valid key; create one with 'recall token create'."}
	}
	return nil
}

// missed records an unknown token from addr. Both maps are bounded: past
// tokenCacheMax entries, the expired misses and the full buckets (which
// are as good as new ones) are dropped, and while the map of buckets is
// still full, every new address shares one bucket, the crowd's.
func (c *tokenCache) missed(addr, hash string, now time.Time) {
	c.missMu.Lock()
	defer c.missMu.Unlock()
	if len(c.misses) >= tokenCacheMax {
		for h, until := range c.misses {
			if !now.Before(until) {
				delete(c.misses, h)
			}
		}
	}
	if len(c.misses) < tokenCacheMax {
		c.misses[hash] = now.Add(unknownTokenTTL)
	}
	lim := c.guesses[addr]
	if lim == nil && len(c.guesses) >= tokenCacheMax {
		for a, l := range c.guesses {
			if l.TokensAt(now) >= unknownTokenBurst {
				delete(c.guesses, a)
			}
		}
	}
	switch {
	case lim != nil:
	case len(c.guesses) < tokenCacheMax:
		lim = rate.NewLimiter(unknownTokenRate, unknownTokenBurst)
		c.guesses[addr] = lim
	default:
		lim = c.crowd
	}
	lim.AllowN(now, 1)
}
