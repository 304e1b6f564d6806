package importer

import (
	"io"
	"time"

	"github.com/recallkit/recall"
)

// Mapper maps the lines of one transcript file to records: it is a tool's
// format, apart from the reading of the file (see the package doc). Run
// makes one per file and pass, and calls it from one goroutine.
type Mapper interface {
	// Line maps one line (never a blank one), in file order: it adds the
	// records the line gives (Transcript.Target, Target.Add), counts a line
	// that gives nothing (Transcript.Skip), or reports one that does not
	// decode (Transcript.Torn). l.Bytes is valid only during the call.
	Line(t *Transcript, l Line)
	// Identity says what the lines mapped so far name of the session. A
	// field left empty is not known yet; once returned non-empty, a field
	// must never change. Records are held until the session id, and the
	// project (Project, else the working directory's; none is needed when
	// Options.Project names it), are known. At the end of the file (eof)
	// it returns what it has, filling in what no line named (from the
	// file's name, say), or an error when the file names no session; the
	// file is then not imported.
	Identity(eof bool) (Identity, error)
}

// Opener is a Mapper that makes the stream of lines it maps itself,
// instead of Run reading the file t.File: a tool that keeps a session as
// one JSON document it rewrites, or as rows of a database, gives its
// records as lines of its own making. Offsets and digests are taken over
// that stream. Open may count what it leaves out of the stream through t
// (Skip, Lines). To read a prefix of the stream once more, Run calls Open
// of a new Mapper, with a transcript whose counts it drops: it must give
// the same bytes while the source is unchanged.
type Opener interface {
	Mapper
	Open(t *Transcript) (io.ReadCloser, error)
}

// Identity is what a transcript names of its session.
type Identity struct {
	// SessionID is the tool's own session id; the recall session ID is
	// SessionID(tool, it).
	SessionID string
	// Cwd is the working directory the session was recorded in, which the
	// main session records (MetaCwd); the records go to its project
	// (ProjectKey) unless Project names one.
	Cwd string
	// Project, when set, is the project key the records go to, for a tool
	// whose sessions name their project otherwise. Options.Project comes
	// before it.
	Project string
}

// Transcript is one transcript file as it is imported: what its Mapper
// adds records through, and what the import counts of its lines.
type Transcript struct {
	// Tool names the source tool: "claude-code", "codex", ...
	Tool string
	// File is the path the transcript is read from, which its records
	// record (MetaFile). An Opener whose source is named otherwise may
	// set it.
	File string
	// Lines counts the lines read; Skipped counts those that gave no
	// entry, by kind ("file-history-snapshot", "torn", "unknown:x", ...).
	Lines   int
	Skipped map[string]int
	// ModTime is the time of records when no line gives one: the file's
	// modification time. An Opener whose source is not the file sets it.
	ModTime time.Time

	targets []*Target
	line    Line // the line being mapped
	torn    bool // the line being mapped is a torn last line
	f       *fileImport
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

// Torn reports that line l did not decode: a torn last line (unterminated)
// is counted as "torn" and left out of the bytes consumed, so a later
// import reads it whole; any other line is counted as "malformed".
func (t *Transcript) Torn(l Line) {
	if l.Unterminated && l.Start == t.line.Start {
		t.Skip("torn")
		t.torn = true
		return
	}
	t.Skip("malformed")
}

// Target returns the recall record the lines of agent fill: the session
// for "", else a subagent record under it (Key.Subpath "subagents/" and
// the id made a valid segment). It is made on first use; the records of a
// target that never gets an item or a compaction are not written (titles
// alone make no session).
func (t *Transcript) Target(agent string) *Target {
	for _, tg := range t.targets {
		if tg.Agent == agent {
			return tg
		}
	}
	tg := &Target{Agent: agent, t: t}
	t.targets = append(t.targets, tg)
	if t.f != nil {
		t.f.newTarget(tg)
	}
	return tg
}

// Target is one recall record a transcript fills.
type Target struct {
	// Agent is the tool's subagent id for a subagent record, else "". A
	// Mapper that learns it from the lines may set it while the record is
	// held (before Identity is known).
	Agent string
	// Created is the record's creation time. A Mapper may set it while the
	// record is held; when it does not, it is the time of the record's
	// first record that has one.
	Created time.Time
	// Model is the model the lines named last, or "": the Mapper keeps it
	// current, and each batch records it (MetaModel).
	Model string

	t *Transcript
	w writer
}

// Add adds the next record of the target, from the line being mapped, and
// returns its number (the first is 0) for Record. A record without a time
// gets the time of the record before it, or Created for the first ones.
func (tg *Target) Add(r Record) int {
	r.end = tg.t.line.End
	return tg.w.add(r)
}

// Record returns the record numbered n (by Add) while it can still be
// changed: until it is written, which is never before a later line adds a
// record of another turn (Record.Turn). Otherwise it returns nil.
func (tg *Target) Record(n int) *Record {
	i := n - tg.w.first
	if i < 0 || i >= len(tg.w.pending) {
		return nil
	}
	return &tg.w.pending[i].rec
}

// Record is one entry an import writes.
type Record struct {
	// Turn, when set, names the turn the record belongs to (Claude Code's
	// message id): a batch never ends between records of one turn, so a
	// turn is written whole or not at all.
	Turn  string
	Entry recall.Entry
	// Compaction, when set, is the payload of a compaction entry: the
	// import fills in Through and Replaced from the log it appends to.
	Compaction *recall.Compaction

	end int64 // the end offset of the line it came from
}
