package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

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

// tokenCache keeps the users of recently verified tokens, by the tokens'
// hashes, for ttl, so a request does not cost a store lookup of its
// token. Failed lookups are not kept: a token made anywhere works at once.
type tokenCache struct {
	ttl time.Duration    // <= 0: no caching
	now func() time.Time // time.Now; a test's clock
	mu  sync.RWMutex
	m   map[string]cachedToken
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
	return &tokenCache{ttl: ttl, now: time.Now, m: map[string]cachedToken{}}
}

// authenticate is Authenticate through the cache.
func (c *tokenCache) authenticate(ctx context.Context, st recall.Store, token string) (User, error) {
	if c.ttl <= 0 {
		return Authenticate(ctx, st, token)
	}
	if !wellFormed(token) {
		return User{}, ErrUnauthorized
	}
	hash := hashToken(token)
	gen := revocations.Load()
	c.mu.RLock()
	e, ok := c.m[hash]
	c.mu.RUnlock()
	now := c.now()
	if ok && e.gen == gen && now.Before(e.expires) {
		return e.user, nil
	}
	u, err := authenticateHash(ctx, st, hash)
	if err != nil {
		if ok {
			c.mu.Lock()
			delete(c.m, hash)
			c.mu.Unlock()
		}
		return User{}, err
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
		c.m[hash] = cachedToken{user: u, expires: now.Add(c.ttl), gen: gen}
	}
	c.mu.Unlock()
	return u, nil
}
