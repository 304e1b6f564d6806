// Package gitremote reads the remote URL of the git checkout a folder is
// in, and brings the spellings of one repository's URL to one form, so
// that the same repository checked out at different paths on different
// machines is recognised as one project.
package gitremote

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// Of returns the normalised URL (see Normalize) of the remote "origin" of
// the git checkout dir is in (dir or a parent of it), or of its first
// remote when there is no origin; "" when dir is in no checkout, or the
// checkout has no remote. It reads .git/config itself (a worktree's .git
// file is followed to its repository), so it costs a file read, not a
// git process.
func Of(dir string) string {
	for d := filepath.Clean(dir); ; {
		if cfg := configOf(filepath.Join(d, ".git")); cfg != "" {
			b, err := os.ReadFile(cfg)
			if err != nil {
				return ""
			}
			return Normalize(remoteURL(b))
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// configOf returns the config file of the repository whose .git entry is
// dotgit: dotgit/config for a directory; for a worktree's file
// ("gitdir: PATH"), the config of the repository PATH belongs to.
func configOf(dotgit string) string {
	fi, err := os.Stat(dotgit)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return filepath.Join(dotgit, "config")
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return ""
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	gitdir = strings.TrimSpace(gitdir)
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(filepath.Dir(dotgit), gitdir)
	}
	if c, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		common := strings.TrimSpace(string(c))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
		gitdir = common
	}
	return filepath.Join(gitdir, "config")
}

// remoteURL returns the url of [remote "origin"] in a git config file, or
// of the first remote section.
func remoteURL(cfg []byte) string {
	var first, origin, section string
	sc := bufio.NewScanner(bytes.NewReader(cfg))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = strings.TrimSpace(strings.Trim(line, "[]"))
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(name), "url") || !strings.HasPrefix(section, "remote ") {
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if first == "" {
			first = value
		}
		if section == `remote "origin"` && origin == "" {
			origin = value
		}
	}
	if origin != "" {
		return origin
	}
	return first
}

// Normalize brings a remote URL to the form HOST/PATH: the scheme, a user
// name, a port, a trailing ".git" and slashes are dropped and the host is
// lower-cased, so git@github.com:a/b.git, ssh://git@github.com/a/b and
// https://github.com/a/b all become github.com/a/b. A local path stays a
// cleaned path. "" stays "".
func Normalize(url string) string {
	u := strings.TrimSpace(url)
	if u == "" {
		return ""
	}
	if rest, ok := strings.CutPrefix(u, "file://"); ok {
		return filepath.Clean(rest)
	}
	if filepath.IsAbs(u) || strings.HasPrefix(u, ".") {
		return filepath.Clean(u)
	}
	if _, rest, ok := strings.Cut(u, "://"); ok {
		u = rest
	} else if host, path, ok := strings.Cut(u, ":"); ok && !strings.Contains(host, "/") {
		u = host + "/" + path // scp-like: [user@]host:path
	}
	host, path, _ := strings.Cut(u, "/")
	if _, h, ok := strings.Cut(host, "@"); ok {
		host = h
	}
	if h, _, ok := strings.Cut(host, ":"); ok {
		host = h
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	return strings.ToLower(host) + "/" + strings.Trim(path, "/")
}
