package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall/internal/testkit"
)

// The fake secrets of testdata/secrets (random, never issued).
const (
	secretsFixture = "testdata/secrets"
	secretsSID     = "7c1e2d3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f"
)

var fixtureSecrets = []string{
	"AKIAQ3VN7XK2LMP4RT6W",
	"ghp_4fJ9kQ2mX7pL0vR8sT3wY6zB1cN5dH9gK2aE",
	"pg-Hq8vN2mx7Lp-W4z",
	"xoxb-482915736021-5839201746385-Xb7Kq2LmP9vR4sT8wZ1nY6cD",
	"MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oD3G7sLvH2n4oAoGCCqGSM49",
}

// storeHolds returns the secrets some file under dir holds, as written
// or JSON-escaped once or twice (in a string that holds JSON).
func storeHolds(t *testing.T, dir string, secrets []string) []string {
	t.Helper()
	held := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") && d.Name() != ".index" {
			return err
		}
		if rel, _ := filepath.Rel(dir, path); strings.HasPrefix(rel, "user"+string(filepath.Separator)) {
			return nil // the tools' own folders, where the fixture was copied
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			once, _ := json.Marshal(s)
			twice, _ := json.Marshal(string(once))
			for _, form := range [][]byte{[]byte(s), once[1 : len(once)-1], twice[1 : len(twice)-1]} {
				if bytes.Contains(b, form) {
					held[s] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, s := range secrets {
		if held[s] {
			found = append(found, s)
		}
	}
	return found
}

// secretsFixturePath is the fixture's absolute path: recall runs in
// the test's project directory.
func secretsFixturePath(t *testing.T) string {
	p, err := filepath.Abs(secretsFixture)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestImportRedacts imports a Claude Code transcript that holds secrets
// in a message, a tool call's input and a tool's output: by default every
// one is redacted before it is stored (no file of the store holds one),
// the summary says what was, and importing again changes nothing. With
// --no-redact the items keep their bytes.
func TestImportRedacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.ok("", "import", "claude-code", secretsFixturePath(t))
	contains(t, "import summary", r.stdout, "redacted 6 secrets: 2 aws-access-token, 1 github-pat, 1 private-key, 1 slack-bot-token, 1 url-password")
	if found := storeHolds(t, e.home, fixtureSecrets); len(found) > 0 {
		t.Errorf("the store holds %q", found)
	}
	show := e.ok("", "show", secretsSID)
	for _, want := range []string{"AWS_ACCESS_KEY_ID=[REDACTED:aws-access-token]", "GH_TOKEN=[REDACTED:github-pat]",
		"postgres://deploy:[REDACTED:url-password]@db.internal", "[REDACTED:private-key]"} {
		contains(t, "show", show.stdout, want)
	}
	_, items := e.show(secretsSID)
	for _, it := range items {
		if !json.Valid(it) {
			t.Errorf("item is not JSON: %s", it)
		}
	}
	again := e.ok("", "import", "claude-code", secretsFixturePath(t))
	contains(t, "second import", again.stdout, "sessions imported: 0 new, 0 updated, 1 unchanged")
	if strings.Contains(again.stdout, "redacted") {
		t.Errorf("second import redacted again: %s", again.stdout)
	}

	plain := newEnv(t)
	plain.ok("", "import", "claude-code", "--no-redact", secretsFixturePath(t))
	if found := storeHolds(t, plain.home, fixtureSecrets); len(found) != len(fixtureSecrets) {
		t.Errorf("with --no-redact the store holds %d of the %d secrets", len(found), len(fixtureSecrets))
	}
	_, verbatim := plain.show(secretsSID)
	if len(verbatim) != len(items) {
		t.Fatalf("%d items with --no-redact, %d redacted", len(verbatim), len(items))
	}
	// The items a plain store keeps are those of a run without redaction:
	// the redacted ones differ exactly where a secret was.
	for i := range items {
		if !bytes.Equal(items[i], verbatim[i]) && !bytes.Contains(items[i], []byte("[REDACTED:")) {
			t.Errorf("item %d differs without a marker:\n%s\n%s", i, items[i], verbatim[i])
		}
	}
}

// TestImportRecallRedacts: a recall export holding secrets imports
// redacted by default, and importing it twice finds the redacted log the
// first import wrote.
func TestImportRecallRedacts(t *testing.T) {
	t.Parallel()
	src := newEnv(t)
	src.ok("", "import", "claude-code", "--no-redact", secretsFixturePath(t))
	export := filepath.Join(t.TempDir(), "x.jsonl")
	src.ok("", "export", secretsSID, "--format", "jsonl", "-o", export)

	e := newEnv(t)
	r := e.ok("", "import", "recall", export)
	contains(t, "import recall", r.stdout, "redacted 6 secrets")
	if found := storeHolds(t, e.home, fixtureSecrets); len(found) > 0 {
		t.Errorf("the store holds %q", found)
	}
	again := e.ok("", "--json", "import", "recall", export)
	if !strings.Contains(again.stdout, `"status": "unchanged"`) {
		t.Errorf("second import: %s", again.stdout)
	}
}

// TestImportWatchRedacts: recall import --watch redacts too.
func TestImportWatchRedacts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	copyTree(t, secretsFixture, filepath.Join(e.home, "user", ".claude", "projects"))
	w := e.startWatch()
	testkit.Eventually(t, time.Minute, "the redaction line", func() bool {
		return strings.Contains(w.stdout.String(), "redacted 6 secrets")
	})
	if found := storeHolds(t, e.home, fixtureSecrets); len(found) > 0 {
		t.Errorf("the store holds %q", found)
	}
}

// TestRedactFlag: --redact-pattern (which implies --redact) and
// RECALL_REDACT make the store redact what any command writes, the
// auto title included.
func TestRedactFlag(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "--redact-pattern", `ticket=TCK-\d{6}`, "chat", "-p", "deploy with "+fixtureSecrets[1]+" for TCK-204816")
	if found := storeHolds(t, e.home, append(fixtureSecrets, "TCK-204816")); len(found) > 0 {
		t.Errorf("the store holds %q", found)
	}
	e.fails(exitUsage, "--redact-pattern", "--redact-pattern", "nameonly", "chat", "-p", "hi")

	env := newEnv(t)
	env.vars = append(env.vars, "RECALL_REDACT=1")
	env.ok("", "chat", "-p", "the key is "+fixtureSecrets[0])
	if found := storeHolds(t, env.home, fixtureSecrets); len(found) > 0 {
		t.Errorf("with RECALL_REDACT=1 the store holds %q", found)
	}
	plain := newEnv(t)
	plain.ok("", "chat", "-p", "the key is "+fixtureSecrets[0])
	if found := storeHolds(t, plain.home, fixtureSecrets); len(found) != 1 {
		t.Errorf("without redaction the store holds %q", found)
	}
}

// TestServeRedact: recall serve --redact stores what clients send
// redacted.
func TestServeRedact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.serve("--redact", "--auth", "none")
	body := map[string]any{"items": []any{map[string]any{"type": "message", "role": "user",
		"content": "use " + fixtureSecrets[1] + " for the release"}}}
	if code, resp := s.do("POST", "/v1/conversations", "", body); code != 200 {
		t.Fatalf("POST /v1/conversations: %d %s", code, resp)
	}
	if found := storeHolds(t, e.home, fixtureSecrets); len(found) > 0 {
		t.Errorf("the store holds %q", found)
	}
}

// TestRedactEncrypted: with --redact and an encryption key, the secret
// is redacted before the item is sealed: reading with the key shows the
// marker, not the secret.
func TestRedactEncrypted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(e.ok("", "keys", "new").stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	e.vars = append(e.vars, "RECALL_ENCRYPT_KEY=file:"+keyFile)
	e.ok("", "--redact", "chat", "-p", "deploy with "+fixtureSecrets[1])
	r := e.ok("", "show", e.ls()[0].Key.Session)
	contains(t, "show with the key", r.stdout, "deploy with [REDACTED:github-pat]")
	if strings.Contains(r.stdout, fixtureSecrets[1]) {
		t.Errorf("show with the key holds the secret:\n%s", r.stdout)
	}
}
