package gitremote

import (
	"os"
	"path/filepath"
	"testing"
)

func TestNormalize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"git@github.com:a/b.git", "github.com/a/b"},
		{"https://github.com/a/b", "github.com/a/b"},
		{"https://github.com/a/b/", "github.com/a/b"},
		{"ssh://git@GitHub.com:22/a/b.git", "github.com/a/b"},
		{"https://user:secret@gitlab.example.com/team/app.git", "gitlab.example.com/team/app"},
		{"/srv/git/app.git", "/srv/git/app.git"},
		{"", ""},
	} {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestOf(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "app")
	sub := filepath.Join(repo, "src", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := Of(sub); got != "" {
		t.Errorf("outside a checkout: %q", got)
	}
	cfg := "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://github.com/up/app\n[remote \"origin\"]\n\turl = git@github.com:ann/app.git\n"
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, ".git", "config"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := Of(sub); got != "github.com/ann/app" {
		t.Errorf("in a checkout: %q, want origin's", got)
	}
	// a worktree: .git is a file naming the repository's worktree folder
	wt := filepath.Join(root, "wt")
	gitdir := filepath.Join(repo, ".git", "worktrees", "wt")
	if err := os.MkdirAll(gitdir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(gitdir, "commondir"), []byte("../..\n"), 0o644)
	os.MkdirAll(wt, 0o755)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+gitdir+"\n"), 0o644)
	if got := Of(wt); got != "github.com/ann/app" {
		t.Errorf("in a worktree: %q", got)
	}
}
