// Package workspace gives an agent the files of one project directory:
// the tools list_files, read_file and write_file. Every path is resolved
// through an os.Root, so a path that leaves the directory, whether by
// "..", by an absolute path elsewhere or through a symbolic link, fails
// with a tool error and nothing outside is ever read or written.
package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/recallkit/recall/agent"
)

const (
	// MaxReadBytes is the most read_file returns; a longer file is cut
	// and says so.
	MaxReadBytes = 256 << 10
	// MaxListEntries is the most entries list_files returns.
	MaxListEntries = 500
)

// Workspace is one project directory opened for an agent. It is safe for
// concurrent use. Close it when done.
type Workspace struct {
	dir  string // absolute
	real string // dir with symbolic links resolved
	root *os.Root
}

// Open opens dir as a workspace.
func Open(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	root, err := os.OpenRoot(real)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return &Workspace{dir: abs, real: real, root: root}, nil
}

// Dir returns the workspace directory, absolute.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the directory.
func (w *Workspace) Close() error { return w.root.Close() }

// Tools returns list_files, read_file and write_file.
func (w *Workspace) Tools() []agent.Tool {
	return []agent.Tool{
		agent.Func("list_files",
			"List the files in a directory of the project. Paths are relative to the project root. Directories end in /.",
			json.RawMessage(`{"type":"object","properties":{`+
				`"path":{"type":"string","description":"directory, relative to the project root; default ."},`+
				`"recursive":{"type":"boolean","description":"list subdirectories too"}}}`),
			w.listFiles),
		agent.Func("read_file",
			"Read a text file of the project.",
			json.RawMessage(`{"type":"object","properties":{`+
				`"path":{"type":"string","description":"file, relative to the project root"}},"required":["path"]}`),
			w.readFile),
		agent.Func("write_file",
			"Create or overwrite a text file of the project with the given content. Missing directories are created.",
			json.RawMessage(`{"type":"object","properties":{`+
				`"path":{"type":"string","description":"file, relative to the project root"},`+
				`"content":{"type":"string","description":"the whole new content"}},"required":["path","content"]}`),
			w.writeFile),
	}
}

// rel turns a path from the model into one relative to the root. An
// absolute path is accepted when it names something inside the
// directory; the os.Root then refuses anything that still escapes.
func (w *Workspace) rel(p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty")
	}
	if !filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	for _, base := range []string{w.dir, w.real} {
		if r, err := filepath.Rel(base, filepath.Clean(p)); err == nil && filepath.IsLocal(r) {
			return r, nil
		}
	}
	return "", fmt.Errorf("path %q is outside the project directory", p)
}

func decode(args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("bad arguments: %w", err)
	}
	return nil
}

func (w *Workspace) listFiles(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path      string `json:"path"`
		Recursive bool   `json:"recursive"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if a.Path == "" {
		a.Path = "."
	}
	p, err := w.rel(a.Path)
	if err != nil {
		return "", err
	}
	// Stat through the root first: fs.WalkDir on Root.FS does not follow
	// a symbolic link at the start, but an escaping one must be an error.
	if fi, err := w.root.Stat(p); err != nil {
		return "", err
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", a.Path)
	}
	var names []string
	more := 0
	fsys := w.root.FS()
	err = fs.WalkDir(fsys, filepath.ToSlash(p), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if path == filepath.ToSlash(p) {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return fs.SkipDir
		}
		name := path
		if d.IsDir() {
			name += "/"
		}
		if len(names) < MaxListEntries {
			names = append(names, name)
		} else {
			more++
		}
		if d.IsDir() && !a.Recursive {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(names)
	out := strings.Join(names, "\n")
	if len(names) == 0 {
		out = "(empty directory)"
	}
	if more > 0 {
		out += fmt.Sprintf("\n(%d more entries not shown)", more)
	}
	return out, nil
}

func (w *Workspace) readFile(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	p, err := w.rel(a.Path)
	if err != nil {
		return "", err
	}
	f, err := w.root.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return "", err
	} else if fi.IsDir() {
		return "", fmt.Errorf("%s is a directory; use list_files", a.Path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxReadBytes+1))
	if err != nil {
		return "", err
	}
	cut := len(b) > MaxReadBytes
	if cut {
		b = b[:MaxReadBytes]
		// Do not end mid-character: drop the bytes of a partial last rune.
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
			if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size > 1 {
				break
			}
			b = b[:len(b)-1]
		}
	}
	if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
		return "", fmt.Errorf("%s is not a text file", a.Path)
	}
	out := string(b)
	if cut {
		out += fmt.Sprintf("\n(file cut at %d bytes)", len(b))
	}
	return out, nil
}

func (w *Workspace) writeFile(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Path    string  `json:"path"`
		Content *string `json:"content"`
	}
	if err := decode(args, &a); err != nil {
		return "", err
	}
	if a.Content == nil {
		return "", errors.New("content is missing")
	}
	p, err := w.rel(a.Path)
	if err != nil {
		return "", err
	}
	if p == "." {
		return "", errors.New("path names the project directory")
	}
	if dir := filepath.Dir(p); dir != "." {
		if err := w.root.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	if err := w.root.WriteFile(p, []byte(*a.Content), 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("wrote %d bytes to %s", len(*a.Content), filepath.ToSlash(p)), nil
}
