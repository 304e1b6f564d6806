package recall_test

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/recallkit/recall"
)

// The fuzz targets of the key rules. `go test` runs their seeds (the f.Add
// calls and testdata/fuzz/<name>/); `go test -run '^$' -fuzz '^FuzzKeyValidate$'
// -fuzztime 10m .` explores further (see docs/TESTING.md).

// fuzzRoot stands for a store's root directory in path checks.
const fuzzRoot = "/store/projects"

// The key rules of DESIGN.md, written independently of key.go, as the
// oracle the fuzzers compare Validate with.
var (
	idRule      = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)
	projectRule = regexp.MustCompile(`^[A-Za-z0-9._-]{1,255}$`)
)

func oracleName(s string, rule *regexp.Regexp) bool {
	return rule.MatchString(s) && s != "." && s != ".."
}

func oracleKey(k recall.Key) bool {
	if !oracleName(k.Project, projectRule) || !oracleName(k.Session, idRule) {
		return false
	}
	if k.Subpath == "" {
		return true
	}
	segs := strings.Split(k.Subpath, "/")
	if len(segs) > 8 {
		return false
	}
	for _, s := range segs {
		if !oracleName(s, idRule) {
			return false
		}
	}
	return true
}

// wantInside fails unless the path a store would build for k lies strictly
// inside root, and names exactly the parts of k: no part is "." or "..",
// holds a separator, or is cleaned away.
func wantInside(t *testing.T, root string, k recall.Key) {
	t.Helper()
	rel := k.Project + "/" + k.Session
	if k.Subpath != "" {
		rel += "/" + k.Subpath
	}
	joined := filepath.Join(root, filepath.FromSlash(rel)+".jsonl")
	if raw := root + "/" + rel + ".jsonl"; joined != raw {
		t.Fatalf("key %+v: the path %q is cleaned into %q", k, raw, joined)
	}
	r, err := filepath.Rel(root, joined)
	if err != nil || r == ".." || strings.HasPrefix(r, "../") || filepath.IsAbs(r) {
		t.Fatalf("key %+v: path %q escapes %q (rel %q, %v)", k, joined, root, r, err)
	}
	if got := strings.Count(r, "/"); got != strings.Count(rel, "/") {
		t.Fatalf("key %+v: path %q has %d levels below the root, want %d", k, joined, got, strings.Count(rel, "/"))
	}
}

// FuzzKeyValidate compares Key.Validate and ValidateID with the oracle, and
// checks that a key that passes builds a path inside the store's root.
func FuzzKeyValidate(f *testing.F) {
	for _, k := range []recall.Key{
		{Project: "p", Session: "s"},
		{Project: "-home-me-code", Session: "0193f1c2-7a4b-7cde-8f00-0123456789ab", Subpath: "subagents/agent-7"},
		{Project: "..", Session: "s"},
		{Project: "p", Session: "../../etc/passwd"},
		{Project: "p", Session: "s", Subpath: "a/../../b"},
		{Project: "p", Session: "s", Subpath: "a//b"},
		{Project: "p", Session: "s\x00"},
		{Project: "p", Session: "...", Subpath: "a/b/c/d/e/f/g/h"},
		{Project: "p", Session: "s", Subpath: "a/b/c/d/e/f/g/h/i"},
		{Project: strings.Repeat("p", 255), Session: strings.Repeat("s", 128)},
		{Project: strings.Repeat("p", 256), Session: strings.Repeat("s", 129)},
		{Project: "p", Session: `a\b`},
		{Project: "p", Session: "é"},
	} {
		f.Add(k.Project, k.Session, k.Subpath)
	}
	f.Fuzz(func(t *testing.T, project, session, subpath string) {
		k := recall.Key{Project: project, Session: session, Subpath: subpath}
		err := k.Validate()
		if want := oracleKey(k); (err == nil) != want {
			t.Fatalf("Validate(%+v) = %v; the rules say valid=%t", k, err, want)
		}
		if err != nil {
			if !errors.Is(err, recall.ErrInvalidKey) {
				t.Fatalf("Validate(%+v) = %v, does not wrap ErrInvalidKey", k, err)
			}
		} else {
			wantInside(t, fuzzRoot, k)
		}
		idErr := recall.ValidateID(session)
		if (idErr == nil) != oracleName(session, idRule) {
			t.Fatalf("ValidateID(%q) = %v; the rules say valid=%t", session, idErr, oracleName(session, idRule))
		}
		if idErr != nil && !errors.Is(idErr, recall.ErrInvalidKey) {
			t.Fatalf("ValidateID(%q) = %v, does not wrap ErrInvalidKey", session, idErr)
		}
	})
}

// FuzzProjectKey checks ProjectKey on arbitrary directories: it never
// panics, refuses only a NUL byte, and always returns a valid project key
// of at most 213 bytes of [A-Za-z0-9-] (200 plus "-" and a 12-digit hash)
// that names one directory right below a store's root. The same input
// always gives the same key.
func FuzzProjectKey(f *testing.F) {
	for _, d := range []string{
		"/home/me/code/recall", ".", "", "..", "/", "relative/dir", "/tmp/../etc",
		"/a b/ç/日本/🎉", "C:\\Users\\me", "/x\x00y", "//double//slash//",
		"/" + strings.Repeat("long-segment/", 30),
	} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, dir string) {
		key, err := recall.ProjectKey(dir)
		if strings.IndexByte(dir, 0) >= 0 {
			if !errors.Is(err, recall.ErrInvalidKey) {
				t.Fatalf("ProjectKey(%q) = %q, %v; want ErrInvalidKey for a NUL byte", dir, key, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("ProjectKey(%q): %v", dir, err)
		}
		if len(key) == 0 || len(key) > 213 {
			t.Fatalf("ProjectKey(%q) = %q: %d bytes", dir, key, len(key))
		}
		for i := 0; i < len(key); i++ {
			if c := key[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				t.Fatalf("ProjectKey(%q) = %q: byte %q", dir, key, c)
			}
		}
		k := recall.Key{Project: key, Session: "s"}
		if err := k.Validate(); err != nil {
			t.Fatalf("ProjectKey(%q) = %q, not a valid project: %v", dir, key, err)
		}
		wantInside(t, fuzzRoot, k)
		if again, err := recall.ProjectKey(dir); again != key || err != nil {
			t.Fatalf("ProjectKey(%q) = %q, then %q, %v", dir, key, again, err)
		}
	})
}
