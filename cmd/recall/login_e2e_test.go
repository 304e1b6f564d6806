package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoginRemoteStore runs recall serve over one home, logs in to it
// from another with a token, and uses its URL as a store: writes land in
// the token user's namespace on the server, recall ls lists them, a
// reader's token reads and cannot write, and logout forgets the token.
func TestLoginRemoteStore(t *testing.T) {
	srvEnv := newEnv(t)
	token := strings.TrimSpace(srvEnv.ok("", "token", "create", "--user", "alice").stdout)
	reader := strings.TrimSpace(srvEnv.ok("", "token", "create", "--user", "alice", "--read-only").stdout)
	s := srvEnv.serve()

	c := newEnv(t)
	c.fails(1, "recall login "+s.URL, "--store", s.URL+"/", "ls")
	c.fails(1, "refused the token", "login", s.URL, "--token", "rk_wrong")
	c.fails(2, "loopback", "login", "http://example.com", "--token", token)
	c.ok("", "login", s.URL, "--token", token)
	creds := filepath.Join(c.home, "user", ".config", "recall", "credentials.json")
	for path, want := range map[string]os.FileMode{creds: 0o600, filepath.Dir(creds): 0o700} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}

	c.ok("", "--store", s.URL, "chat", "-p", "from the laptop")
	ls := c.ok("", "--store", s.URL, "ls", "--all", "--json").stdout
	if !strings.Contains(ls, "from the laptop") {
		t.Errorf("recall --store %s ls --all:\n%s\nwant the session written through it", s.URL, ls)
	}
	// On the server, the session is in alice's namespace.
	if all := srvEnv.ok("", "ls", "--all", "--json").stdout; !strings.Contains(all, "from the laptop") {
		t.Errorf("the server's home does not hold the session:\n%s", all)
	}

	c.ok("", "login", s.URL, "--token", reader)
	if ls := c.ok("", "--store", s.URL, "ls", "--all", "--json").stdout; !strings.Contains(ls, "from the laptop") {
		t.Errorf("a reader's ls:\n%s", ls)
	}
	c.fails(1, "read-only", "--store", s.URL, "chat", "-p", "refused")

	c.ok("", "logout", s.URL)
	c.fails(1, "recall login", "--store", s.URL, "ls")
}
