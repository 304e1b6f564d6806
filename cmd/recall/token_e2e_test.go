package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/recallkit/recall/server"
)

// TestTokenExpires: token create --expires gives the token an expiry,
// which --json and token ls show (a token without one: never); an age
// that is not one is a usage error.
func TestTokenExpires(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createToken("alice")
	before := time.Now()
	r := e.ok("", "token", "create", "--user", "ci", "--expires", "30d", "--json")
	var created struct {
		Token string `json:"token"`
		server.TokenInfo
	}
	if err := json.Unmarshal([]byte(r.stdout), &created); err != nil {
		t.Fatal(err)
	}
	want := before.Add(30 * 24 * time.Hour)
	if d := created.Expires.Sub(want); d < -time.Second || d > time.Minute {
		t.Errorf("token create --expires 30d --json: expires %v, want about %v", created.Expires, want)
	}
	var listed []server.TokenInfo
	if err := json.Unmarshal([]byte(e.ok("", "token", "ls", "--json").stdout), &listed); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2 || !listed[0].Expires.IsZero() || !listed[1].Expires.Equal(created.Expires) {
		t.Errorf("token ls --json: %+v", listed)
	}
	ls := e.ok("", "token", "ls").stdout
	lines := strings.Split(strings.TrimSpace(ls), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], "EXPIRES") || !strings.HasSuffix(lines[1], "never") ||
		!strings.HasSuffix(lines[2], created.Expires.Local().Format(time.DateTime)) {
		t.Errorf("token ls:\n%s", ls)
	}
	e.fails(exitUsage, "--expires", "token", "create", "--user", "x", "--expires", "soon")
	e.fails(exitUsage, "--expires", "token", "create", "--user", "x", "--expires", "-1d")
}
