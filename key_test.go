package recall_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"
	"pgregory.net/rapid"

	"github.com/recallkit/recall"
)

func TestKeyValidate(t *testing.T) {
	long := strings.Repeat("a", recall.MaxIDLen)
	valid := []recall.Key{
		{Project: "p", Session: "s"},
		{Project: "-home-ada-src", Session: recall.NewSessionID()},
		{Project: "p", Session: long},
		{Project: strings.Repeat("p", 255), Session: "s"},
		{Project: "p", Session: "..."},
		{Project: "p", Session: ".hidden"},
		{Project: "p", Session: "-"},
		{Project: "p", Session: "A.b_C-9"},
		{Project: "p", Session: "s", Subpath: "subagents/agent-7"},
		{Project: "p", Session: "s", Subpath: "x"},
		{Project: "p", Session: "s", Subpath: "a/b/c/d/e/f/g/h"},
		{Project: "p", Session: "s", Subpath: "subagents/" + long},
	}
	for _, k := range valid {
		if err := k.Validate(); err != nil {
			t.Errorf("%q: %v", k, err)
		}
	}

	invalid := []struct {
		key  recall.Key
		what string
	}{
		{recall.Key{}, "zero key"},
		{recall.Key{Project: "", Session: "s"}, "empty project"},
		{recall.Key{Project: "p", Session: ""}, "empty session"},
		{recall.Key{Project: "p", Session: long + "a"}, "129-byte session"},
		{recall.Key{Project: strings.Repeat("p", 256), Session: "s"}, "256-byte project"},
		{recall.Key{Project: "p", Session: "."}, "dot"},
		{recall.Key{Project: "p", Session: ".."}, "dot-dot"},
		{recall.Key{Project: "..", Session: "s"}, "dot-dot project"},
		{recall.Key{Project: "p", Session: "../s"}, "traversal"},
		{recall.Key{Project: "../../etc", Session: "passwd"}, "project traversal"},
		{recall.Key{Project: "p", Session: "/etc/passwd"}, "absolute"},
		{recall.Key{Project: "/", Session: "s"}, "root project"},
		{recall.Key{Project: "p", Session: `a\b`}, "backslash"},
		{recall.Key{Project: "p", Session: "a\x00"}, "NUL"},
		{recall.Key{Project: "p\x00", Session: "s"}, "NUL in project"},
		{recall.Key{Project: "p", Session: "a b"}, "space"},
		{recall.Key{Project: "p", Session: "é"}, "non-ASCII"},
		{recall.Key{Project: "p", Session: "s\n"}, "newline"},
		{recall.Key{Project: "p", Session: "s", Subpath: "/a"}, "absolute subpath"},
		{recall.Key{Project: "p", Session: "s", Subpath: "a/"}, "trailing slash"},
		{recall.Key{Project: "p", Session: "s", Subpath: "a//b"}, "empty segment"},
		{recall.Key{Project: "p", Session: "s", Subpath: "a/../b"}, "dot-dot segment"},
		{recall.Key{Project: "p", Session: "s", Subpath: "./a"}, "dot segment"},
		{recall.Key{Project: "p", Session: "s", Subpath: "a/b/c/d/e/f/g/h/i"}, "nine segments"},
		{recall.Key{Project: "p", Session: "s", Subpath: "a/" + long + "a"}, "long segment"},
		{recall.Key{Project: "p", Session: "s", Subpath: "a\x00"}, "NUL in subpath"},
	}
	for _, c := range invalid {
		if err := c.key.Validate(); !errors.Is(err, recall.ErrInvalidKey) {
			t.Errorf("%s %q: Validate = %v, want ErrInvalidKey", c.what, c.key, err)
		}
	}
}

func TestValidateID(t *testing.T) {
	for _, id := range []string{"a", "...", strings.Repeat("z", 128), recall.NewSessionID()} {
		if err := recall.ValidateID(id); err != nil {
			t.Errorf("ValidateID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", ".", "..", strings.Repeat("z", 129), "a/b", "a\x00", "~"} {
		if err := recall.ValidateID(id); !errors.Is(err, recall.ErrInvalidKey) {
			t.Errorf("ValidateID(%q) = %v, want ErrInvalidKey", id, err)
		}
	}
}

// A key's bytes never matter to the validator beyond the documented
// alphabet: whatever it accepts is a plain file name.
func TestKeyValidateProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := recall.Key{
			Project: rapid.String().Draw(t, "project"),
			Session: rapid.StringMatching(`[A-Za-z0-9._/\\ -]{0,6}`).Draw(t, "session"),
			Subpath: rapid.StringMatching(`([a-z./]{0,4}){0,3}`).Draw(t, "subpath"),
		}
		if k.Validate() != nil {
			return
		}
		for _, part := range append([]string{k.Project, k.Session}, strings.Split(k.Subpath, "/")...) {
			if part == "" && k.Subpath == "" {
				continue
			}
			if part == "" || part == "." || part == ".." || !regexp.MustCompile(`^[A-Za-z0-9._-]+$`).MatchString(part) {
				t.Fatalf("%q validates but holds the part %q", k, part)
			}
		}
	})
}

func TestKeyString(t *testing.T) {
	k := recall.Key{Project: "p", Session: "s", Subpath: "subagents/x"}
	if k.String() != "p/s:subagents/x" || k.Parent().String() != "p/s" {
		t.Errorf("String = %q, Parent().String = %q", k.String(), k.Parent().String())
	}
	if k.IsMain() || !k.Parent().IsMain() {
		t.Errorf("IsMain: record %t, parent %t", k.IsMain(), k.Parent().IsMain())
	}
}

// claudeName is the folder name Claude Code gives a directory: every byte
// outside [A-Za-z0-9] becomes '-'.
func claudeName(path string) string {
	b := []byte(path)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

func TestProjectKey(t *testing.T) {
	cases := []struct{ dir, want string }{
		{"/home/ada/src/recall", "-home-ada-src-recall"},
		{"/home/ada/my project.v2", "-home-ada-my-project-v2"},
		{"/tmp/é", "-tmp---"}, // two bytes, two dashes
		{"/", "-"},
		{"/a/../b/./c//", "-b-c"}, // cleaned first
	}
	for _, c := range cases {
		got, err := recall.ProjectKey(c.dir)
		if err != nil || got != c.want {
			t.Errorf("ProjectKey(%q) = %q, %v; want %q", c.dir, got, err, c.want)
		}
	}
	if _, err := recall.ProjectKey("/tmp/a\x00b"); !errors.Is(err, recall.ErrInvalidKey) {
		t.Errorf("ProjectKey with a NUL byte: %v, want ErrInvalidKey", err)
	}
}

func TestProjectKeyResolves(t *testing.T) {
	dir := t.TempDir()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "work")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	want := claudeName(filepath.Join(real, "work"))

	link := filepath.Join(dir, "link")
	if err := os.Symlink(sub, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{sub, link, sub + "/", filepath.Join(sub, "..", "work")} {
		if got, err := recall.ProjectKey(p); err != nil || got != want {
			t.Errorf("ProjectKey(%q) = %q, %v; want %q", p, got, err, want)
		}
	}

	// A relative path is taken from the working directory.
	t.Chdir(link)
	if got, err := recall.ProjectKey("."); err != nil || got != want {
		t.Errorf(`ProjectKey(".") in %s = %q, %v; want %q`, link, got, err, want)
	}
	if got, err := recall.ProjectKey(""); err != nil || got != want {
		t.Errorf(`ProjectKey("") in %s = %q, %v; want %q`, link, got, err, want)
	}
}

func TestProjectKeyLong(t *testing.T) {
	base := "/" + strings.Repeat("d", 150) + "/" + strings.Repeat("e", 48) // 200 bytes
	if got, _ := recall.ProjectKey(base); got != claudeName(base) {
		t.Errorf("a 200-byte key was changed: %q", got)
	}
	a, _ := recall.ProjectKey(base + "/project-a")
	b, _ := recall.ProjectKey(base + "/project-b")
	again, _ := recall.ProjectKey(base + "/project-a")
	if a == b {
		t.Errorf("two long paths that differ at the end share key %q", a)
	}
	if a != again {
		t.Errorf("ProjectKey is not deterministic: %q, %q", a, again)
	}
	re := regexp.MustCompile(`^(.{200})-([0-9a-f]{12})$`)
	m := re.FindStringSubmatch(a)
	if m == nil {
		t.Fatalf("long key %q (%d bytes) is not 200 bytes, '-' and a 12-digit hash", a, len(a))
	}
	if m[1] != claudeName(base) {
		t.Errorf("long key starts %q, want the first 200 bytes of the name", m[1])
	}
}

// ProjectKey always returns a valid project made of [A-Za-z0-9-].
func TestProjectKeyProperty(t *testing.T) {
	valid := regexp.MustCompile(`^[A-Za-z0-9-]+$`)
	rapid.Check(t, func(t *rapid.T) {
		dir := "/" + rapid.StringN(0, 400, -1).Draw(t, "dir")
		dir = strings.ReplaceAll(dir, "\x00", "")
		k, err := recall.ProjectKey(dir)
		if err != nil {
			t.Fatalf("ProjectKey(%q): %v", dir, err)
		}
		if !valid.MatchString(k) || len(k) > 213 {
			t.Fatalf("ProjectKey(%q) = %q (%d bytes)", dir, k, len(k))
		}
		if err := (recall.Key{Project: k, Session: "s"}).Validate(); err != nil {
			t.Fatalf("ProjectKey(%q) = %q, which does not validate: %v", dir, k, err)
		}
	})
}

// TestNewSessionID: IDs are canonical random UUIDs whose first 8
// characters, the short form a person types, differ between IDs made in a
// tight loop (the same millisecond, mostly). 100 IDs share a first 8
// characters by chance with a probability of about 1 in a million.
func TestNewSessionID(t *testing.T) {
	ids := make([]string, 100)
	for i := range ids {
		ids[i] = recall.NewSessionID()
	}
	short := map[string]string{}
	for _, id := range ids {
		if err := recall.ValidateID(id); err != nil {
			t.Fatalf("ID %q: %v", id, err)
		}
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id {
			t.Fatalf("ID %q is not a canonical random UUID: version %d, %v", id, u.Version(), err)
		}
		if other, ok := short[id[:8]]; ok {
			t.Fatalf("IDs %s and %s made together share their first 8 characters", other, id)
		}
		short[id[:8]] = id
	}
}
