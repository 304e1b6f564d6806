// Package gemini imports the conversations Gemini CLI keeps
// (~/.gemini/tmp/<project>/, or under $GEMINI_CLI_HOME) into a recall
// store: its session recordings, the prompts of its logs.json, and the
// histories /chat save writes.
//
// Each session recording (chats/session-<time>-<id>.jsonl, or .json in
// versions before April 2026) becomes one recall session with Gemini's
// session id, in the project of the folder it was recorded in (from the
// project's .project_root, ~/.gemini/projects.json, or the session's
// workspace directories; "gemini-<folder>" when none names it), which it
// records (metadata "cwd", importer.MetaCwd). A subagent's recording
// (chats/<session id>/<id>.jsonl) becomes a subagent record under its
// session (Key.Subpath "subagents/<id>"). The file is a log of Gemini
// CLI's message list (chatRecordingService.ts); the import follows it
// and maps the list as Gemini CLI rebuilds its history on resume:
//
//   - user text, images and files → a message item (input_text,
//     input_image, input_file);
//   - gemini text → an assistant message (output_text); thoughts (thought
//     parts, or the recorded thought summaries) → reasoning items; tokens
//     → the usage of the message's first item; model → metadata "model";
//   - function calls and the CLI's tool call records → function_call
//     (call_id = the call's id, arguments = its args as JSON); their
//     results and functionResponse parts → function_call_output, each
//     written once, "is_error": true on an error;
//   - a line that repeats a message with more in it (its tool calls,
//     their results) adds the new items; a rewind ("$rewindTo"), a
//     replaced list ("$set" messages: /compress, a cancelled turn) or a
//     message that changed otherwise becomes a compaction whose items are
//     the whole list's;
//   - the session's summary → its title (an auto title).
//
// logs.json gives, for each session it names that has no recording in
// its folder (sessions before the CLI recorded them), a session of the
// prompts typed in it. A checkpoint-<tag>.json of /chat save gives a
// session of that history, titled <tag>.
//
// info, error and warning messages (shown, never sent to the model),
// slash commands, unknown and future records and parts, lines that do not
// decode and a torn last line are skipped and counted by kind, never
// fatal. Importing again is idempotent (see package importer); the files
// Gemini CLI rewrites whole (logs.json, checkpoints, legacy .json
// recordings) are read as the stream of their records, one line each, and
// the offset and digest are taken over that stream, so a file that gained
// records is appended to and one whose imported records changed is
// reported (importer.ErrChanged).
//
// A recording is read a line at a time and written as it is read (see
// package importer); the files Gemini CLI rewrites whole are read whole,
// each an importer.Opener of its stream. The import keeps the session's
// message list, as Gemini CLI does, to follow rewinds and replaced lists.
// A recording whose folder only its workspace directories name (no
// .project_root, no projects.json entry), which its last lines may change,
// is held until its end, and so read again when it is long.
//
// Known limits: a legacy .json recording that a newer CLI migrated to
// .jsonl after it was imported is reported as changed, as is one imported
// while an old CLI was still rewriting its last message.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
)

// Tool is the name imported sessions carry in importer.MetaSource.
const Tool = "gemini"

// DefaultPath returns the folder Gemini CLI keeps its projects' files in:
// .gemini/tmp in $GEMINI_CLI_HOME when that is set (the CLI takes it as
// the home folder), else in the home folder, on every system.
func DefaultPath() (string, error) {
	home, err := importer.HomeDir("GEMINI_CLI_HOME")
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".gemini", "tmp"), nil
}

// ErrNoSessions reports a path that holds no Gemini CLI conversation.
var ErrNoSessions = errors.New("gemini: no sessions found")

// Import imports every conversation under path (see Find) into st. A
// file that cannot be read is listed in the summary's Failures and the
// others go on; the error reports a path that cannot be read at all, one
// with no conversation (ErrNoSessions), or ctx's end.
func Import(ctx context.Context, st recall.Store, path string, opts importer.Options) (importer.Summary, error) {
	files, err := Find(path)
	if err != nil {
		return importer.Summary{Tool: Tool}, fmt.Errorf("gemini: %w", err)
	}
	if len(files) == 0 {
		return importer.Summary{Tool: Tool}, fmt.Errorf("%w in %s", ErrNoSessions, path)
	}
	r := &reader{ctx: ctx, st: st, project: opts.Project, logs: map[string]logSource{}}
	names := r.expand(files)
	if len(names) == 0 { // a logs.json whose every session has its recording
		return importer.Summary{Tool: Tool}, fmt.Errorf("%w in %s: the sessions its logs name are in its recordings", ErrNoSessions, path)
	}
	return importer.Run(ctx, st, Tool, names, r.mapper, opts)
}

// reader reads the files of one Import.
type reader struct {
	ctx     context.Context
	st      recall.Store
	project string // Options.Project
	loc     locator
	// logs maps the name of each session of a logs.json ("<path>#<id>")
	// to its stream.
	logs map[string]logSource
}

type logSource struct {
	path, session string
	stream        []byte
	fault         string // the fault of the file's end, counted with its first session
}

// expand returns the names importer.Run reads: the files, with each
// logs.json replaced by one name per session it gives.
func (r *reader) expand(files []string) []string {
	var names []string
	for _, f := range files {
		if filepath.Base(f) != "logs.json" {
			names = append(names, f)
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			names = append(names, f) // read again, and reported, by read
			continue
		}
		ids, streams, orphans, fault, err := logSessions(data)
		if err != nil {
			names = append(names, f)
			continue
		}
		for _, id := range ids {
			if recorded(f, id) {
				continue
			}
			// The damaged entries, and the fault of the file's end, are
			// counted with the first session read.
			name := f + "#" + id
			r.logs[name] = logSource{path: f, session: id, stream: append(orphans, streams[id]...), fault: fault}
			orphans, fault = nil, ""
			names = append(names, name)
		}
	}
	return names
}

// recorded reports whether the folder of a logs.json holds a recording
// of session id (its files are named session-<time>-<first 8 of id>).
func recorded(logs, id string) bool {
	if len(id) > 8 {
		id = id[:8]
	}
	entries, _ := os.ReadDir(filepath.Join(filepath.Dir(logs), "chats"))
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), "l") // .jsonl or .json
		if strings.HasPrefix(name, "session-") && strings.HasSuffix(name, "-"+id+".json") {
			return true
		}
	}
	return false
}

// mapper returns the importer.Mapper of one name of expand: a session
// recording, a checkpoint, or one session of a logs.json.
func (r *reader) mapper(name string) importer.Mapper {
	if src, ok := r.logs[name]; ok {
		return &logsMapper{r: r, src: src}
	}
	return newMapper(name, &r.loc)
}

// NewMapper returns the importer.Mapper of one file Gemini CLI keeps (see
// Find), for importer.Run and recall import --watch: a session recording
// or a checkpoint. A logs.json gives no records here: Import reads the
// sessions in it (what recall import --watch follows are the recordings).
func NewMapper(path string) importer.Mapper {
	return newMapper(path, &locator{})
}

func newMapper(path string, loc *locator) importer.Mapper {
	switch base := filepath.Base(path); {
	case base == "logs.json":
		return &logsFile{}
	case strings.HasPrefix(base, "checkpoint-"):
		return &checkpointMapper{path: path, loc: loc, seen: callSet{open: map[string][]string{}}}
	case strings.HasSuffix(base, ".json"):
		return &legacyChat{chat: newChat(path, loc)}
	}
	return newChat(path, loc)
}

// parentOf returns the parent session's id of a subagent's recording
// (chats/<parent id>/<id>.jsonl), or "".
func parentOf(path string) string {
	dir := filepath.Dir(path)
	if filepath.Base(filepath.Dir(dir)) != "chats" {
		return ""
	}
	return filepath.Base(dir)
}

// readWhole reads a file Gemini CLI rewrites whole, for an Opener: it
// sets the transcript's time from the file's.
func readWhole(t *importer.Transcript) ([]byte, error) {
	data, err := os.ReadFile(t.File)
	if err != nil {
		return nil, err
	}
	t.ModTime = importer.FileTime(t.File)
	return data, nil
}

// Find returns the files under path that hold conversations: path itself
// when it is a file; else, sorted, the session recordings (a legacy .json
// only when no .jsonl of the same name replaced it), then the subagents'
// recordings, the checkpoints and the logs.json files. The folders of a
// project that Gemini CLI has since moved to a new name (a legacy folder
// named by a hash that another folder's .project_root claims) are left
// out: the CLI copied their files there.
func Find(path string) ([]string, error) {
	files, err := importer.Files(path, keep)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(path); err == nil && !fi.IsDir() {
		return files, nil
	}
	moved := movedFolders(path)
	groups := make([][]string, 4)
	for _, f := range files {
		if moved[projectOf(f)] {
			continue
		}
		groups[rank(f)] = append(groups[rank(f)], f)
	}
	var out []string
	for _, g := range groups {
		sort.Strings(g)
		out = append(out, g...)
	}
	return out, nil
}

// keep reports whether path is a file Find returns.
func keep(path string) bool {
	base, dir := filepath.Base(path), filepath.Base(filepath.Dir(path))
	switch {
	case base == "logs.json":
		return true
	case strings.HasPrefix(base, "checkpoint-") && strings.HasSuffix(base, ".json"):
		return dir != "checkpoints" // those are the file restore points of /restore
	case strings.HasSuffix(base, ".jsonl"):
		return dir == "chats" && strings.HasPrefix(base, "session-") || parentOf(path) != ""
	case strings.HasSuffix(base, ".json"):
		_, err := os.Stat(path + "l")
		return err != nil && (dir == "chats" && strings.HasPrefix(base, "session-") || parentOf(path) != "")
	}
	return false
}

// rank orders Find's groups: sessions, subagents, checkpoints, logs.
func rank(path string) int {
	base := filepath.Base(path)
	switch {
	case base == "logs.json":
		return 3
	case strings.HasPrefix(base, "checkpoint-"):
		return 2
	case parentOf(path) != "":
		return 1
	}
	return 0
}

// movedFolders returns the legacy project folders below root (named by
// the SHA-256 of the project's path) whose project has a folder of its
// new name: one whose .project_root names a path of that hash.
func movedFolders(root string) map[string]bool {
	moved := map[string]bool{}
	dirs := []string{root}
	if entries, err := os.ReadDir(root); err == nil {
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join(root, e.Name()))
			}
		}
	}
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, ".project_root")); err == nil {
			moved[filepath.Join(filepath.Dir(d), hashOf(strings.TrimSpace(string(b))))] = true
		}
	}
	return moved
}
