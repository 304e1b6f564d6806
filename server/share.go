package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/recallkit/recall"
)

// Share links: a read-only link to one session's HTML view that works
// without a token until it expires or is revoked.
//
// A link is /share/TOKEN. The token is random (24 bytes); the store keeps
// only its SHA-256, as the session ID of the link's record in the reserved
// project ShareProject, so the store's contents never grant a link. A
// record holds whose session it is, where it lives, when it expires and
// the seq the session was shared at (0 for a live link). Revoking removes
// the record: every replica answers 404 from then on, since each reads
// the record from the store at each request.

// ShareProject is the reserved store project of the share links.
const ShareProject = ReservedPrefix + "shares"

// SharePrefix starts every share token.
const SharePrefix = "rs_"

// DefaultShareExpiry is how long a share link works by default.
const DefaultShareExpiry = 7 * 24 * time.Hour

// ErrNoShare reports a share link that does not exist, was revoked or
// has expired.
var ErrNoShare = errors.New("server: no such share link")

// Share is a share link as it is listed: never its token.
type Share struct {
	// ID names the link for listing and revoking: the first 16 hex
	// digits of its token's hash.
	ID      string    `json:"id"`
	User    string    `json:"user"`
	Project string    `json:"project"` // the store project of the session
	Session string    `json:"session"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires,omitzero"`
	// AtSeq is the session's LastSeq when it was shared: the link shows
	// the session as it stood then. 0: the link is live.
	AtSeq int64 `json:"at_seq,omitempty"`
}

// ShareOptions are the settings of a new link.
type ShareOptions struct {
	// Expires is when the link stops working. Zero: never.
	Expires time.Time
	// Live shows the session as it is when the link is opened, not as it
	// was when it was shared.
	Live bool
}

const shareType = "recall.share"

// CreateShare makes a share link to the session key for user and returns
// its token (shown once) and what it lists as. The session must exist
// and not be in the trash.
func CreateShare(ctx context.Context, st recall.Store, user string, key recall.Key, opts ShareOptions) (string, Share, error) {
	m, err := st.Stat(ctx, key)
	if err != nil {
		return "", Share{}, err
	}
	if !m.Trashed.IsZero() {
		return "", Share{}, fmt.Errorf("server: share %s: %w: it is in the trash", key, recall.ErrNotFound)
	}
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", Share{}, err
	}
	token := SharePrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	hash := shareHash(token)
	sh := Share{ID: hash[:16], User: user, Project: key.Project, Session: key.Session, Created: time.Now().UTC().Truncate(time.Second), Expires: opts.Expires.UTC()}
	if !opts.Live {
		sh.AtSeq = m.LastSeq
	}
	b, err := json.Marshal(struct {
		Type string `json:"type"`
		Share
	}{shareType, sh})
	if err != nil {
		return "", Share{}, err
	}
	if _, err := st.Append(ctx, recall.Key{Project: ShareProject, Session: hash}, recall.IfNew(), recall.NewEntry(recall.KindItem, json.RawMessage(b))); err != nil {
		return "", Share{}, fmt.Errorf("server: share %s: %w", key, err)
	}
	return token, sh, nil
}

// shareHash is the store's name of a token: the hex of its SHA-256.
func shareHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// OpenShare returns the link of token when it works at now: it exists,
// was not revoked and has not expired; ErrNoShare otherwise.
func OpenShare(ctx context.Context, st recall.Store, token string, now time.Time) (Share, error) {
	if !strings.HasPrefix(token, SharePrefix) || len(token) > 64 {
		return Share{}, ErrNoShare
	}
	sh, err := readShare(ctx, st, shareHash(token))
	if err != nil {
		return Share{}, err
	}
	if !sh.Expires.IsZero() && !now.Before(sh.Expires) {
		return Share{}, ErrNoShare
	}
	return sh, nil
}

func readShare(ctx context.Context, st recall.Store, hash string) (Share, error) {
	live, _, err := st.Items(ctx, recall.Key{Project: ShareProject, Session: hash}, 1)
	if err != nil {
		return Share{}, err
	}
	if len(live) == 0 {
		return Share{}, ErrNoShare
	}
	var v struct {
		Type string `json:"type"`
		Share
	}
	if json.Unmarshal(live[0].Item, &v) != nil || v.Type != shareType {
		return Share{}, fmt.Errorf("server: share %s: %w", hash[:16], recall.ErrCorrupt)
	}
	return v.Share, nil
}

// ListShares returns the links of user ("" for every user's).
func ListShares(ctx context.Context, st recall.Store, user string) ([]Share, error) {
	found, err := listShares(ctx, st, user)
	out := make([]Share, len(found))
	for i, f := range found {
		out[i] = f.Share
	}
	return out, err
}

// storedShare is a link with the key of its record.
type storedShare struct {
	Share
	key recall.Key
}

func listShares(ctx context.Context, st recall.Store, user string) ([]storedShare, error) {
	var out []storedShare
	for cursor := ""; ; {
		p, err := st.List(ctx, ShareProject, recall.ListOptions{Limit: 500, Cursor: cursor, IncludeArchived: true})
		if err != nil {
			return nil, err
		}
		for _, m := range p.Sessions {
			sh, err := readShare(ctx, st, m.Key.Session)
			if errors.Is(err, ErrNoShare) {
				continue // revoked meanwhile
			}
			if err != nil {
				return nil, err
			}
			if user == "" || sh.User == user {
				out = append(out, storedShare{sh, m.Key})
			}
		}
		if cursor = p.Next; cursor == "" {
			return out, nil
		}
	}
}

// RevokeShare removes user's link id (or an unambiguous prefix of it; ""
// user for any user's) and returns it. Every replica answers 404 for it
// from then on.
func RevokeShare(ctx context.Context, st recall.Store, user, id string) (Share, error) {
	if id == "" {
		return Share{}, ErrNoShare
	}
	shares, err := listShares(ctx, st, user)
	if err != nil {
		return Share{}, err
	}
	var found []storedShare
	for _, sh := range shares {
		if strings.HasPrefix(sh.ID, id) {
			found = append(found, sh)
		}
	}
	switch len(found) {
	case 0:
		return Share{}, ErrNoShare
	case 1:
	default:
		return Share{}, fmt.Errorf("server: share %q names %d links: %w", id, len(found), ErrAmbiguousToken)
	}
	if err := st.Remove(ctx, found[0].key); err != nil && !errors.Is(err, recall.ErrNotFound) {
		return Share{}, err
	}
	return found[0].Share, nil
}
