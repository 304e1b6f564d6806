package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/recallkit/recall/server/audit"
)

// TestAuditTokens: recall token create and revoke are in the audit log as
// the actor "local", never with the token; recall audit prints them, in
// JSON too, and filters them.
func TestAuditTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	token := strings.TrimSpace(e.ok("", "token", "create", "--user", "alice").stdout)
	var info struct {
		ID string `json:"id"`
	}
	r := e.ok("", "token", "ls", "--json")
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 {
		t.Fatalf("token ls --json: %v\n%s", err, r.stdout)
	}
	if err := json.Unmarshal(list[0], &info); err != nil || info.ID == "" {
		t.Fatalf("token ls --json: %v\n%s", err, r.stdout)
	}
	e.ok("", "token", "revoke", info.ID)

	r = e.ok("", "audit")
	for _, want := range []string{"TIME", "local", audit.ActionTokenCreate, audit.ActionTokenRevoke, "alice", "token_id=" + info.ID} {
		contains(t, "recall audit", r.stdout, want)
	}
	if strings.Contains(r.stdout, token) {
		t.Errorf("recall audit shows the token:\n%s", r.stdout)
	}
	var page audit.Page
	r = e.ok("", "audit", "--json", "--action", audit.ActionTokenCreate)
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Events) != 1 {
		t.Fatalf("audit --json --action token.create: %v\n%s", err, r.stdout)
	}
	if ev := page.Events[0]; ev.Actor != "local" || ev.User != "alice" || ev.Detail["token_id"] != info.ID || ev.Detail["admin"] != "false" {
		t.Errorf("the token.create event: %+v", ev)
	}
	r = e.ok("", "audit", "--actor", "bob")
	contains(t, "recall audit --actor bob", r.stderr, "no events")
	e.fails(2, "--limit", "audit", "--limit", "0")
	e.fails(2, "--cursor", "audit", "--cursor", "nope")
	e.fails(2, "--since", "audit", "--since", "soon")
}
