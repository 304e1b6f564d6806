package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/mirror"
)

// secretURLs carry the password "hunter2xy" in their user info and query;
// none of them opens (nothing listens on port 1).
var secretURLs = []string{
	"postgres://u:hunter2xy@127.0.0.1:1/db?password=hunter2xy&connect_timeout=1&sslmode=disable",
	"postgres://u:hunter2xy@127.0.0.1:1/%zz?password=hunter2xy",
	"redis://:hunter2xy@127.0.0.1:1/0?token=hunter2xy",
	"rediss://u:hunter2xy@[::1/0",
	"sqlite:///nonexistent/dir/x.db?password=hunter2xy",
	"nosuch://u:hunter2xy@h/db?key=hunter2xy",
}

// TestStoreURLsNeverShown: whatever the command, a store URL's secrets
// stay out of stdout and stderr, errors and warnings alike.
func TestStoreURLsNeverShown(t *testing.T) {
	t.Setenv("RECALL_HOME", t.TempDir())
	for _, url := range secretURLs {
		for _, args := range [][]string{
			{"--store", url, "ls"},
			{"mirror", "sync", "--to", url, "--all"},
			{"mirror", "status", "--to", url, "--check"},
		} {
			var out, errOut bytes.Buffer
			code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
			if code == 0 {
				t.Errorf("%q succeeded", args)
			}
			if text := out.String() + errOut.String(); strings.Contains(text, "hunter") {
				t.Errorf("%q shows the password: %s", args, text)
			}
		}
		// a mirror whose replica is down: the command runs and warns
		var stderr bytes.Buffer
		a := &app{stdout: &bytes.Buffer{}, stderr: &stderr, home: t.TempDir()}
		err := a.useMirror(context.Background(), url)
		if err == nil {
			err = a.close()
		}
		if text := stderr.String(); strings.Contains(text, "hunter") || err != nil && strings.Contains(err.Error(), "hunter") {
			t.Errorf("--mirror %s shows the password: %s %v", url, text, err)
		}
	}
}

// TestMirrorStatusRedactsRecordedNames: a replica name recorded under
// older, laxer rules (a token left in the query) is redacted when shown.
func TestMirrorStatusRedactsRecordedNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := t.TempDir()
	fs, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		t.Fatal(err)
	}
	k := recall.Key{Project: "p", Session: "s"}
	if _, err := fs.Append(ctx, k, recall.Guard{}, recall.Item(`{"role":"user","content":"hi"}`).Entry()); err != nil {
		t.Fatal(err)
	}
	const url = "redis://replica.example:6379/0?token=hunter2xy"
	if _, err := mirror.Sync(ctx, fs, memstore.New(memstore.Options{}), mirror.SyncOptions{
		All: true, StateDir: mirror.StateDir(home, url), ReplicaName: url,
	}); err != nil {
		t.Fatal(err)
	}
	fs.Close()
	for _, jsonOut := range []bool{false, true} {
		out, errOut, code := runMirrorCmd(t, home, jsonOut, "status", "--all")
		if code != 0 || strings.Contains(out+errOut, "hunter") || !strings.Contains(out, "token=xxxxx") {
			t.Errorf("status (json %v): exit %d\n%s%s", jsonOut, code, out, errOut)
		}
	}
}
