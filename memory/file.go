package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/durable"
	"github.com/recallkit/recall/internal/flock"
)

// FileName is the name of a project's memory file.
const FileName = "MEMORY.md"

// header starts a memory file the first append creates.
const header = "# Project memory\n\nNotes the agent keeps across sessions: decisions, rules, pitfalls. Edit freely.\n\n"

// File is a project's memory: a Markdown file of short notes, one "- "
// bullet a line, that people may edit by hand. It is safe for concurrent
// use by many goroutines and processes: every change is made under an
// advisory lock (flock) on the file.
type File struct {
	// Path is the file's path.
	Path string
}

// ForProject returns the memory file of the project whose directory is
// dir: dir/MEMORY.md. For the file store, dir is the store's project
// directory (filestore.Store.ProjectDir), so the memory sits next to the
// project's sessions; other stores take any directory.
func ForProject(dir string) *File {
	return &File{Path: filepath.Join(dir, FileName)}
}

// Read returns the file's text, or "" when it does not exist.
func (f *File) Read() (string, error) {
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("memory: read %s: %w", f.Path, err)
	}
	return string(b), nil
}

// Notes returns the notes of the file: the text of its bullet lines.
func (f *File) Notes() ([]string, error) {
	text, err := f.Read()
	if err != nil {
		return nil, err
	}
	return bullets(text), nil
}

// Append adds notes to the end of the file, one "- " bullet each, and
// returns the ones it added: a note already in the file (compared without
// case, spacing or bullet marks) or empty is skipped. The file and its
// directory are created when missing. The notes go out in one write on an
// O_APPEND file under the lock and are fsynced, so a crash leaves all of
// them or none, and concurrent appends never interleave.
func (f *File) Append(ctx context.Context, notes ...string) ([]string, error) {
	lf, err := f.lock(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("memory: append to %s: %w", f.Path, err)
	}
	defer lf.Close()
	cur, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, fmt.Errorf("memory: append to %s: %w", f.Path, err)
	}
	seen := map[string]bool{}
	for _, n := range bullets(string(cur)) {
		seen[normalize(n)] = true
	}
	var buf strings.Builder
	if len(cur) == 0 {
		buf.WriteString(header)
	} else if cur[len(cur)-1] != '\n' {
		buf.WriteString("\n")
	}
	var added []string
	for _, n := range notes {
		n = strings.Join(strings.Fields(strings.TrimLeft(strings.TrimSpace(n), "-*• ")), " ")
		if n == "" || seen[normalize(n)] {
			continue
		}
		seen[normalize(n)] = true
		added = append(added, n)
		buf.WriteString("- " + n + "\n")
	}
	if len(added) == 0 {
		return nil, nil
	}
	if _, err := lf.WriteString(buf.String()); err != nil {
		return nil, fmt.Errorf("memory: append to %s: %w", f.Path, err)
	}
	if err := lf.Sync(); err != nil {
		return nil, fmt.Errorf("memory: append to %s: %w", f.Path, err)
	}
	return added, nil
}

// Edit lets edit rewrite the file (`recall memory edit` opens $EDITOR in
// it): edit gets the current text and returns the new one. It may take
// as long as a person needs, so the lock is not held while it runs;
// notes appended meanwhile are kept, after the edited text. When the file
// was otherwise changed meanwhile (another edit), Edit writes nothing and
// returns an error wrapping recall.ErrConflict. The new text replaces the
// file atomically (temporary file, fsync, rename, fsync of the
// directory).
func (f *File) Edit(ctx context.Context, edit func(text string) (string, error)) error {
	before, err := f.Read()
	if err != nil {
		return err
	}
	after, err := edit(before)
	if err != nil {
		return err
	}
	lf, err := f.lock(ctx, true)
	if err != nil {
		return fmt.Errorf("memory: edit %s: %w", f.Path, err)
	}
	defer lf.Close()
	cur, err := os.ReadFile(f.Path)
	if err != nil {
		return fmt.Errorf("memory: edit %s: %w", f.Path, err)
	}
	rest, ok := strings.CutPrefix(string(cur), before)
	if !ok {
		return fmt.Errorf("memory: edit %s: %w: it was changed by someone else meanwhile", f.Path, recall.ErrConflict)
	}
	if after == before && rest == "" {
		return nil
	}
	if rest != "" && after != "" && !strings.HasSuffix(after, "\n") {
		after += "\n"
	}
	return f.replace(lf, after+rest)
}

// replace writes text in place of the file, whose lock lf holds. The new
// file is locked before it is renamed into place, so a writer that opens
// it at once waits until it is complete and durable.
func (f *File) replace(lf *os.File, text string) error {
	tmp := f.Path + ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(tmpCount.Add(1), 10)
	nf, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("memory: edit %s: %w", f.Path, err)
	}
	defer nf.Close()
	err = flock.Lock(context.Background(), nf) // free: nobody else knows the file yet
	if err == nil {
		_, err = nf.WriteString(text)
	}
	if err == nil {
		err = nf.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, f.Path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("memory: edit %s: %w", f.Path, err)
	}
	return durable.SyncDir(filepath.Dir(f.Path))
}

var tmpCount atomic.Uint64

// lock opens the file for appending, creating it (and its directory) when
// create is set, and takes its flock. Since Edit replaces the file, it
// checks after locking that the path still names the file locked, and
// starts over when not.
func (f *File) lock(ctx context.Context, create bool) (*os.File, error) {
	dir := filepath.Dir(f.Path)
	if create {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, err
			}
			if err := durable.SyncDir(filepath.Dir(dir)); err != nil {
				return nil, err
			}
		}
	}
	for {
		flags := os.O_RDWR | os.O_APPEND
		if create {
			flags |= os.O_CREATE
		}
		lf, err := os.OpenFile(f.Path, flags, 0o644)
		if err != nil {
			return nil, err
		}
		if err := flock.Lock(ctx, lf); err != nil {
			lf.Close()
			return nil, err
		}
		a, err := lf.Stat()
		if err != nil {
			lf.Close()
			return nil, err
		}
		if b, err := os.Stat(f.Path); err == nil && os.SameFile(a, b) {
			if a.Size() == 0 && create {
				// a file this call may have created: make its name durable
				if err := durable.SyncDir(dir); err != nil {
					lf.Close()
					return nil, err
				}
			}
			return lf, nil
		}
		lf.Close() // replaced or removed while we waited
	}
}

func bullets(text string) []string {
	var out []string
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "- "); ok {
			out = append(out, strings.TrimSpace(rest))
		} else if rest, ok := strings.CutPrefix(line, "* "); ok {
			out = append(out, strings.TrimSpace(rest))
		}
	}
	return out
}

// normalize is how notes are compared for duplicates.
func normalize(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(strings.Trim(s, " .")), " "))
}
