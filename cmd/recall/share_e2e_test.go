package main

import (
	"strings"
	"testing"
)

// TestShare: recall share makes a link that recall serve opens without a
// token; share ls lists it (never its token); share revoke ends it; a
// server with --no-share opens no link.
func TestShare(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.ok("", "chat", "-p", "words worth sharing")
	short := e.shortIDs()[0]
	s := e.serve("--auth", "none")
	link := strings.TrimSpace(e.ok("", "share", short, "--url", s.URL).stdout)
	path, ok := strings.CutPrefix(link, s.URL)
	if !ok || !strings.HasPrefix(path, "/share/rs_") {
		t.Fatalf("share printed %q", link)
	}
	e.ok("", "chat", "-c", "-p", "a later message")
	code, body := s.do("GET", path, "", nil)
	if code != 200 || !strings.Contains(string(body), "words worth sharing") || strings.Contains(string(body), "a later message") {
		t.Fatalf("the link: %d, shows the later message: %v\n%.300s", code, strings.Contains(string(body), "a later message"), body)
	}
	off := e.serve("--auth", "none", "--no-share")
	if code, _ := off.do("GET", path, "", nil); code != 404 {
		t.Errorf("a --no-share server opened the link: %d", code)
	}

	ls := e.ok("", "share", "ls").stdout
	token := strings.TrimPrefix(path, "/share/")
	if strings.Contains(ls, token) || !strings.Contains(ls, "up to seq") {
		t.Fatalf("share ls:\n%s", ls)
	}
	id := strings.Fields(strings.Split(ls, "\n")[1])[0]
	e.ok("", "share", "revoke", id)
	if code, _ := s.do("GET", path, "", nil); code != 404 {
		t.Errorf("a revoked link answers %d", code)
	}
	e.fails(1, "no such share link", "share", "revoke", id)
	e.fails(2, "--expires", "share", short, "--expires", "soon")
	contains(t, "audit", e.ok("", "audit", "--action", "session.share").stdout, "revoked=true")
}
