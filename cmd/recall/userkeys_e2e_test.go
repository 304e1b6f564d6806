package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"
)

// TestServeUserKeys: recall serve --user-keys seals each user's sessions
// under the user's own key: no byte of what they said is on disk, and
// removing one user's key file makes that user's sessions unreadable to
// a server started since, while the others' stay readable. --user-keys alone is a usage error.
func TestServeUserKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := filepath.Join(e.home, "keys")
	if err := os.MkdirAll(keys, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"server", "alice", "bob"} {
		k := e.ok("", "keys", "new").stdout
		if err := os.WriteFile(filepath.Join(keys, name+".key"), []byte(k), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.vars = append(e.vars, "RECALL_ENCRYPT_KEY=file:"+filepath.Join(keys, "server.key"))
	alice, bob := e.createToken("alice"), e.createToken("bob")
	s := e.serve("--user-keys", keys)
	ctx := context.Background()
	said := map[string]string{alice: "alice's plans for the parser", bob: "bob's notes on the cache"}
	convs := map[string]string{}
	for tok, text := range said {
		client := s.client(tok)
		c, err := client.Conversations.New(ctx, conversations.ConversationNewParams{
			Items: []responses.ResponseInputItemUnionParam{message(text)},
		})
		if err != nil {
			t.Fatal(err)
		}
		convs[tok] = c.ID
	}
	err := filepath.WalkDir(e.home, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		for _, text := range said {
			if strings.Contains(string(b), text) {
				t.Errorf("%s holds %q in plaintext", path, text)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// A running server keeps the data keys it opened in memory; one that
	// starts after the key file is gone cannot read alice's sessions.
	if err := os.Remove(filepath.Join(keys, "alice.key")); err != nil {
		t.Fatal(err)
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s = e.serve("--user-keys", keys)
	ca, cb := s.client(alice), s.client(bob)
	if _, err := ca.Conversations.Items.List(ctx, convs[alice], conversations.ItemListParams{}); err == nil {
		t.Error("alice's conversation still reads without her key")
	}
	page, err := cb.Conversations.Items.List(ctx, convs[bob], conversations.ItemListParams{})
	if err != nil || len(page.Data) != 1 || !strings.Contains(page.RawJSON(), said[bob]) {
		t.Errorf("bob's conversation after alice's key went: %v, %v", page, err)
	}

	e.vars = nil
	r := e.run("", "serve", "--addr", "127.0.0.1:0", "--user-keys", keys)
	if r.code != 2 || !strings.Contains(r.stderr, "--user-keys needs --encrypt-key") {
		t.Errorf("--user-keys alone: exit %d, %s", r.code, r.stderr)
	}
}
