package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// grepTree reports whether any file under dir holds s.
func grepTree(t *testing.T, dir, s string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		found = found || bytes.Contains(b, []byte(s))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestEncryptedStore runs an encrypted home through the CLI: chat, a
// mirror, export, a wrong key, a rotation; the plaintext is never on disk.
func TestEncryptedStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(e.ok("", "keys", "new").stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	key := "--encrypt-key=file:" + keyFile
	replica := filepath.Join(t.TempDir(), "replica")
	e.ok("", key, "chat", "-p", "the zebra7731 question")
	e.vars = append(e.vars, "RECALL_ENCRYPT_KEY=file:"+keyFile)
	e.ok("", "chat", "-c", "--mirror", "file://"+replica, "-p", "more zebra7731")
	e.ok("", "rename", e.ls()[0].Key.Session, "Secret title4412")
	for _, dir := range []string{e.home, replica} {
		for _, s := range []string{"zebra7731", "title4412"} {
			if grepTree(t, dir, s) {
				t.Errorf("%s holds %s in plaintext", dir, s)
			}
		}
	}
	ms := e.ls()
	if len(ms) != 1 || ms[0].Title != "Secret title4412" || ms[0].FirstPrompt != "the zebra7731 question" || ms[0].ItemCount != 4 {
		t.Fatalf("ls with the key: %+v", ms)
	}
	if r := e.ok("", "export", ms[0].Key.Session, "--format", "markdown"); !strings.Contains(r.stdout, "more zebra7731") {
		t.Errorf("export with the key: %q", r.stdout)
	}

	// A wrong key reads nothing and writes nothing.
	wrongFile := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrongFile, []byte(e.ok("", "keys", "new").stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	e.fails(1, "wrong key", "--encrypt-key", "file:"+wrongFile, "show", ms[0].Key.Session)
	e.fails(1, "wrong key", "--encrypt-key", "file:"+wrongFile, "chat", "-c", "-p", "x")
	e.fails(1, "no key", "--encrypt-key", "env:RECALL_NO_SUCH_VARIABLE", "ls")
	if m := e.ls(); m[0].LastSeq != ms[0].LastSeq {
		t.Errorf("a wrong key wrote: last seq %d, was %d", m[0].LastSeq, ms[0].LastSeq)
	}

	// Rotation to a new key; the old one is then of no use.
	newFile := filepath.Join(t.TempDir(), "new")
	if err := os.WriteFile(newFile, []byte(e.ok("", "keys", "new").stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	e.fails(2, "--old-key is required", "keys", "rotate")
	r := e.ok("", "--encrypt-key", "file:"+newFile, "keys", "rotate", "--old-key", "file:"+keyFile)
	contains(t, "rotate", r.stdout, "1 sessions: 1 rotated")
	r = e.ok("", "--encrypt-key", "file:"+newFile, "keys", "rotate", "--old-key", "file:"+keyFile)
	contains(t, "rotate again", r.stdout, "1 already current")
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	e.vars = append(e.vars, "RECALL_ENCRYPT_KEY=file:"+newFile)
	if m, items := e.show(ms[0].Key.Session); m.Title != "Secret title4412" || len(items) != 4 {
		t.Errorf("show after rotation: %+v, %d items", m, len(items))
	}
}
