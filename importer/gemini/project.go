package gemini

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-json-experiment/json"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/internal/responses"
)

// Gemini CLI keeps a project's files in ~/.gemini/tmp/<id>/, where <id>
// is a short name ("my-app", "my-app-1") that ~/.gemini/projects.json maps
// the project's folder to, and which a .project_root file in it names;
// versions before that used the SHA-256 of the folder's path as <id>
// (config/storage.ts, config/projectRegistry.ts).

// projectOf returns the project folder (tmp/<id>) of a file Gemini CLI
// keeps: the folder above chats/ for a session (two above for a
// subagent's), the file's own folder for logs.json and checkpoints.
func projectOf(path string) string {
	dir := filepath.Dir(path)
	switch {
	case filepath.Base(dir) == "chats":
		return filepath.Dir(dir)
	case filepath.Base(filepath.Dir(dir)) == "chats":
		return filepath.Dir(filepath.Dir(dir))
	}
	return dir
}

// locator finds the working directory of a project folder.
type locator struct {
	mu         sync.Mutex
	registries map[string]map[string]string // projects.json by its path: folder → short name
}

// cwd returns the working directory a project folder stands for: the
// path its .project_root names, else the path projects.json maps to its
// name (or, for a legacy folder, whose SHA-256 is its name or the
// session's projectHash), else the session's first workspace directory.
// It returns "" when nothing names one.
func (l *locator) cwd(folder, projectHash string, dirs []string) string {
	if b, err := os.ReadFile(filepath.Join(folder, ".project_root")); err == nil {
		if root := strings.TrimSpace(string(b)); root != "" {
			return root
		}
	}
	name := filepath.Base(folder)
	tmp := filepath.Dir(folder)
	if filepath.Base(tmp) == "tmp" {
		for root, slug := range l.registry(filepath.Join(filepath.Dir(tmp), "projects.json")) {
			if h := hashOf(root); slug == name || h == name || h == projectHash {
				return root
			}
		}
	}
	if len(dirs) > 0 {
		return dirs[0]
	}
	return ""
}

// registry reads a projects.json once.
func (l *locator) registry(path string) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.registries[path]; ok {
		return r
	}
	var data struct {
		Projects map[string]string `json:"projects"`
	}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &data, responses.DecodeOptions) // a damaged registry names nothing
	}
	if l.registries == nil {
		l.registries = map[string]map[string]string{}
	}
	l.registries[path] = data.Projects
	return data.Projects
}

// hashOf is the name a legacy project folder has: the SHA-256 of the
// project's path.
func hashOf(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:])
}

// identity returns the Identity of a file's records, of session sid: the
// working directory of the project folder the file is in, or when none is
// known, a project named after that folder ("gemini-<id>"). The session's
// workspace directories, the last resort, may change with later lines:
// until the end of the file (final), none is taken, and an Identity
// without a folder or project is returned.
func (l *locator) identity(path, sid, projectHash string, dirs []string, final bool) importer.Identity {
	folder := projectOf(path)
	if !final {
		dirs = nil
	}
	switch cwd := l.cwd(folder, projectHash, dirs); {
	case cwd != "":
		return importer.Identity{SessionID: sid, Cwd: cwd}
	case !final:
		return importer.Identity{SessionID: sid}
	}
	return importer.Identity{SessionID: sid, Project: fallbackProject(filepath.Base(folder))}
}

// fallbackProject names the project of a folder whose working directory
// is unknown.
func fallbackProject(name string) string {
	b := []byte("gemini-" + name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	if len(b) > recall.MaxIDLen {
		b = b[:recall.MaxIDLen]
	}
	return string(b)
}
