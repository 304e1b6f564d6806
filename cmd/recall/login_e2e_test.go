package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/fakeopenai"
	"github.com/recallkit/recall/remotestore"
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

// TestSyncLoggedInServer runs recall sync with no URL: an error that says
// to log in while no token is kept, the server logged in to once one is,
// and an error listing the servers once two are. recall chat --mirror
// with the server's URL writes the session to it, in the token user's
// namespace.
func TestSyncLoggedInServer(t *testing.T) {
	t.Parallel()
	srv := newEnv(t)
	token := srv.createToken("ann")
	s := srv.serve()
	c := newEnv(t)
	c.fails(exitUsage, "logged in to none", "sync")
	if r := c.run("", "sync"); !strings.Contains(r.stderr, "recall login URL") {
		t.Errorf("recall sync, logged in nowhere: %s", r.stderr)
	}
	c.ok("", "login", s.URL, "--token", token)
	mirrorToServer(t, c, s.URL, token)
	if out := c.ok("", "sync", "--dry-run").stdout; !strings.Contains(out, "a sync with "+s.URL+": would push 0 sessions") {
		t.Errorf("recall sync --dry-run after a mirrored chat: %s", out)
	}
	ls := c.ok("", "--store", s.URL, "ls", "--all", "--json").stdout
	if !strings.Contains(ls, "mirrored to the server") {
		t.Errorf("the server does not hold the mirrored session:\n%s", ls)
	}
	c.ok("", "chat", "-p", "synced to the server")
	if out := c.ok("", "sync").stdout; !strings.Contains(out, "synced with "+s.URL+": pushed 1 session") {
		t.Errorf("recall sync: %s", out)
	}
	if srvLs := srv.ok("", "ls", "--all", "--json").stdout; !strings.Contains(srvLs, "synced to the server") {
		t.Errorf("the server's store does not hold the synced session:\n%s", srvLs)
	}

	other := strings.Replace(s.URL, "127.0.0.1", "localhost", 1)
	c.ok("", "login", other, "--token", token)
	r := c.fails(exitUsage, "logged in to 2 servers", "sync")
	for _, u := range []string{s.URL, other} {
		contains(t, "stderr", r.stderr, u)
	}

	// A reader's token pulls and cannot push.
	c.ok("", "logout", other)
	c.ok("", "login", s.URL, "--token", srv.createToken("ann", "--read-only"))
	c.ok("", "chat", "-p", "not for a reader")
	c.fails(1, "read-only", "sync")
}

// mirrorToServer runs recall chat --mirror url in c, with a model that
// answers once the server holds the prompt, as a real model's answer
// takes long enough for (the offline model answers before a mirror's
// first request is done, and what a mirror has not sent by the exit is
// sent next time), and checks that the server then holds the whole turn.
func mirrorToServer(t *testing.T, c *env, url, token string) {
	t.Helper()
	ctx := context.Background()
	st, err := remotestore.Open(ctx, url, remotestore.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	held := func() []recall.Meta {
		p, err := st.List(ctx, "", recall.ListOptions{Limit: -1})
		if err != nil {
			return nil
		}
		return p.Sessions
	}
	model := fakeServer(t, c, "responses")
	model.SetResponder(func(r fakeopenai.Request) fakeopenai.Reply {
		for deadline := time.Now().Add(time.Minute); len(held()) == 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond) // polling the server, not waiting a fixed time
		}
		if isTitleRequest(r) {
			return fakeopenai.Reply{Text: `Title: "Mirrored".`}
		}
		return fakeopenai.Echo(r)
	})
	c.ok("", "chat", "-p", "mirrored to the server", "--mirror", url)
	c.vars = nil
	ms := held()
	if len(ms) != 1 || ms[0].ItemCount != 2 {
		t.Fatalf("the server holds %+v after recall chat --mirror; want the session's two items", ms)
	}
}
