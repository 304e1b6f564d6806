package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// Tokens live in the store itself, so every server over one store (every
// replica over one PostgreSQL or Redis, every process over one home)
// finds them. Each token is one session of the reserved project
// TokenProject whose session ID is the hex SHA-256 of the token: the
// token itself is never stored, and Authenticate is one Stat. The user,
// the admin flag and the expiry are the session's metadata, the creation
// time its Created. A
// Server keeps the tokens it has verified for Options.TokenTTL
// (auth_tokencache.go), so most requests make no Stat at all.

// TokenProject is the reserved store project that holds the hashes of
// the bearer tokens. Projects starting with ReservedPrefix are the
// server's own: no user can reach them, and an admin's listing skips them.
const TokenProject = ReservedPrefix + "tokens"

// ReservedPrefix starts every store project the server keeps for itself.
const ReservedPrefix = "_server."

// TokenPrefix starts every token, so a leaked one is recognisable (and
// secret scanners can be taught it).
const TokenPrefix = "rk_"

// tokenBytes is how many random bytes a token carries (256 bits).
const tokenBytes = 32

// tokenIDLen is the length of a token's ID: a prefix of its hash's hex.
const tokenIDLen = 12

// The metadata keys of a token's session.
const (
	mdUser    = "user"
	mdAdmin   = "admin"
	mdReader  = "read_only"
	mdExpires = "expires" // RFC 3339, UTC; absent: never
)

var (
	// ErrUnauthorized reports a missing, malformed, unknown, expired or
	// revoked token.
	ErrUnauthorized = errors.New("server: invalid or missing token")
	// ErrNoToken reports a token ID that names no token.
	ErrNoToken = errors.New("server: no such token")
	// ErrAmbiguousToken reports a token ID prefix that names more than
	// one token.
	ErrAmbiguousToken = errors.New("server: token id is ambiguous")
)

// TokenInfo describes a token without its secret.
type TokenInfo struct {
	// ID names the token for ls and revoke: the first 12 hex digits of
	// its SHA-256.
	ID    string `json:"id"`
	User  string `json:"user"`
	Admin bool   `json:"admin,omitempty"`
	// ReadOnly tokens read and never write (see TokenOptions.ReadOnly).
	ReadOnly bool      `json:"read_only,omitempty"`
	Created  time.Time `json:"created"`
	// Expires is when the token stops working; zero: never.
	Expires time.Time `json:"expires,omitzero"`
}

// Expired reports whether the token no longer works at now.
func (t TokenInfo) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// ValidateUser checks a user name: the rules of recall.ValidateID. The
// error wraps recall.ErrInvalidKey.
func ValidateUser(name string) error {
	if err := recall.ValidateID(name); err != nil {
		return fmt.Errorf("server: user name: %w", err)
	}
	return nil
}

// TokenOptions are the settings of a token CreateTokenWith makes.
type TokenOptions struct {
	// Admin makes an admin token. Default: a user's.
	Admin bool
	// ReadOnly makes a reader's token: every request that is not a GET
	// or HEAD (a write, of any API) is refused with 403. Default: the
	// token reads and writes.
	ReadOnly bool
	// Expires is when the token stops working: a request with it is then
	// refused (401), on every server, whatever they had verified. Default
	// (zero): never.
	Expires time.Time
}

// CreateToken makes a new bearer token for user (an admin when admin is
// set) that does not expire: CreateTokenWith with TokenOptions{Admin:
// admin}.
func CreateToken(ctx context.Context, st recall.Store, user string, admin bool) (string, TokenInfo, error) {
	return CreateTokenWith(ctx, st, user, TokenOptions{Admin: admin})
}

// CreateTokenWith makes a new bearer token for user with opts and keeps
// its hash in st. The token is returned once and cannot be recovered
// afterwards.
func CreateTokenWith(ctx context.Context, st recall.Store, user string, opts TokenOptions) (string, TokenInfo, error) {
	if err := ValidateUser(user); err != nil {
		return "", TokenInfo{}, err
	}
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", TokenInfo{}, fmt.Errorf("server: create token: %w", err)
	}
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	md := map[string]string{mdUser: user}
	if opts.Admin {
		md[mdAdmin] = "true"
	}
	if opts.ReadOnly {
		md[mdReader] = "true"
	}
	if !opts.Expires.IsZero() {
		md[mdExpires] = opts.Expires.UTC().Format(time.RFC3339Nano)
	}
	m, err := recall.NewSession(st, tokenKey(hashToken(token))).Create(ctx, recall.CreateOptions{Metadata: md})
	if err != nil {
		return "", TokenInfo{}, fmt.Errorf("server: create token: %w", err)
	}
	info, _ := tokenInfo(m)
	return token, info, nil
}

// Authenticate returns the user a token belongs to, or an error wrapping
// ErrUnauthorized when the token is malformed, unknown, expired or
// revoked. Other errors are the store's (it could not be asked).
func Authenticate(ctx context.Context, st recall.Store, token string) (User, error) {
	if !wellFormed(token) {
		return User{}, ErrUnauthorized
	}
	u, _, err := authenticateHash(ctx, st, hashToken(token), time.Now())
	return u, err
}

// authenticateHash is Authenticate of a well-formed token's hash at now;
// it returns the token's expiry too (zero: never).
func authenticateHash(ctx context.Context, st recall.Store, hash string, now time.Time) (User, time.Time, error) {
	m, err := st.Stat(ctx, tokenKey(hash))
	if errors.Is(err, recall.ErrNotFound) {
		return User{}, time.Time{}, ErrUnauthorized
	}
	if err != nil {
		return User{}, time.Time{}, fmt.Errorf("server: authenticate token %s: %w", hash[:tokenIDLen], hidingHash{err, hash})
	}
	// The lookup is by hash, so its timing says nothing of the token;
	// the constant-time check guards against a store that matched the
	// key loosely (a case-insensitive file system, say).
	info, ok := tokenInfo(m)
	if !ok || subtle.ConstantTimeCompare([]byte(m.Key.Session), []byte(hash)) != 1 || info.Expired(now) {
		return User{}, time.Time{}, ErrUnauthorized
	}
	return User{Name: info.User, Admin: info.Admin, ReadOnly: info.ReadOnly}, info.Expires, nil
}

// ListTokens returns every token of st, oldest first.
func ListTokens(ctx context.Context, st recall.Store) ([]TokenInfo, error) {
	var out []TokenInfo
	opts := recall.ListOptions{Limit: 500}
	for {
		page, err := st.List(ctx, TokenProject, opts)
		if err != nil {
			return nil, fmt.Errorf("server: list tokens: %w", err)
		}
		for _, m := range page.Sessions {
			if info, ok := tokenInfo(m); ok {
				out = append(out, info)
			}
		}
		if page.Next == "" {
			break
		}
		opts.Cursor = page.Next
	}
	slices.SortFunc(out, func(a, b TokenInfo) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// RevokeToken removes the token whose ID (or a longer prefix of its
// hash, up to the whole hash) is id. A revoked token stops working at
// once on every Server of this process; a Server in another process
// (another replica, or recall serve when the CLI revokes) may accept it
// for up to its Options.TokenTTL, the time it keeps a verified token. It returns the revoked token's info,
// ErrNoToken when no token matches and ErrAmbiguousToken when several do.
func RevokeToken(ctx context.Context, st recall.Store, id string) (TokenInfo, error) {
	id = strings.ToLower(id)
	if len(id) < tokenIDLen || len(id) > sha256.Size*2 || strings.Trim(id, "0123456789abcdef") != "" {
		return TokenInfo{}, fmt.Errorf("%w: %q is not a token id (%d to %d hex digits)", ErrNoToken, id, tokenIDLen, sha256.Size*2)
	}
	var hash string
	if len(id) == sha256.Size*2 {
		hash = id
	} else {
		opts := recall.ListOptions{Limit: 500}
		for {
			page, err := st.List(ctx, TokenProject, opts)
			if err != nil {
				return TokenInfo{}, fmt.Errorf("server: revoke token: %w", err)
			}
			for _, m := range page.Sessions {
				if strings.HasPrefix(m.Key.Session, id) {
					if hash != "" {
						return TokenInfo{}, fmt.Errorf("%w: %s", ErrAmbiguousToken, id)
					}
					hash = m.Key.Session
				}
			}
			if page.Next == "" {
				break
			}
			opts.Cursor = page.Next
		}
		if hash == "" {
			return TokenInfo{}, fmt.Errorf("%w: %s", ErrNoToken, id)
		}
	}
	key := tokenKey(hash)
	m, err := st.Stat(ctx, key)
	if err == nil {
		err = st.Remove(ctx, key)
		// After the removal, so a lookup that began before it and found
		// the token is cached under the old count, which no longer holds.
		revocations.Add(1)
	}
	if errors.Is(err, recall.ErrNotFound) {
		return TokenInfo{}, fmt.Errorf("%w: %s", ErrNoToken, id)
	}
	if err != nil {
		return TokenInfo{}, fmt.Errorf("server: revoke token: %w", err)
	}
	info, _ := tokenInfo(m)
	return info, nil
}

// wellFormed reports whether token has the shape CreateToken makes, so a
// request with garbage in its header costs no store call.
func wellFormed(token string) bool {
	rest, ok := strings.CutPrefix(token, TokenPrefix)
	if !ok || len(rest) != base64.RawURLEncoding.EncodedLen(tokenBytes) {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(rest)
	return err == nil
}

func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

func tokenKey(hash string) recall.Key {
	return recall.Key{Project: TokenProject, Session: hash}
}

// tokenInfo reads a token's session; ok is false when it is not one (an
// expiry that does not parse makes it none: it is refused).
func tokenInfo(m recall.Meta) (TokenInfo, bool) {
	user := m.Metadata[mdUser]
	if len(m.Key.Session) != sha256.Size*2 || ValidateUser(user) != nil {
		return TokenInfo{}, false
	}
	info := TokenInfo{
		ID:       m.Key.Session[:tokenIDLen],
		User:     user,
		Admin:    m.Metadata[mdAdmin] == "true",
		ReadOnly: m.Metadata[mdReader] == "true",
		Created:  m.Created,
	}
	if v, ok := m.Metadata[mdExpires]; ok {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return TokenInfo{}, false
		}
		info.Expires = t
	}
	return info, true
}

// hidingHash is a store's error about a token's session with the token's
// hash cut to its ID wherever the error's text names it (a store names
// the key it failed to read): the ID, what recall token ls shows, is all
// a log needs, and the whole hash stays out of it. It unwraps to the
// store's error.
type hidingHash struct {
	err  error
	hash string
}

func (h hidingHash) Error() string {
	return strings.ReplaceAll(h.err.Error(), h.hash, h.hash[:tokenIDLen]+"…")
}

func (h hidingHash) Unwrap() error { return h.err }
