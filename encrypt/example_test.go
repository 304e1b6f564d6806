package encrypt_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/encrypt"
	"github.com/recallkit/recall/memstore"
)

// Wrap a store with a key: what reaches the store is sealed, what comes
// back through the wrapper is plaintext. A real program reads its key
// with encrypt.LoadKEK("file:...", "env:...", "cmd:...").
func ExampleWrap() {
	ctx := context.Background()
	kek, err := encrypt.GenerateKEK()
	if err != nil {
		panic(err)
	}
	inner := memstore.New(memstore.Options{})
	st := encrypt.Wrap(inner, encrypt.Keyring{Current: kek}, encrypt.Options{})
	defer st.Close()

	sess := recall.NewSession(st, recall.Key{Project: "demo", Session: "s1"})
	if err := sess.AddItems(ctx, recall.Item(`{"type":"message","role":"user","content":"my password is hunter2"}`)); err != nil {
		panic(err)
	}
	items, err := sess.GetItems(ctx, 0)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(items[0]))

	raw, _, _ := inner.Items(ctx, recall.Key{Project: "demo", Session: "s1"}, 0)
	fmt.Println(strings.Contains(string(raw[0].Item), "hunter2"), string(raw[0].Item[:27]))
	// Output:
	// {"type":"message","role":"user","content":"my password is hunter2"}
	// false {"type":"encrypted","v":1,"
}

// Rotate moves every session to a new key without rewriting logs; the old
// key can then be destroyed.
func ExampleRotate() {
	ctx := context.Background()
	oldKey, _ := encrypt.GenerateKEK()
	newKey, _ := encrypt.GenerateKEK()
	inner := memstore.New(memstore.Options{})
	key := recall.Key{Project: "demo", Session: "s1"}
	st := encrypt.Wrap(inner, encrypt.Keyring{Current: oldKey}, encrypt.Options{})
	_ = recall.NewSession(st, key).AddItems(ctx, recall.Item(`{"type":"message","content":"hello"}`))

	rotating := encrypt.Wrap(inner, encrypt.Keyring{Current: newKey, Old: []encrypt.KEK{oldKey}}, encrypt.Options{})
	rep, err := encrypt.Rotate(ctx, rotating, nil)
	fmt.Println(rep.Sessions, rep.Rewrapped, err)

	onlyNew := encrypt.Wrap(inner, encrypt.Keyring{Current: newKey}, encrypt.Options{})
	items, err := recall.NewSession(onlyNew, key).GetItems(ctx, 0)
	fmt.Println(string(items[0]), err)
	// Output:
	// 1 1 <nil>
	// {"type":"message","content":"hello"} <nil>
}
