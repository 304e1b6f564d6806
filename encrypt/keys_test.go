package encrypt_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/encrypt"
	"github.com/recallkit/recall/memstore"
)

func newKEK(t testing.TB) encrypt.KEK {
	t.Helper()
	k, err := encrypt.GenerateKEK()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rawLog returns key's log as the wrapped store keeps it.
func rawLog(t testing.TB, st recall.Store, key recall.Key) []recall.Entry {
	t.Helper()
	_, entries, err := st.Load(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// nopClose keeps a store open when the wrapper over it is closed.
type nopClose struct{ recall.Store }

func (nopClose) Close() error { return nil }

func TestRotate(t *testing.T) {
	ctx := context.Background()
	oldKey, newKey := newKEK(t), newKEK(t)
	inner := memstore.New(memstore.Options{})
	defer inner.Close()
	first := encrypt.Wrap(nopClose{inner}, encrypt.Keyring{Current: oldKey}, encrypt.Options{})
	keys := writeSecrets(t, first)
	// A session in the trash is rotated too: a restore brings it back.
	var trashed recall.Key
	for _, k := range keys {
		if k.IsMain() && k != keys[0] {
			trashed = k
		}
	}
	if _, err := recall.NewSession(first, trashed).Trash(ctx); err != nil {
		t.Fatal(err)
	}
	before := map[recall.Key][]recall.Entry{}
	for _, k := range keys {
		before[k] = rawLog(t, inner, k)
	}

	// The rotation is interrupted after its first session, then run again.
	both := encrypt.Wrap(nopClose{inner}, encrypt.Keyring{Current: newKey, Old: []encrypt.KEK{oldKey}}, encrypt.Options{})
	cctx, cancel := context.WithCancel(ctx)
	rep1, err := encrypt.Rotate(cctx, both, func(recall.Key) { cancel() })
	if !errors.Is(err, context.Canceled) || rep1.Rewrapped != 1 {
		t.Fatalf("interrupted rotation: %+v, %v", rep1, err)
	}
	rep2, err := encrypt.Rotate(ctx, both, nil)
	if err != nil || rep2.Sessions != len(keys) || rep2.Current != 1 || rep2.Rewrapped != len(keys)-1 || len(rep2.Failed) > 0 {
		t.Fatalf("resumed rotation: %+v, %v", rep2, err)
	}
	rep3, err := encrypt.Rotate(ctx, both, nil)
	if err != nil || rep3.Current != len(keys) || rep3.Rewrapped != 0 {
		t.Fatalf("rotation run again: %+v, %v", rep3, err)
	}

	// No log was rewritten: each got one rewrap entry at its end.
	for _, k := range keys {
		after := rawLog(t, inner, k)
		if len(after) != len(before[k])+1 || after[len(after)-1].Kind != encrypt.KindRewrap {
			t.Fatalf("%s: %d entries before, %d after, last %s", k, len(before[k]), len(after), after[len(after)-1].Kind)
		}
		for i, e := range before[k] {
			if !bytes.Equal(e.Data, after[i].Data) || e.Seq != after[i].Seq {
				t.Errorf("%s: entry %d rewritten", k, e.Seq)
			}
		}
		if bytes.Contains(after[len(after)-1].Data, []byte(oldKey.String())) {
			t.Errorf("%s: the rewrap entry holds the old key", k)
		}
	}

	// The old key is gone: the new one reads everything, and writes on.
	st := encrypt.Wrap(nopClose{inner}, encrypt.Keyring{Current: newKey}, encrypt.Options{})
	if _, err := recall.NewSession(st, trashed).Restore(ctx); err != nil {
		t.Fatal(err)
	}
	checkSecrets(t, st)
	if err := recall.NewSession(st, keys[0]).AddItems(ctx, recall.Item(`{"type":"message","role":"user","content":"after rotation"}`)); err != nil {
		t.Fatal(err)
	}
	items, _, err := st.Items(ctx, keys[0], 0)
	if err != nil || len(items) != 2 || !strings.Contains(string(items[1].Item), "after rotation") {
		t.Fatalf("items after rotation: %d, %v", len(items), err)
	}
	// The old key alone opens nothing written since.
	_, _, err = encrypt.Wrap(nopClose{inner}, encrypt.Keyring{Current: oldKey}, encrypt.Options{}).Items(ctx, keys[0], 1)
	if !errors.Is(err, encrypt.ErrWrongKey) {
		t.Fatalf("old key after rotation: %v, want ErrWrongKey", err)
	}

	// Rotating without the old key fails for each session, clearly.
	third := encrypt.Wrap(nopClose{inner}, encrypt.Keyring{Current: newKEK(t)}, encrypt.Options{})
	rep, err := encrypt.Rotate(ctx, third, nil)
	if err != nil || len(rep.Failed) != len(keys) || !strings.Contains(rep.Failed[0].Error, "wrong key") {
		t.Fatalf("rotation without the old key: %+v, %v", rep, err)
	}
}

func TestWrongKey(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New(memstore.Options{})
	defer inner.Close()
	keys := writeSecrets(t, encrypt.Wrap(nopClose{inner}, encrypt.Keyring{Current: newKEK(t)}, encrypt.Options{}))
	wrong := encrypt.Wrap(nopClose{inner}, encrypt.Keyring{Current: newKEK(t)}, encrypt.Options{})
	snapshot := func() string {
		p, err := inner.List(ctx, "", recall.ListOptions{Limit: -1, IncludeArchived: true})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(p)
		return string(b)
	}
	was := snapshot()
	item := recall.Item(`{"type":"message","role":"user","content":"x"}`)
	checks := map[string]error{}
	_, _, checks["Items"] = wrong.Items(ctx, keys[0], 0)
	_, checks["Stat"] = wrong.Stat(ctx, keys[0])
	_, _, checks["Load"] = wrong.Load(ctx, keys[0])
	_, checks["List"] = wrong.List(ctx, "proj", recall.ListOptions{})
	_, checks["Pop"] = wrong.Pop(ctx, keys[0])
	_, checks["Append"] = wrong.Append(ctx, keys[0], recall.Guard{}, item.Entry())
	_, checks["Append to a new session of the project"] = wrong.Append(ctx, recall.Key{Project: "proj", Session: "new"}, recall.Guard{}, item.Entry())
	_, checks["Search"] = recall.Search(ctx, wrong, recall.SearchOptions{Query: "zebra"})
	for what, err := range checks {
		if !errors.Is(err, encrypt.ErrWrongKey) {
			t.Errorf("%s with a wrong key: %v, want ErrWrongKey", what, err)
		}
	}
	if now := snapshot(); now != was {
		t.Errorf("a wrong key wrote:\nbefore %s\nafter  %s", was, now)
	}
	// Another project is not this key's business.
	if _, err := wrong.Append(ctx, recall.Key{Project: "other", Session: "s"}, recall.Guard{}, item.Entry()); err != nil {
		t.Errorf("append to another project: %v", err)
	}
}

func TestNoKey(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New(memstore.Options{})
	defer inner.Close()
	keyDir := t.TempDir()
	writeKey := func(project string) {
		if err := os.WriteFile(filepath.Join(keyDir, project+".key"), []byte(newKEK(t).String()+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeKey("user.ann")
	writeKey("user.bob")
	st := encrypt.Wrap(nopClose{inner}, encrypt.DirKeys(keyDir), encrypt.Options{})
	item := recall.Item(`{"type":"message","role":"user","content":"bob's secret"}`)
	ann, bob := recall.Key{Project: "user.ann", Session: "s"}, recall.Key{Project: "user.bob", Session: "s"}
	for _, k := range []recall.Key{ann, bob} {
		if _, err := st.Append(ctx, k, recall.Guard{}, item.Entry()); err != nil {
			t.Fatal(err)
		}
	}
	// Shredding bob's key makes his sessions unreadable; ann's read on.
	if err := os.Remove(filepath.Join(keyDir, "user.bob.key")); err != nil {
		t.Fatal(err)
	}
	st = encrypt.Wrap(nopClose{inner}, encrypt.DirKeys(keyDir), encrypt.Options{})
	if _, _, err := st.Items(ctx, bob, 0); !errors.Is(err, encrypt.ErrNoKey) {
		t.Errorf("items of a shredded project: %v, want ErrNoKey", err)
	}
	if _, err := st.Append(ctx, bob, recall.Guard{}, item.Entry()); !errors.Is(err, encrypt.ErrNoKey) {
		t.Errorf("append to a shredded project: %v, want ErrNoKey", err)
	}
	if items, _, err := st.Items(ctx, ann, 0); err != nil || len(items) != 1 {
		t.Errorf("items of a project with its key: %d, %v", len(items), err)
	}
	if m, _ := inner.Stat(ctx, bob); m.LastSeq != 1 {
		t.Errorf("the refused append wrote: last seq %d", m.LastSeq)
	}
	// No key at all: nothing is written, nothing sealed is read.
	none := encrypt.Wrap(nopClose{inner}, encrypt.Keyring{}, encrypt.Options{})
	if _, err := none.Append(ctx, recall.Key{Project: "p", Session: "s"}, recall.Guard{}, item.Entry()); !errors.Is(err, encrypt.ErrNoKey) {
		t.Errorf("append without a key: %v, want ErrNoKey", err)
	}
	if _, err := inner.Stat(ctx, recall.Key{Project: "p", Session: "s"}); !errors.Is(err, recall.ErrNotFound) {
		t.Errorf("append without a key wrote: %v", err)
	}
	if _, _, err := none.Items(ctx, ann, 0); !errors.Is(err, encrypt.ErrNoKey) {
		t.Errorf("items without a key: %v, want ErrNoKey", err)
	}
}

// TestTampered changes sealed data in the wrapped store: reads fail with
// recall.ErrCorrupt, and a sealed item copied to another session does not
// open there.
func TestTampered(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New(memstore.Options{})
	defer inner.Close()
	st := encrypt.Wrap(nopClose{inner}, testRing(t), encrypt.Options{})
	key, other := recall.Key{Project: "p", Session: "a"}, recall.Key{Project: "p", Session: "b"}
	if _, err := st.Append(ctx, key, recall.Guard{}, recall.Item(`{"type":"message","content":"hi"}`).Entry()); err != nil {
		t.Fatal(err)
	}
	sealed := rawLog(t, inner, key)[0].Data
	if _, err := inner.Append(ctx, other, recall.Guard{}, recall.Entry{Kind: recall.KindItem, Data: sealed}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Items(ctx, other, 0); !errors.Is(err, recall.ErrCorrupt) {
		t.Errorf("a sealed item moved to another session: %v, want ErrCorrupt", err)
	}
	// One byte of the ciphertext changed, still base64.
	flipped := bytes.Clone(sealed)
	i := bytes.Index(flipped, []byte(`"ct":"`)) + 10
	if flipped[i] == 'A' {
		flipped[i] = 'B'
	} else {
		flipped[i] = 'A'
	}
	if _, err := inner.Append(ctx, key, recall.Guard{}, recall.Entry{Kind: recall.KindItem, Data: flipped}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Items(ctx, key, 0); !errors.Is(err, recall.ErrCorrupt) {
		t.Errorf("a changed sealed item: %v, want ErrCorrupt", err)
	}
}

func TestLoadKEK(t *testing.T) {
	ctx := context.Background()
	k := newKEK(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "key")
	if err := os.WriteFile(file, []byte(k.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, _ := encrypt.ParseKEK([]byte(k.String()))
	hexKey := hex.EncodeToString(make([]byte, 32))
	t.Setenv("RECALL_TEST_KEK", k.String())
	t.Setenv("RECALL_TEST_HEX", hexKey)
	for _, src := range []string{"file:" + file, file, "env:RECALL_TEST_KEK", "cmd:cat '" + file + "'"} {
		got, err := encrypt.LoadKEK(ctx, src)
		if err != nil || got.ID() != k.ID() || got.ID() != raw.ID() {
			t.Errorf("LoadKEK(%s): %v, %v", src, got.ID(), err)
		}
	}
	if got, err := encrypt.LoadKEK(ctx, "env:RECALL_TEST_HEX"); err != nil || got.IsZero() {
		t.Errorf("hex key: %v", err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("not-a-key-but-a-secret-phrase"), 0o600); err != nil {
		t.Fatal(err)
	}
	for src, want := range map[string]error{
		"env:RECALL_TEST_UNSET":    encrypt.ErrNoKey,
		"file:" + dir + "/missing": encrypt.ErrNoKey,
		"cmd:exit 3":               encrypt.ErrNoKey,
		"file:" + bad:              encrypt.ErrBadKey,
		"env:":                     encrypt.ErrBadKey,
	} {
		_, err := encrypt.LoadKEK(ctx, src)
		if !errors.Is(err, want) {
			t.Errorf("LoadKEK(%s): %v, want %v", src, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-phrase") {
			t.Errorf("LoadKEK(%s) shows the key material: %v", src, err)
		}
	}
}

// TestSealedFormChecked: an item of type "encrypted" in another form is
// damaged data, not an item to pass on as it is.
func TestSealedFormChecked(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New(memstore.Options{})
	defer inner.Close()
	st := encrypt.Wrap(nopClose{inner}, testRing(t), encrypt.Options{})
	key := recall.Key{Project: "p", Session: "a"}
	if _, err := st.Append(ctx, key, recall.Guard{}, recall.Item(`{"type":"message","content":"hi"}`).Entry()); err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(rawLog(t, inner, key)[0].Data, &s); err != nil {
		t.Fatal(err)
	}
	reordered, _ := json.Marshal(s) // keys sorted: "ct" first
	if _, err := inner.Append(ctx, key, recall.Guard{}, recall.Entry{Kind: recall.KindItem, Data: reordered}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Items(ctx, key, 0); !errors.Is(err, recall.ErrCorrupt) {
		t.Errorf("a sealed item in another form: %v, want ErrCorrupt", err)
	}
	// Items written before encryption was turned on read as they are,
	// one of type "encrypted" too when it is through the wrapper.
	plain := recall.Item(`{"type":"message","content":"written in plaintext"}`)
	other := recall.Key{Project: "p", Session: "b"}
	if _, err := inner.Append(ctx, other, recall.Guard{}, plain.Entry()); err != nil {
		t.Fatal(err)
	}
	odd := recall.Item(`{"type":"encrypted","note":"a user's own item"}`)
	if _, err := st.Append(ctx, other, recall.Guard{}, odd.Entry()); err != nil {
		t.Fatal(err)
	}
	items, _, err := st.Items(ctx, other, 0)
	if err != nil || len(items) != 2 || !bytes.Equal(items[0].Item, plain) || !bytes.Equal(items[1].Item, odd) {
		t.Errorf("items: %v, %v", items, err)
	}
}

// TestDirKeysRotate rotates a project of DirKeys: the new key in
// PROJECT.key, the old one in PROJECT.key.old; then the old file goes.
func TestDirKeysRotate(t *testing.T) {
	ctx := context.Background()
	inner := memstore.New(memstore.Options{})
	defer inner.Close()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "user.ann.key")
	oldKey, newKey := newKEK(t), newKEK(t)
	if err := os.WriteFile(keyFile, []byte(oldKey.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	key := recall.Key{Project: "user.ann", Session: "s"}
	st := encrypt.Wrap(nopClose{inner}, encrypt.DirKeys(dir), encrypt.Options{})
	if _, err := st.Append(ctx, key, recall.Guard{}, recall.Item(`{"type":"message","content":"ann's"}`).Entry()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile+".old", []byte("\n"+oldKey.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(newKey.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if rep, err := encrypt.Rotate(ctx, st, nil); err != nil || rep.Rewrapped != 1 {
		t.Fatalf("rotate: %+v, %v", rep, err)
	}
	if err := os.Remove(keyFile + ".old"); err != nil {
		t.Fatal(err)
	}
	items, _, err := encrypt.Wrap(nopClose{inner}, encrypt.DirKeys(dir), encrypt.Options{}).Items(ctx, key, 0)
	if err != nil || len(items) != 1 || !strings.Contains(string(items[0].Item), "ann's") {
		t.Fatalf("items after rotation: %v, %v", items, err)
	}
	if _, err := encrypt.DirKeys(dir).Keys(ctx, "../etc"); !errors.Is(err, encrypt.ErrNoKey) {
		t.Errorf("a project that is a path: %v, want ErrNoKey", err)
	}
}
