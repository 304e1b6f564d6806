package opencode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/recallkit/recall/importer/internal/responses"
)

// storage reads the JSON files of opencode's versions before its database
// (~/.local/share/opencode/storage; storage/json-migration.ts reads the
// same layout into the database):
//
//	session/<project id>/<session id>.json   a session's info
//	message/<session id>/<message id>.json   a message's info
//	part/<message id>/<part id>.json         a part
//
// As opencode does, the ids are taken from the files' names.
type storage struct {
	root string
	only string // when set, the one session file to read
}

// sessions returns the sessions of the storage (or its one file). A
// session file that cannot be read or decoded is returned with no id, for
// the import to report.
func (s storage) sessions() []sessionInfo {
	files := []string{s.only}
	if s.only == "" {
		files = nil
		projects, _ := os.ReadDir(filepath.Join(s.root, "session"))
		for _, p := range projects {
			if p.IsDir() {
				f, _ := jsonFiles(filepath.Join(s.root, "session", p.Name()))
				files = append(files, f...)
			}
		}
	}
	var out []sessionInfo
	for _, f := range files {
		var info sessionInfo
		data, err := os.ReadFile(f)
		if err == nil && json.Unmarshal(data, &info, responses.DecodeOptions) == nil {
			info.ID = strings.TrimSuffix(filepath.Base(f), ".json")
		} else {
			info = sessionInfo{} // what a damaged file half decoded is not kept
		}
		info.name = f
		out = append(out, info)
	}
	return out
}

// messages returns a session's messages with their parts.
func (s storage) messages(session string) ([]message, error) {
	files, err := jsonFiles(filepath.Join(s.root, "message", session))
	if err != nil {
		return nil, err
	}
	var out []message
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		id := strings.TrimSuffix(filepath.Base(f), ".json")
		pfiles, err := jsonFiles(filepath.Join(s.root, "part", id))
		if err != nil {
			return nil, err
		}
		var parts [][2][]byte
		for _, pf := range pfiles {
			pdata, err := os.ReadFile(pf)
			if err != nil {
				return nil, err
			}
			parts = append(parts, [2][]byte{[]byte(strings.TrimSuffix(filepath.Base(pf), ".json")), pdata})
		}
		out = append(out, decodeMessage(id, data, parts))
	}
	return out, nil
}

// jsonFiles returns the .json files of dir, sorted; none when dir does
// not exist.
func jsonFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opencode: %w", err)
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}
