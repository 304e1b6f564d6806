// Package importer is the part recall's importers share: the shape a
// transcript of another tool is turned into (Transcript, Target, Record),
// and the idempotent write of it into any recall.Store (Write, Run).
//
// The tools' own formats are read by importer/claudecode (Claude Code) and
// importer/codex (OpenAI Codex CLI). Each turns one transcript file into a
// Transcript: the recall records it fills (the main session and any
// subagent records), each a list of entries tagged with the end offset of
// the source line they came from.
//
// Importing again is idempotent. Every recall record an import writes keeps
// in its metadata where it came from (MetaSource, MetaSession, MetaFile),
// how many bytes of the transcript it has consumed (MetaOffset) and the
// SHA-256 of those bytes (MetaDigest). A later import of the same
// transcript writes only the entries of lines past that offset, after
// checking that the transcript still starts with the bytes consumed; a
// transcript that was rewritten is reported (ErrChanged), never merged.
// The entries of a batch and the metadata that records their offset are one
// atomic Append, so a crash mid-import neither loses nor repeats a line.
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

// Transcript is one transcript file of another tool, read whole and turned
// into the recall records it fills.
type Transcript struct {
	// Tool names the source tool: "claude-code" or "codex".
	Tool string
	// SessionID is the tool's own session id.
	SessionID string
	// File is the path the transcript was read from.
	File string
	// Data holds the complete lines read (decompressed): offsets and
	// digests refer to it. A torn last line is not part of it.
	Data []byte
	// Targets are the recall records the transcript fills: the main
	// session first, then subagent records. A transcript with no
	// conversation has none.
	Targets []*Target
	// Lines counts the lines read; Skipped counts those that gave no
	// entry, by kind ("file-history-snapshot", "torn", "unknown:x", ...).
	Lines   int
	Skipped map[string]int
}

// Skip counts one line of kind that gave nothing.
func (t *Transcript) Skip(kind string) {
	if t.Skipped == nil {
		t.Skipped = map[string]int{}
	}
	if len(kind) > 48 {
		kind = kind[:48] // a hostile type name does not bloat the summary
	}
	t.Skipped[kind]++
}

// Target is one recall record a transcript fills.
type Target struct {
	Key recall.Key
	// Agent is the tool's subagent id for a subagent record, else "".
	Agent string
	// Created is the time of the record's first line.
	Created time.Time
	// Model is the model the transcript names last, or "".
	Model string
	// Cwd is the working directory of the main session, when the
	// transcript names one and the session goes to its project; "" on
	// subagent records.
	Cwd string
	// Records are the entries, in transcript order.
	Records []Record
}

// Record is one entry an import writes, with the end offset (in
// Transcript.Data) of the source line it came from. Records of one line
// share End, and are written together or not at all.
type Record struct {
	End int64
	// Turn, when set, names the turn the record belongs to (Claude Code's
	// message id): the records of one turn are written in one batch.
	Turn  string
	Entry recall.Entry
	// Compaction, when set, is the payload of a compaction entry: Write
	// fills in Through and Replaced from the log it appends to.
	Compaction *recall.Compaction
}

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

// fillTimes gives records without a time of their own (lines that carry
// none, such as titles) the time of the record before, or of the first
// timed record for those at the start, and sets Created when unset.
func fillTimes(tg *Target, fallback time.Time) {
	first := fallback
	for _, r := range tg.Records {
		if !r.Entry.Time.IsZero() {
			first = r.Entry.Time
			break
		}
	}
	if tg.Created.IsZero() {
		tg.Created = first
	}
	prev := tg.Created
	for i := range tg.Records {
		if tg.Records[i].Entry.Time.IsZero() {
			tg.Records[i].Entry.Time = prev
		}
		prev = tg.Records[i].Entry.Time
	}
}

// Finish completes a transcript once its lines are read: it drops targets
// with no conversation (titles alone make no session) and gives every record a time (see fillTimes), using
// fallback (the file's modification time) when no line has one.
func (t *Transcript) Finish(fallback time.Time) {
	fallback = fallback.UTC().Truncate(time.Microsecond)
	kept := t.Targets[:0]
	for _, tg := range t.Targets {
		if !tg.hasConversation() {
			continue
		}
		fillTimes(tg, fallback)
		kept = append(kept, tg)
	}
	t.Targets = kept
}

// hasConversation reports whether tg has an item or a compaction.
func (tg *Target) hasConversation() bool {
	for _, r := range tg.Records {
		if r.Entry.Kind == recall.KindItem || r.Compaction != nil {
			return true
		}
	}
	return false
}
