package encrypt

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/recallkit/recall"
)

// The sealed forms. An item is sealed into an item the stores keep like
// any other (a JSON object):
//
//	{"type":"encrypted","v":1,"kid":KEK ID,"dek":WRAPPED DEK,"ct":NONCE+CIPHERTEXT}
//
// and a title into the title text "encrypted:v1:KID:DEK:CT". The data key
// (DEK) is the session's: 32 random bytes, wrapped (AES-256-GCM) under the
// KEK kid with the session's key as associated data. The item or title is
// sealed (AES-256-GCM, a random 96-bit nonce) under the DEK, with the
// session's key and what it is (item, title) as associated data, so a
// sealed payload opens only in the session and the place it was written
// for. Every sealed payload carries its wrapped DEK, so each opens with
// the KEK alone: no read of another entry, and no side store.
const (
	sealedType  = "encrypted"
	titlePrefix = "encrypted:v1:"
)

var b64 = base64.RawURLEncoding

// sealedItem is the JSON form of a sealed item.
type sealedItem struct {
	Type string `json:"type"`
	V    int    `json:"v"`
	KID  string `json:"kid"`
	DEK  string `json:"dek"`
	CT   string `json:"ct"`
}

// dataKey is a session's data key, as it is written: the KEK that wraps
// it, the wrapped key, and the cipher that seals with it.
type dataKey struct {
	kid, wrapped string
	aead         cipher.AEAD
}

// assoc is the associated data of a sealed payload: what it is and the
// session it belongs to.
func assoc(what string, key recall.Key) []byte {
	return []byte("recall/encrypt/v1\x00" + what + "\x00" + key.Project + "\x00" + key.Session + "\x00" + key.Subpath)
}

func newGCM(key []byte) cipher.AEAD {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // keys are always 32 bytes here
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		panic(err) // GCM is always available for AES
	}
	return a
}

// seal returns nonce||ciphertext of plain.
func seal(a cipher.AEAD, plain, ad []byte) []byte {
	out := make([]byte, a.NonceSize(), a.NonceSize()+len(plain)+a.Overhead())
	if _, err := rand.Read(out); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return a.Seal(out, out, plain, ad)
}

// unseal opens what seal returned.
func unseal(a cipher.AEAD, sealed, ad []byte) ([]byte, error) {
	if len(sealed) < a.NonceSize() {
		return nil, fmt.Errorf("%w: sealed data is too short", recall.ErrCorrupt)
	}
	plain, err := a.Open(nil, sealed[:a.NonceSize()], sealed[a.NonceSize():], ad)
	if err != nil {
		return nil, fmt.Errorf("%w: sealed data does not authenticate", recall.ErrCorrupt)
	}
	return plain, nil
}

// newDataKey makes a random data key for key wrapped under kek.
func newDataKey(kek KEK, key recall.Key) (*dataKey, error) {
	dek := make([]byte, KeySize)
	if _, err := rand.Read(dek); err != nil {
		return nil, fmt.Errorf("encrypt: data key: %w", err)
	}
	wrapped := seal(newGCM(kek.secret), dek, assoc("dek", key))
	return &dataKey{kid: kek.id, wrapped: b64.EncodeToString(wrapped), aead: newGCM(dek)}, nil
}

// unwrapDataKey opens a wrapped data key of key with kek.
func unwrapDataKey(kek KEK, key recall.Key, wrapped string) ([]byte, error) {
	raw, err := b64.DecodeString(wrapped)
	if err != nil {
		return nil, fmt.Errorf("%w: wrapped data key is not base64", recall.ErrCorrupt)
	}
	dek, err := unseal(newGCM(kek.secret), raw, assoc("dek", key))
	if err != nil {
		return nil, fmt.Errorf("data key of %s under key %s: %w", key, kek.id, err)
	}
	if len(dek) != KeySize {
		return nil, fmt.Errorf("%w: data key of %s is %d bytes", recall.ErrCorrupt, key, len(dek))
	}
	return dek, nil
}

// sealItem seals an item of key.
func sealItem(dk *dataKey, key recall.Key, it recall.Item) recall.Item {
	s := sealedItem{Type: sealedType, V: 1, KID: dk.kid, DEK: dk.wrapped,
		CT: b64.EncodeToString(seal(dk.aead, it, assoc("item", key)))}
	b, _ := json.Marshal(s) // strings only: always marshals
	return b
}

// parseSealedItem reports whether it is a sealed item, and returns it. An
// item whose type is "encrypted" but that is not a sealed item as
// sealItem writes it is an error wrapping recall.ErrCorrupt.
func parseSealedItem(it []byte) (sealedItem, bool, error) {
	// A cheap test first: most items a store holds are sealed, as
	// sealItem writes them; the few that are not (written before
	// encryption was turned on) rarely hold the word.
	if !bytes.HasPrefix(it, []byte(`{"type":"encrypted","v":`)) && !bytes.Contains(it, []byte(`"encrypted"`)) {
		return sealedItem{}, false, nil
	}
	var s sealedItem
	if json.Unmarshal(it, &s) != nil || s.Type != sealedType {
		return sealedItem{}, false, nil
	}
	if s.V != 1 || s.KID == "" || s.DEK == "" || s.CT == "" || !bytes.HasPrefix(it, []byte(`{"type":"encrypted","v":`)) {
		return sealedItem{}, false, fmt.Errorf("%w: an item of type %q is not sealed as this version seals", recall.ErrCorrupt, sealedType)
	}
	return s, true, nil
}

// sealTitle seals a title of key; the empty title (no title) stays empty.
func sealTitle(dk *dataKey, key recall.Key, title string) string {
	if title == "" {
		return ""
	}
	return titlePrefix + dk.kid + ":" + dk.wrapped + ":" + b64.EncodeToString(seal(dk.aead, []byte(title), assoc("title", key)))
}

// parseSealedTitle splits a sealed title into its KID, DEK and CT.
func parseSealedTitle(title string) (kid, dek, ct string, ok bool) {
	rest, ok := strings.CutPrefix(title, titlePrefix)
	if !ok {
		return "", "", "", false
	}
	parts := strings.Split(rest, ":")
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// opener opens the sealed payloads of one session: it finds each data key
// from the KEK it names (see Store.dataKeyFor).
type opener struct {
	s   *Store
	ctx context.Context
	key recall.Key
}

// item opens a sealed item; an item that is not sealed (written before
// the store was encrypted) is returned as it is.
func (o opener) item(it recall.Item) (recall.Item, error) {
	s, ok, err := parseSealedItem(it)
	if err != nil {
		return nil, fmt.Errorf("encrypt: item of %s: %w", o.key, err)
	}
	if !ok {
		return it, nil
	}
	a, err := o.s.dataKeyFor(o.ctx, o.key, s.KID, s.DEK)
	if err != nil {
		return nil, err
	}
	ct, err := b64.DecodeString(s.CT)
	if err != nil {
		return nil, fmt.Errorf("encrypt: item of %s: %w: not base64", o.key, recall.ErrCorrupt)
	}
	plain, err := unseal(a, ct, assoc("item", o.key))
	if err != nil {
		return nil, fmt.Errorf("encrypt: item of %s: %w", o.key, err)
	}
	return plain, nil
}

// title opens a sealed title; one that is not sealed is returned as it is.
func (o opener) title(t string) (string, error) {
	kid, dek, ct, ok := parseSealedTitle(t)
	if !ok {
		return t, nil
	}
	a, err := o.s.dataKeyFor(o.ctx, o.key, kid, dek)
	if err != nil {
		return "", err
	}
	raw, err := b64.DecodeString(ct)
	if err != nil {
		return "", fmt.Errorf("encrypt: title of %s: %w: not base64", o.key, recall.ErrCorrupt)
	}
	plain, err := unseal(a, raw, assoc("title", o.key))
	if err != nil {
		return "", fmt.Errorf("encrypt: title of %s: %w", o.key, err)
	}
	return string(plain), nil
}

// entry opens the payload of an entry: items, titles and the items of a
// compaction. Other kinds hold no conversation text and pass as they are.
func (o opener) entry(e recall.Entry) (recall.Entry, error) {
	switch e.Kind {
	case recall.KindItem:
		if _, ok := e.Item(); !ok {
			return e, nil // a damaged record: readers skip it as they would
		}
		it, err := o.item(recall.Item(e.Data))
		if err != nil {
			return e, fmt.Errorf("seq %d: %w", e.Seq, err)
		}
		e.Data = json.RawMessage(it)
	case recall.KindTitle:
		var t recall.TitleChange
		if json.Unmarshal(e.Data, &t) != nil {
			return e, nil
		}
		title, err := o.title(t.Title)
		if err != nil {
			return e, fmt.Errorf("seq %d: %w", e.Seq, err)
		}
		if title != t.Title {
			t.Title = title
			e.Data, _ = json.Marshal(t)
		}
	case recall.KindCompaction:
		var c recall.Compaction
		if json.Unmarshal(e.Data, &c) != nil {
			return e, nil
		}
		changed := false
		for i, it := range c.Items {
			plain, err := o.item(it)
			if err != nil {
				return e, fmt.Errorf("seq %d: %w", e.Seq, err)
			}
			changed = changed || !bytes.Equal(plain, it)
			c.Items[i] = plain
		}
		if changed {
			e.Data = encodeCompaction(c)
		}
	}
	return e, nil
}

// sealEntry seals the payload of an entry that holds conversation text
// (items, titles, the items of a compaction) under dk; other entries are
// returned as they are. The entry has been validated.
func sealEntry(dk *dataKey, key recall.Key, e recall.Entry) recall.Entry {
	switch e.Kind {
	case recall.KindItem:
		e.Data = json.RawMessage(sealItem(dk, key, recall.Item(e.Data)))
	case recall.KindTitle:
		var t recall.TitleChange
		if json.Unmarshal(e.Data, &t) == nil && t.Title != "" {
			t.Title = sealTitle(dk, key, t.Title)
			e.Data, _ = json.Marshal(t)
		}
	case recall.KindCompaction:
		var c recall.Compaction
		if json.Unmarshal(e.Data, &c) == nil {
			for i, it := range c.Items {
				c.Items[i] = sealItem(dk, key, it)
			}
			e.Data = encodeCompaction(c)
		}
	}
	return e
}

// wrapID names a wrapped data key in a rewrap entry (see Rotate): a hash
// of the KEK ID and the wrapped key.
func wrapID(kid, wrapped string) string {
	h := sha256.Sum256([]byte(kid + ":" + wrapped))
	return b64.EncodeToString(h[:16])
}

// encodeCompaction encodes c with its items verbatim: encoding/json would
// compact them, and items are kept byte for byte.
func encodeCompaction(c recall.Compaction) json.RawMessage {
	items := c.Items
	c.Items = nil
	b, _ := json.Marshal(c) // a Compaction without items always marshals
	var list bytes.Buffer
	list.WriteString(`"items":[`)
	for i, it := range items {
		if i > 0 {
			list.WriteByte(',')
		}
		list.Write(it)
	}
	list.WriteByte(']')
	// "items":null occurs once: inside a string its quotes would be escaped.
	return bytes.Replace(b, []byte(`"items":null`), list.Bytes(), 1)
}
