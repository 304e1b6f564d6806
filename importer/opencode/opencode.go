// Package opencode imports opencode's sessions into a recall store: from
// its SQLite database (opencode.db in its data folder, versions from
// February 2026 on) and from the JSON files of the versions before it
// (storage/ in the same folder).
//
// Each session becomes one recall session with opencode's session id, in
// the project of the folder it ran in (importer.ProjectKey of its
// directory), which it records (metadata "cwd", importer.MetaCwd), titled
// as opencode titled it (an auto title). A child session (a subagent the
// task tool started: it has a parent) becomes a subagent record under its
// root session (Key.Subpath "subagents/<id>"). Its messages map to
// Responses items as opencode sends them back to the model
// (MessageV2.toModelMessages):
//
//   - user text and files → a message item (input_text, input_image,
//     input_file); text opencode marks ignored, and text files it inlines
//     as text, are left out;
//   - assistant text → an assistant message; reasoning → a reasoning item;
//     tokens → the usage of the message's first item; model → metadata
//     "model";
//   - a tool part → function_call (call_id = its callID, arguments = its
//     input as JSON) and function_call_output (its output, with its
//     attachments; its error with "is_error": true; an interrupted call's
//     note);
//   - a compaction (a user message with a compaction part) → a compaction
//     entry: the summary that follows is all the view keeps of before;
//   - a failed assistant message, which opencode leaves out of the
//     model's input, is skipped.
//
// Messages still being written (an assistant message not completed that
// no message follows, a user message not answered yet) and those a
// pending undo hides are left for a later import; parts of unknown kinds,
// records that do not decode are skipped and counted by kind, never fatal.
// Importing again is idempotent (see package importer): a session is read
// as the stream of its settled messages, one line each holding what the
// message gives recall, and the offset and digest are taken over that
// stream, so a session that gained messages is appended to and one whose
// imported messages changed (an undo after the import) is reported
// (importer.ErrChanged). A title opencode gives later is written with the
// session's next messages.
// Where both a database and the JSON files hold a session (opencode copies
// its files into the database once), the database is read.
//
// A session's stream is made from its messages (an importer.Opener): the
// import holds one session's messages, as opencode's own storage gives
// them, and writes them a batch at a time.
//
// recall import --watch follows the databases and their write-ahead
// logs (Find, ImportFile), not the JSON files of older versions.
//
// Known limits: the event-sourced tables of newer versions
// (session_message, ...) are not read, the message and part tables
// opencode keeps beside them are.
package opencode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
)

// Tool is the name imported sessions carry in importer.MetaSource.
const Tool = "opencode"

// DefaultPaths returns where opencode keeps its sessions: its data folder,
// $XDG_DATA_HOME/opencode or ~/.local/share/opencode on every system (it
// does not use the platform's own folders), and the database
// $OPENCODE_DB names when that is an absolute path elsewhere.
func DefaultPaths() ([]string, error) {
	data, err := importer.HomeDir("XDG_DATA_HOME", ".local", "share")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(data, "opencode")
	paths := []string{dir}
	if db := os.Getenv("OPENCODE_DB"); filepath.IsAbs(db) && filepath.Dir(db) != dir {
		paths = append(paths, db)
	}
	return paths, nil
}

// ErrNoSessions reports paths that hold no opencode database or session.
var ErrNoSessions = errors.New("opencode: no sessions found")

// dbName matches the databases opencode names: opencode.db, or
// opencode-<channel>.db for a build of another channel.
var dbName = regexp.MustCompile(`^opencode(-[A-Za-z0-9._-]+)?\.db$`)

// Import imports every session under paths into st: each path is an
// opencode data folder (its databases and storage/), a storage folder, a
// database, or one session's file (storage/session/<project>/<id>.json).
// A path that does not exist is passed over when another one does. A
// session that cannot be read is listed in the summary's Failures and the
// others go on; the error reports paths that cannot be read at all or
// hold no session (ErrNoSessions), or ctx's end.
func Import(ctx context.Context, st recall.Store, paths []string, opts importer.Options) (importer.Summary, error) {
	return importPaths(ctx, st, paths, opts, nil)
}

// importPaths is Import, reading with follow (nil: every session) only
// the sessions of a database that changed since follow's last import.
func importPaths(ctx context.Context, st recall.Store, paths []string, opts importer.Options, follow *Follower) (importer.Summary, error) {
	r := &reader{ctx: ctx, sessions: map[string]*sessionInfo{}, byName: map[string]*sessionInfo{}, source: map[string]source{}, follow: follow}
	defer r.close()
	// The databases first: a session they hold is not read again from
	// the JSON files opencode copied it from.
	var dbs []string
	var stores []storage
	var errs []error
	for _, p := range paths {
		d, s, err := locate(p)
		if err != nil {
			errs = append(errs, err)
		}
		dbs, stores = append(dbs, d...), append(stores, s...)
	}
	var failures []importer.Failure
	for _, d := range dbs {
		if err := r.addDatabase(d); err != nil {
			errs = append(errs, err)
			failures = append(failures, importer.Failure{File: d, Err: err.Error()})
		}
	}
	for _, s := range stores {
		r.addStorage(s)
	}
	names := r.names()
	if len(names) == 0 && r.known > 0 {
		return importer.Summary{Tool: Tool}, nil // nothing changed
	}
	if len(names) == 0 {
		err := fmt.Errorf("%w in %s", ErrNoSessions, strings.Join(paths, ", "))
		if len(errs) > 0 {
			err = fmt.Errorf("opencode: %w", errors.Join(errs...))
		}
		return importer.Summary{Tool: Tool}, err
	}
	sum, err := importer.Run(ctx, st, Tool, names, r.mapper, opts)
	if follow != nil && err == nil {
		follow.imported(r.versions, names, sum.Failures)
	}
	sum.Failures = append(failures, sum.Failures...) // the databases that could not be read
	return sum, err
}

// locate returns the databases and storage folders of a path: an opencode
// data folder (its databases and storage/), a storage folder, a database,
// or one session's file (storage/session/<project>/<id>.json, read alone).
func locate(path string) ([]string, []storage, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !fi.IsDir() {
		if strings.HasSuffix(path, ".json") {
			return nil, []storage{{root: filepath.Dir(filepath.Dir(filepath.Dir(path))), only: path}}, nil
		}
		return []string{path}, nil, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, nil, err
	}
	var dbs []string
	for _, e := range entries {
		if !e.IsDir() && dbName.MatchString(e.Name()) {
			dbs = append(dbs, filepath.Join(path, e.Name()))
		}
	}
	for _, root := range []string{filepath.Join(path, "storage"), path} {
		if fi, err := os.Stat(filepath.Join(root, "session")); err == nil && fi.IsDir() {
			return dbs, []storage{{root: root}}, nil
		}
	}
	return dbs, nil, nil
}

// source reads the messages of one session.
type source func(ctx context.Context, id string) ([]message, error)

// reader reads the sessions of one Import.
type reader struct {
	ctx      context.Context
	dbs      []*database
	list     []*sessionInfo
	sessions map[string]*sessionInfo // by id, for the parents
	byName   map[string]*sessionInfo
	source   map[string]source // by name
	// follow, when set, leaves out the sessions of a database whose
	// version (versions, by name) it imported last; known counts every
	// session found, left out or not.
	follow   *Follower
	versions map[string]string
	known    int
}

func (r *reader) close() {
	for _, d := range r.dbs {
		d.close()
	}
}

func (r *reader) addDatabase(path string) error {
	d, err := openDatabase(r.ctx, path)
	if err != nil {
		return err
	}
	r.dbs = append(r.dbs, d)
	list, err := d.sessions(r.ctx)
	if err != nil {
		return err
	}
	var versions map[string]string
	if r.follow != nil {
		if versions, err = d.versions(r.ctx); err != nil {
			return err
		}
	}
	for i := range list {
		s := &list[i]
		r.known++
		if r.follow != nil {
			v := versions[s.ID] + "|" + s.version
			if r.versions == nil {
				r.versions = map[string]string{}
			}
			r.versions[s.name] = v
			if r.follow.unchanged(s.name, v) {
				r.sessions[s.ID] = s // a parent still, but not read
				continue
			}
		}
		r.keep(s, func(ctx context.Context, id string) ([]message, error) { return d.messages(ctx, id) })
	}
	return nil
}

// addStorage adds the sessions of a storage folder that no database
// holds.
func (r *reader) addStorage(st storage) {
	list := st.sessions()
	for i := range list {
		s := &list[i]
		if s.ID != "" && r.sessions[s.ID] != nil {
			continue // opencode copied it into its database, which is read
		}
		r.keep(s, func(_ context.Context, id string) ([]message, error) { return st.messages(id) })
	}
}

func (r *reader) keep(s *sessionInfo, src source) {
	if s.ID != "" {
		if r.sessions[s.ID] != nil {
			return // in two databases: the first is read
		}
		r.sessions[s.ID] = s
	}
	r.list = append(r.list, s)
	r.byName[s.name] = s
	r.source[s.name] = src
}

// root returns the root session of s, following its parents, and how
// deep s is below it.
func (r *reader) root(s *sessionInfo) (*sessionInfo, int) {
	depth := 0
	for hops := 0; s.ParentID != "" && hops < 64; hops++ {
		p := r.sessions[s.ParentID]
		if p == nil {
			break
		}
		s, depth = p, depth+1
	}
	return s, depth
}

// names returns the names of the sessions to read: root sessions first,
// then their children, so a subagent record is written after its session.
func (r *reader) names() []string {
	sort.SliceStable(r.list, func(i, j int) bool {
		_, di := r.root(r.list[i])
		_, dj := r.root(r.list[j])
		if di != dj {
			return di < dj
		}
		return r.list[i].name < r.list[j].name
	})
	names := make([]string, len(r.list))
	for i, s := range r.list {
		names[i] = s.name
	}
	return names
}

// mapper returns the importer.Mapper of the session named name.
func (r *reader) mapper(name string) importer.Mapper {
	return &sessionMapper{r: r, name: name}
}

// sessionMapper maps one session: Open reads its messages and makes its
// stream, Line gives the records of each line of it.
type sessionMapper struct {
	r    *reader
	name string
	s    *stream
	n    int // lines mapped
	id   importer.Identity
	// agent is the session's id when it is a child (a subagent record).
	agent   string
	created time.Time
}

// Open implements importer.Opener: the stream of the session's settled
// messages.
func (m *sessionMapper) Open(t *importer.Transcript) (io.ReadCloser, error) {
	s := m.r.byName[m.name]
	if s == nil || s.ID == "" {
		return nil, fmt.Errorf("%s: not a readable opencode session", m.name)
	}
	msgs, err := m.r.source[m.name](m.r.ctx, s.ID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m.name, err)
	}
	sort.SliceStable(msgs, func(i, j int) bool {
		if a, b := msgs[i].info.Time.Created, msgs[j].info.Time.Created; a != b {
			return a < b
		}
		return msgs[i].id < msgs[j].id
	})
	root, _ := m.r.root(s)
	title := ""
	if root == s {
		title = s.Title
	} else {
		m.agent = s.ID
	}
	m.s = streamOf(t, msgs, s.Revert, title)
	m.created = time.UnixMilli(int64(s.Time.Created)).UTC().Truncate(time.Microsecond)
	m.id = importer.Identity{SessionID: root.ID, Project: fallbackProject}
	if _, err := importer.ProjectKey(root.Directory); err == nil {
		m.id = importer.Identity{SessionID: root.ID, Cwd: root.Directory}
	}
	return io.NopCloser(bytes.NewReader(m.s.data)), nil
}

// Line implements importer.Mapper: the records of the stream's next line.
func (m *sessionMapper) Line(t *importer.Transcript, _ importer.Line) {
	if m.n >= len(m.s.lines) {
		t.Skip("malformed") // never so: the stream is the lines'
		return
	}
	sl := m.s.lines[m.n]
	m.n++
	tg := t.Target(m.agent)
	tg.Created = m.created
	if sl.model != "" {
		tg.Model = sl.model
	}
	for _, r := range sl.recs {
		tg.Add(r)
	}
}

// Identity implements importer.Mapper: the root session's id, in the
// project of its folder (or "opencode", when it names none).
func (m *sessionMapper) Identity(bool) (importer.Identity, error) { return m.id, nil }

// fallbackProject is the project of a session that names no folder.
const fallbackProject = "opencode"
