// Package claudecode imports Claude Code transcripts
// (~/.claude/projects/<project>/<sessionId>.jsonl) into a recall store.
//
// Each transcript becomes one recall session, in the project of the
// working directory its lines name (importer.ProjectKey: the key
// recall.ProjectKey gives, whether or not the directory exists here),
// which it records (metadata "cwd", importer.MetaCwd), with the
// transcript's session id as its ID. Its lines map to Responses items:
//
//   - user and assistant text (and images) → a message item (input_text,
//     output_text and input_image parts); the lines of one assistant
//     message (one content block each) are one turn, written in one batch,
//     whose token usage is counted once;
//   - tool_use → function_call (call_id = the tool_use id, arguments = the
//     input as a JSON string); tool_result → function_call_output with the
//     same call_id, and "is_error": true on a result marked as an error;
//   - thinking → a reasoning item (its text as summary_text);
//     redacted_thinking → a reasoning item with encrypted_content;
//   - custom-title, else ai-title, else summary lines → the title (a
//     custom title is the user's, the others auto titles);
//   - a compact_boundary line → a compaction entry: the items before it
//     leave the view, and the summary Claude Code writes next follows;
//   - sidechain lines, and subagent transcripts (<sessionId>/subagents/
//     agent-<id>.jsonl), → subagent records under the session
//     (Key.Subpath "subagents/agent-<id>").
//
// Bookkeeping lines (file-history-snapshot, queue-operation, progress,
// ...), other system lines, unknown types, blocks of unknown kinds, lines
// that do not decode and a torn last line are skipped and counted by kind,
// never fatal. Importing again is idempotent (see package importer).
//
// A transcript is read line by line and written as it is read (see
// package importer), so its size does not bound the import's memory.
//
// Known limits: a rewind in Claude Code (a branch from an earlier message)
// is imported in file order, both branches one after the other.
package claudecode

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
)

// Tool is the name imported sessions carry in importer.MetaSource.
const Tool = "claude-code"

// DefaultPath returns Claude Code's projects folder, ~/.claude/projects
// (under $CLAUDE_CONFIG_DIR when that is set).
func DefaultPath() (string, error) {
	dir, err := importer.HomeDir("CLAUDE_CONFIG_DIR", ".claude")
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "projects"), nil
}

// Find returns the transcripts under path: path itself when it is a file,
// else every .jsonl file below it. Sessions come first, then subagent
// transcripts, so a subagent record is written after its session.
func Find(path string) ([]string, error) {
	files, err := importer.Files(path, func(p string) bool { return strings.HasSuffix(p, ".jsonl") })
	if err != nil {
		return nil, err
	}
	var sessions, agents []string
	for _, p := range files {
		if isSubagent(p) {
			agents = append(agents, p)
		} else {
			sessions = append(sessions, p)
		}
	}
	sort.Strings(sessions)
	sort.Strings(agents)
	return append(sessions, agents...), nil
}

// isSubagent reports whether path is a subagent transcript.
func isSubagent(path string) bool {
	return filepath.Base(filepath.Dir(path)) == "subagents" || strings.HasPrefix(filepath.Base(path), "agent-")
}

// ErrNoTranscripts reports a path that holds no transcript.
var ErrNoTranscripts = errors.New("claudecode: no transcripts found")

// Import imports every transcript under path (see Find) into st. A file
// that cannot be read is listed in the summary's Failures and the others
// go on; the error reports a path that cannot be read at all, one with no
// transcript (ErrNoTranscripts), or ctx's end.
func Import(ctx context.Context, st recall.Store, path string, opts importer.Options) (importer.Summary, error) {
	files, err := Find(path)
	if err != nil {
		return importer.Summary{Tool: Tool}, fmt.Errorf("claudecode: %w", err)
	}
	if len(files) == 0 {
		return importer.Summary{Tool: Tool}, fmt.Errorf("%w in %s", ErrNoTranscripts, path)
	}
	return importer.Run(ctx, st, Tool, files, NewMapper, opts)
}
