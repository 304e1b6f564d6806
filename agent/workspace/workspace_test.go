package workspace_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/agent/workspace"
)

// setup makes a project directory beside a secret one:
//
//	tmp/secret.txt                 outside
//	tmp/outside/                   outside
//	tmp/proj/a.txt
//	tmp/proj/sub/b.txt
//	tmp/proj/.git/config           skipped by list_files
//	tmp/proj/link-out  -> ../secret.txt     escapes
//	tmp/proj/dir-out   -> ../outside        escapes
//	tmp/proj/abs-out   -> tmp/secret.txt    escapes (absolute target)
//	tmp/proj/dangling  -> ../outside/new.txt escapes, target missing
//	tmp/proj/link-in   -> sub/b.txt         stays inside
func setup(t *testing.T) (tmp, proj string, tools map[string]agent.Tool) {
	t.Helper()
	tmp = t.TempDir()
	proj = filepath.Join(tmp, "proj")
	for _, d := range []string{"proj/sub", "proj/.git", "outside"} {
		must(t, os.MkdirAll(filepath.Join(tmp, d), 0o755))
	}
	for name, body := range map[string]string{"secret.txt": "TOP SECRET", "proj/a.txt": "alpha", "proj/sub/b.txt": "beta", "proj/.git/config": "x"} {
		must(t, os.WriteFile(filepath.Join(tmp, name), []byte(body), 0o644))
	}
	for link, target := range map[string]string{
		"link-out": "../secret.txt", "dir-out": "../outside", "abs-out": filepath.Join(tmp, "secret.txt"),
		"dangling": "../outside/new.txt", "link-in": "sub/b.txt",
	} {
		must(t, os.Symlink(target, filepath.Join(proj, link)))
	}
	ws, err := workspace.Open(proj)
	must(t, err)
	t.Cleanup(func() { ws.Close() })
	tools = map[string]agent.Tool{}
	for _, tool := range ws.Tools() {
		tools[tool.Name()] = tool
		if !json.Valid(tool.Parameters()) || tool.Description() == "" {
			t.Errorf("tool %s: bad schema or description", tool.Name())
		}
	}
	return tmp, proj, tools
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func call(t *testing.T, tool agent.Tool, args any) (string, error) {
	t.Helper()
	b, _ := json.Marshal(args)
	return tool.Call(context.Background(), b)
}

type args = map[string]any

func TestReadConfined(t *testing.T) {
	tmp, proj, tools := setup(t)
	read := tools["read_file"]
	ok := map[string]string{
		"a.txt": "alpha", "sub/b.txt": "beta", "./sub/../a.txt": "alpha", "link-in": "beta",
		filepath.Join(proj, "a.txt"): "alpha", // absolute, inside
	}
	for p, want := range ok {
		if got, err := call(t, read, args{"path": p}); err != nil || got != want {
			t.Errorf("read %q = %q, %v; want %q", p, got, err, want)
		}
	}
	bad := []string{
		"../secret.txt", "sub/../../secret.txt", "link-out", "abs-out", "dir-out/x",
		filepath.Join(tmp, "secret.txt"), "/etc/passwd", "", "sub", "missing.txt",
	}
	for _, p := range bad {
		got, err := call(t, read, args{"path": p})
		if err == nil {
			t.Errorf("read %q succeeded: %q", p, got)
		}
		if strings.Contains(got, "SECRET") || (err != nil && strings.Contains(err.Error(), "SECRET")) {
			t.Errorf("read %q leaked the secret", p)
		}
	}
}

func TestWriteConfined(t *testing.T) {
	tmp, proj, tools := setup(t)
	write := tools["write_file"]
	if out, err := call(t, write, args{"path": "new/deep/c.txt", "content": "gamma"}); err != nil || !strings.Contains(out, "5 bytes") {
		t.Fatalf("write: %q, %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(proj, "new/deep/c.txt")); string(b) != "gamma" {
		t.Errorf("written file = %q", b)
	}
	if _, err := call(t, write, args{"path": "link-in", "content": "via link"}); err != nil {
		t.Errorf("write through an inside link: %v", err)
	}
	for _, p := range []string{"../pwned.txt", "link-out", "abs-out", "dir-out/pwned.txt", "dangling", filepath.Join(tmp, "pwned.txt"), ".", ""} {
		if _, err := call(t, write, args{"path": p, "content": "PWNED"}); err == nil {
			t.Errorf("write %q succeeded", p)
		}
	}
	if _, err := call(t, write, args{"path": "x.txt"}); err == nil {
		t.Error("write without content succeeded")
	}
	// Nothing outside changed or appeared.
	if b, _ := os.ReadFile(filepath.Join(tmp, "secret.txt")); string(b) != "TOP SECRET" {
		t.Errorf("secret.txt = %q", b)
	}
	for _, p := range []string{"pwned.txt", "outside/pwned.txt", "outside/new.txt"} {
		if _, err := os.Lstat(filepath.Join(tmp, p)); err == nil {
			t.Errorf("%s was created outside the project", p)
		}
	}
}

func TestListConfined(t *testing.T) {
	_, _, tools := setup(t)
	list := tools["list_files"]
	got, err := call(t, list, args{})
	if err != nil {
		t.Fatal(err)
	}
	want := "a.txt\nabs-out\ndangling\ndir-out\nlink-in\nlink-out\nsub/"
	if got != want {
		t.Errorf("list = %q, want %q", got, want)
	}
	got, err = call(t, list, args{"path": ".", "recursive": true})
	if err != nil || !strings.Contains(got, "sub/b.txt") || strings.Contains(got, ".git") {
		t.Errorf("recursive list = %q, %v", got, err)
	}
	for _, p := range []string{"..", "dir-out", "../outside", "/", "a.txt"} {
		if out, err := call(t, list, args{"path": p}); err == nil {
			t.Errorf("list %q succeeded: %q", p, out)
		}
	}
}

func TestReadLimits(t *testing.T) {
	_, proj, tools := setup(t)
	big := strings.Repeat("é", workspace.MaxReadBytes) // 2 bytes each: the cut falls mid-character
	must(t, os.WriteFile(filepath.Join(proj, "big.txt"), []byte("x"+big), 0o644))
	must(t, os.WriteFile(filepath.Join(proj, "bin"), []byte{0x7f, 'E', 'L', 'F', 0, 1}, 0o644))
	got, err := call(t, tools["read_file"], args{"path": "big.txt"})
	if err != nil {
		t.Fatal(err)
	}
	text, note, _ := strings.Cut(got, "\n(file cut at ")
	if note == "" || len(text) > workspace.MaxReadBytes || !strings.HasPrefix(text, "xéé") || strings.ContainsRune(text, '\uFFFD') {
		t.Errorf("big read: %d bytes, note %q", len(text), note)
	}
	if _, err := call(t, tools["read_file"], args{"path": "bin"}); err == nil {
		t.Error("binary file read as text")
	}
}
