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
	"strconv"
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
	if err := indexShare(ctx, st, sh, hash); err != nil {
		return "", Share{}, fmt.Errorf("server: share %s: %w", key, err)
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

// ShareIndexPrefix starts the reserved store projects that list each
// user's links: ShareIndexPrefix+USER holds one session a link, named by
// the link's ID, whose metadata holds the link (shareMeta), so a user's
// links are listed a page at a time without reading a record. The index
// entry is written before the link's record and removed after it: a
// crash between leaves a listed link that does not open, which a revoke
// removes, never a link that works and is not listed.
const ShareIndexPrefix = ReservedPrefix + "share-index."

// shareIndex is the key of link id's entry in user's index.
func shareIndex(user, id string) recall.Key {
	return recall.Key{Project: ShareIndexPrefix + user, Session: id}
}

// indexShare writes the index entry of sh, whose record is named hash;
// one that exists is left as it is.
func indexShare(ctx context.Context, st recall.Store, sh Share, hash string) error {
	md := map[string]string{"hash": hash, "project": sh.Project, "session": sh.Session,
		"created": sh.Created.Format(time.RFC3339Nano), "at_seq": strconv.FormatInt(sh.AtSeq, 10)}
	if !sh.Expires.IsZero() {
		md["expires"] = sh.Expires.Format(time.RFC3339Nano)
	}
	change := recall.MetaChange{Metadata: map[string]*string{}}
	for k, v := range md {
		change.Metadata[k] = &v
	}
	_, err := st.Append(ctx, shareIndex(sh.User, sh.ID), recall.IfNew(), recall.NewEntry(recall.KindMeta, change))
	if errors.Is(err, recall.ErrConflict) {
		return nil
	}
	return err
}

// indexedShare is the link an index entry lists, and the name of its
// record.
func indexedShare(m recall.Meta) (Share, string) {
	md := m.Metadata
	sh := Share{ID: m.Key.Session, User: strings.TrimPrefix(m.Key.Project, ShareIndexPrefix), Project: md["project"], Session: md["session"]}
	sh.Created, _ = time.Parse(time.RFC3339Nano, md["created"])
	sh.Expires, _ = time.Parse(time.RFC3339Nano, md["expires"])
	sh.AtSeq, _ = strconv.ParseInt(md["at_seq"], 10, 64)
	return sh, md["hash"]
}

// SharePage is a page of a user's links, newest first.
type SharePage struct {
	Shares []Share
	// Next is the cursor of the next page; "" on the last.
	Next string
}

// ListSharePage returns a page of at most limit of user's links after
// cursor ("" for the first page): one List of user's index.
func ListSharePage(ctx context.Context, st recall.Store, user string, limit int, cursor string) (SharePage, error) {
	p, err := st.List(ctx, ShareIndexPrefix+user, recall.ListOptions{Limit: limit, Cursor: cursor, IncludeArchived: true})
	if err != nil {
		return SharePage{}, err
	}
	out := SharePage{Shares: make([]Share, 0, len(p.Sessions)), Next: p.Next}
	for _, m := range p.Sessions {
		sh, _ := indexedShare(m)
		out.Shares = append(out.Shares, sh)
	}
	return out, nil
}

// ListShares returns every link of user, or of every user (""): for the
// CLI, which administers a whole store; a server lists a page at a time
// (ListSharePage).
func ListShares(ctx context.Context, st recall.Store, user string) ([]Share, error) {
	found, err := listShares(ctx, st, user)
	out := make([]Share, len(found))
	for i, f := range found {
		out[i] = f.Share
	}
	return out, err
}

// storedShare is a link with the name of its record.
type storedShare struct {
	Share
	hash string
}

func listShares(ctx context.Context, st recall.Store, user string) ([]storedShare, error) {
	users := []string{user}
	if user == "" {
		ps, err := recall.Projects(ctx, st)
		if err != nil {
			return nil, err
		}
		users = users[:0]
		for _, p := range ps {
			if u, ok := strings.CutPrefix(p.Project, ShareIndexPrefix); ok {
				users = append(users, u)
			}
		}
	}
	var out []storedShare
	for _, u := range users {
		for cursor := ""; ; {
			p, err := st.List(ctx, ShareIndexPrefix+u, recall.ListOptions{Limit: 500, Cursor: cursor, IncludeArchived: true})
			if err != nil {
				return nil, err
			}
			for _, m := range p.Sessions {
				sh, hash := indexedShare(m)
				out = append(out, storedShare{sh, hash})
			}
			if cursor = p.Next; cursor == "" {
				break
			}
		}
	}
	return out, nil
}

// RevokeShare removes user's link id (a server's: the whole ID, one
// read) or, with user "" (any user's, as the CLI administers a store),
// the link an unambiguous prefix of its ID names, and returns it. Every
// replica answers 404 for it from then on.
func RevokeShare(ctx context.Context, st recall.Store, user, id string) (Share, error) {
	if id == "" {
		return Share{}, ErrNoShare
	}
	var found []storedShare
	if user != "" {
		m, err := st.Stat(ctx, shareIndex(user, id))
		if errors.Is(err, recall.ErrNotFound) || errors.Is(err, recall.ErrInvalidKey) {
			return Share{}, ErrNoShare
		}
		if err != nil {
			return Share{}, err
		}
		sh, hash := indexedShare(m)
		found = append(found, storedShare{sh, hash})
	} else {
		shares, err := listShares(ctx, st, user)
		if err != nil {
			return Share{}, err
		}
		for _, sh := range shares {
			if strings.HasPrefix(sh.ID, id) {
				found = append(found, sh)
			}
		}
	}
	switch len(found) {
	case 0:
		return Share{}, ErrNoShare
	case 1:
	default:
		return Share{}, fmt.Errorf("server: share %q names %d links: %w", id, len(found), ErrAmbiguousToken)
	}
	sh := found[0]
	// The record first, so the link stops working, then its entry.
	if err := st.Remove(ctx, recall.Key{Project: ShareProject, Session: sh.hash}); err != nil && !errors.Is(err, recall.ErrNotFound) {
		return Share{}, err
	}
	if err := st.Remove(ctx, shareIndex(sh.User, sh.ID)); err != nil && !errors.Is(err, recall.ErrNotFound) {
		return Share{}, err
	}
	return sh.Share, nil
}

// IndexShares writes the index entry of every link made before links
// were indexed (a store's links of an earlier version), so they are
// listed and revoked as the others. A server runs it once as it starts,
// the CLI before it lists or revokes; it reads every record, so it is
// not for a request's path. What is indexed already is left alone.
func IndexShares(ctx context.Context, st recall.Store) error {
	for cursor := ""; ; {
		p, err := st.List(ctx, ShareProject, recall.ListOptions{Limit: 500, Cursor: cursor, IncludeArchived: true})
		if err != nil {
			return err
		}
		for _, m := range p.Sessions {
			sh, err := readShare(ctx, st, m.Key.Session)
			if errors.Is(err, ErrNoShare) {
				continue // revoked meanwhile
			}
			if err != nil {
				return err
			}
			if err := indexShare(ctx, st, sh, m.Key.Session); err != nil {
				return err
			}
		}
		if cursor = p.Next; cursor == "" {
			return nil
		}
	}
}
