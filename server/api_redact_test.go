package server

import (
	"strings"
	"testing"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/server/audit"
)

// noRewrite hides the memory store's storekit.Rewriter.
type noRewrite struct{ recall.Store }

// TestRedactAPI: POST …/redact with dry_run=true reports and changes
// nothing; without it the secret leaves the stored items and a
// redaction entry follows, recorded in the audit log; a second run finds
// nothing. Another user's session is a 404 unless an admin names its
// user; a bad dry_run is a 400, a missing session a 404, a store that
// cannot rewrite a 501.
func TestRedactAPI(t *testing.T) {
	t.Parallel()
	const secret = "ghp_4fJ9kQ2mX7pL0vR8sT3wY6zB1cN5dH9gK2aE"
	st := memstore.New(memstore.Options{})
	e := newEnv(t, st, Options{RateLimit: -1}, nil)
	id := e.newConv("alice", msg("user", "deploy with GH_TOKEN="+secret), msg("assistant", "done"))
	sp := "/api/v1/sessions/" + id
	holds := func() bool {
		var page struct {
			Data []struct {
				Content string `json:"content"`
			} `json:"data"`
		}
		e.do("GET", "/v1/conversations/"+id+"/items?order=asc", "alice", nil).want(t, 200).decode(t, &page)
		for _, it := range page.Data {
			if strings.Contains(it.Content, secret) {
				return true
			}
		}
		return false
	}

	var got redaction
	e.do("POST", sp+"/redact?dry_run=true", "alice", nil).want(t, 200).decode(t, &got)
	if !got.DryRun || got.Redacted["github-pat"] != 1 || got.Entries != 1 || len(got.Records) != 1 || got.Records[0].Seq != 0 {
		t.Errorf("dry run answered %+v", got)
	}
	if !holds() {
		t.Fatal("a dry run removed the secret")
	}
	e.do("POST", sp+"/redact?dry_run=maybe", "alice", nil).wantError(t, 400)
	e.do("POST", "/api/v1/sessions/nope/redact", "alice", nil).wantError(t, 404)
	e.do("POST", sp+"/redact", "bob", nil).wantError(t, 404)
	e.do("POST", sp+"/redact?user=alice", "bob", nil).wantError(t, 404)

	got = redaction{}
	e.do("POST", sp+"/redact?user=alice", "root", nil).want(t, 200).decode(t, &got)
	if got.DryRun || got.Redacted["github-pat"] != 1 || len(got.Records) != 1 || got.Records[0].Seq == 0 {
		t.Errorf("redact answered %+v", got)
	}
	if holds() {
		t.Error("the secret is still in the session's items")
	}
	got = redaction{}
	e.do("POST", sp+"/redact", "alice", nil).want(t, 200).decode(t, &got)
	if got.Redacted.Total() != 0 || len(got.Records) != 0 {
		t.Errorf("a second redact answered %+v", got)
	}

	var page struct {
		Data []audit.Event `json:"data"`
	}
	e.do("GET", "/api/v1/audit?action=session.redact", "root", nil).want(t, 200).decode(t, &page)
	if len(page.Data) != 1 || page.Data[0].Actor != "root" || page.Data[0].User != "alice" || page.Data[0].Detail["secrets"] != "1" {
		t.Errorf("the audit log's redactions: %+v", page.Data)
	}

	plain := newEnv(t, noRewrite{memstore.New(memstore.Options{})}, Options{RateLimit: -1}, nil)
	pid := plain.newConv("alice", msg("user", "GH_TOKEN="+secret))
	if ae := plain.do("POST", "/api/v1/sessions/"+pid+"/redact", "alice", nil).wantError(t, 501); ae.Error.Code != "unsupported" {
		t.Errorf("a store that cannot rewrite: %+v", ae)
	}
	plain.do("POST", "/api/v1/sessions/"+pid+"/redact?dry_run=true", "alice", nil).want(t, 200)
}
