// Package importer is the part recall's importers share: it reads a
// transcript of another tool line by line, hands each line to the tool's
// Mapper, and writes the records the lines give into any recall.Store as
// they come (Run). An import holds a line and a batch per record it
// writes, never the transcript: its memory does not grow with the file.
//
// The tools' own formats are read by importer/claudecode (Claude Code),
// importer/codex (OpenAI Codex CLI), importer/gemini (Gemini CLI) and
// importer/opencode (opencode). Each turns the lines of one transcript
// into records of the recall records it fills: the main session and any
// subagent records (Key.Subpath "subagents/<agent>").
//
// # How an importer plugs in
//
// A tool's package gives Run the files to read (Files walks a folder) and,
// for each file, a Mapper: the tool's per-line mapping, apart from the
// reading. Run opens the file (a .zst file is decompressed), splits it into
// lines, and calls the Mapper's Line with each non-blank one, in order. Line
// decodes it and adds the records it gives through the Transcript:
// t.Target("") is the session's record and t.Target(agent) a subagent's;
// Target.Add adds a Record (an entry, or a compaction); t.Skip counts a
// line that gives nothing, by kind; t.Torn reports a line that does not
// decode. The Mapper keeps what it needs of the lines before (a title's
// rank, say), never the lines; it keeps Target.Model current, may set
// Target.Created, and may change a record a later line completes (a
// token count) through Target.Record while it is unwritten. Identity says
// which session the lines name (the tool's session id, and the working
// directory or the project the records go to): records are held until it
// is known. A file may be mapped more than once, by a new Mapper each time
// (see Memory), so what a Mapper adds must follow from the lines alone.
// Everything else is Run's: the keys, the times of records without one,
// the batches, the offsets and digests, importing again, the summary. A
// minimal importer is in Example_mapper; importtest.Check is the fuzz
// check every importer passes.
//
// A tool that keeps a session as one JSON document it rewrites, or as
// rows of a database, gives its records as a stream of lines of its own
// making, one a record: its Mapper is also an Opener, and Run reads the
// lines Open returns instead of the file (Gemini CLI's logs and
// checkpoints, opencode's sessions). Offsets and digests are taken over
// that stream, so a session that gained records is appended to; the
// memory of such a source is the document's, which its format sets.
//
// # Importing again
//
// Importing again is idempotent. Every recall record an import writes keeps
// in its metadata where it came from (MetaSource, MetaSession, MetaFile),
// how many bytes of the transcript it has consumed (MetaOffset) and the
// SHA-256 of those bytes (MetaDigest). A later import of the same
// transcript writes only the entries of lines past that offset, after
// checking that the transcript still starts with the bytes consumed (the
// digest is taken as the lines are read; a prefix already read is read
// again from the file, never kept); a transcript that was rewritten is
// reported (ErrChanged), never merged. The entries of a batch and the
// metadata that records their offset are one atomic Append, so a crash
// mid-import neither loses nor repeats a line. A torn last line (a writer
// still at work, or killed) is left out, and read whole by the next import.
//
// # Memory
//
// A record's entries are written in batches of about 2,000 records or 8 MB,
// each as soon as the lines after it show it is complete (a batch never
// ends inside a turn). What a record's metadata says of the whole
// transcript (its model) is written with each batch, as far as the lines
// have told it, so the last batch leaves it as the whole transcript says.
// Records wait, held in memory, until the lines have named the session and
// its folder, given the record a conversation (titles alone make no
// session) and a time: in the files the tools write, the first lines do. A
// file whose lines hold back more than half a batch is read again instead:
// once whole to learn what they name, then to write.
package importer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/recallkit/recall"
)

// The metadata keys an imported record carries (see the package doc).
const (
	MetaSource  = "import.source"  // the tool: "claude-code", "codex"
	MetaSession = "import.session" // the tool's own session id
	MetaAgent   = "import.agent"   // the tool's subagent id, on subagent records
	MetaFile    = "import.file"    // the transcript file last read
	MetaOffset  = "import.offset"  // bytes of the transcript consumed
	MetaDigest  = "import.sha256"  // SHA-256 (hex) of those bytes
	MetaModel   = "model"          // the model the transcript last names
	// MetaCwd is the working directory the session was recorded in, the
	// folder of its project: the key recall chat records its own
	// sessions' folder under, so that a session resumed from another
	// folder runs its tools in its own.
	MetaCwd = "cwd"
	// MetaGitRemote is the remote URL of the git checkout MetaCwd is in,
	// normalised (github.com/OWNER/REPO, see internal/gitremote), when it
	// is one: the same repository has different folders on different
	// machines, and recall sync maps projects by it.
	MetaGitRemote = "git_remote"
)

// SourceRecall is the source of a session recall wrote itself, which
// carries no MetaSource.
const SourceRecall = "recall"

// Source returns the tool m's session came from: the MetaSource an import
// recorded ("claude-code", "codex", ...), or SourceRecall for a session
// recall wrote itself. It is the one definition every listing (the CLI's
// ls and search, the MCP tools) shows and filters by.
func Source(m recall.Meta) string {
	if s := m.Metadata[MetaSource]; s != "" {
		return s
	}
	return SourceRecall
}

// Errors of an import. Both leave the recall session as it was.
var (
	// ErrForeign reports a recall session at the key an import would
	// write that was not imported from the same transcript.
	ErrForeign = errors.New("importer: the session exists and was not imported from this transcript")
	// ErrChanged reports a transcript that no longer starts with the
	// bytes an earlier import consumed: it was rewritten, not appended to.
	ErrChanged = errors.New("importer: the transcript changed since it was imported")
)

// SessionID returns the recall session ID for a tool's session id: the id
// itself when it is a valid recall ID (Claude Code and Codex ids are UUIDs),
// else a UUID derived from tool and id, so an import always finds the
// session an earlier import of the same transcript created.
func SessionID(tool, id string) string {
	if recall.ValidateID(id) == nil {
		return id
	}
	return uuid.NewSHA1(namespace, []byte(tool+"\x00"+id)).String()
}

// namespace is the UUIDv5 namespace of derived session IDs.
var namespace = uuid.MustParse("8f0f3c5e-4b8a-5d6e-9c1a-6b2f1e0d7a41")

// ProjectKey returns the recall project key of a transcript's working
// directory: recall.ProjectKey, which works whether or not the directory
// exists on this machine. A path that is absolute on another system
// (C:\work\app on Linux) is named like the folder its own tool gives it,
// instead of being resolved against this process's directory.
func ProjectKey(cwd string) (string, error) {
	if cwd == "" {
		return "", errors.New("importer: the transcript names no working directory")
	}
	if filepath.IsAbs(cwd) || !foreignAbs(cwd) {
		return recall.ProjectKey(cwd)
	}
	return foreignProjectKey(cwd), nil
}

// foreignAbs reports whether p is an absolute path of the other family of
// systems: a Windows drive or UNC path, or a Unix path on Windows.
func foreignAbs(p string) bool {
	if len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') {
		return true
	}
	return strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, "/")
}

// foreignProjectKey is recall.ProjectKey's naming for a path that cannot
// be resolved here: every byte outside [A-Za-z0-9] becomes '-', and a name
// over 200 bytes is cut and suffixed with a short hash of the whole.
func foreignProjectKey(p string) string {
	b := []byte(p)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	if len(b) <= 200 {
		return string(b)
	}
	sum := sha256.Sum256([]byte(p))
	return string(b[:200]) + "-" + hex.EncodeToString(sum[:])[:12]
}

// ParseTime parses a transcript timestamp (RFC 3339) into the form stores
// keep (UTC, microseconds); the zero time when s is not one.
func ParseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}

// Usage returns a transcript's token usage as an Entry.Usage: with its
// total the sum of its input and output when the tool gave none, and nil
// when it counts nothing.
func Usage(u recall.Usage) *recall.Usage {
	if u.TotalTokens == 0 {
		u.TotalTokens = u.InputTokens + u.OutputTokens
	}
	if u.IsZero() {
		return nil
	}
	return &u
}

// subpath returns the Key.Subpath of the subagent record of agent: the id
// made a valid segment (bytes outside [A-Za-z0-9._-] become '-').
func subpath(agent string) string {
	b := []byte(agent)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '-'
		}
	}
	if len(b) > recall.MaxIDLen {
		b = b[:recall.MaxIDLen]
	}
	if s := string(b); s != "." && s != ".." {
		return "subagents/" + s
	}
	return "subagents/agent"
}
