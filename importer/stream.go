package importer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/recallkit/recall"
)

// errHeld reports a first pass that had to hold back more than half a
// batch of a record's lines before it could write them: the file is read
// again, first to learn what its lines name (facts), then to write.
var errHeld = errors.New("importer: records held back")

// fileImport is the import of one transcript file: up to three passes
// over its lines (see run), each with a fresh Mapper.
type fileImport struct {
	ctx       context.Context
	st        recall.Store
	tool      string
	path      string
	opts      Options
	newMapper func(path string) Mapper
	progress  func(read int64) // bytes of the file read, as on disk

	// The pass under way.
	t *Transcript
	m Mapper
	d *digest
	// id is what the lines named of the session, once it is enough to
	// key the records; project is its project key, once a record needed
	// it.
	id      *Identity
	project string
	keyed   bool

	learning bool              // the facts pass: map, write nothing
	known    *facts            // the facts of the file, on the pass after it
	prior    map[string]result // what an abandoned first pass wrote, by agent
}

// facts are what the lines of a whole file say of its records.
type facts struct {
	id Identity
	// created holds, for each target that has a conversation (by agent),
	// its creation time; a target missing from it writes nothing.
	created map[string]time.Time
}

// run imports the file. Most files are read once; one whose records must
// wait too long for what names them (see errHeld) is read three times:
// the first pass stops, a second learns the facts, a third writes with
// them. What the first pass wrote stays, and the third resumes after it
// as any import does.
func (f *fileImport) run() error {
	err := f.pass()
	if !errors.Is(err, errHeld) {
		return err
	}
	f.prior = map[string]result{}
	for _, tg := range f.t.targets {
		if tg.w.res.Outcome != "" {
			f.prior[tg.Agent] = tg.w.res
		}
	}
	f.learning = true
	if err := f.pass(); err != nil {
		return err
	}
	known := &facts{id: *f.id, created: map[string]time.Time{}}
	for _, tg := range f.t.targets {
		if tg.w.conv {
			known.created[tg.Agent] = f.created(tg, true)
		}
	}
	f.known, f.learning = known, false
	return f.pass()
}

// open opens the stream of lines of the pass's Mapper: the file, or what
// an Opener makes.
func (f *fileImport) open(read *int64) (io.ReadCloser, error) {
	if o, ok := f.m.(Opener); ok {
		return o.Open(f.t)
	}
	return open(f.path, read)
}

// pass reads the file once, mapping each line and writing what is ready
// after it.
func (f *fileImport) pass() error {
	f.t = &Transcript{Tool: f.tool, File: f.path, ModTime: FileTime(f.path), f: f}
	f.m = f.newMapper(f.path)
	f.d = newDigest()
	f.id, f.project, f.keyed = nil, "", false
	if f.known != nil {
		f.id = &f.known.id
	}
	var read int64
	rc, err := f.open(&read)
	if err != nil {
		return err
	}
	defer rc.Close()
	lr := newLineReader(rc)
	reported := int64(0)
	for n := 0; ; n++ {
		if n%256 == 0 {
			if err := f.ctx.Err(); err != nil {
				return err
			}
			if f.progress != nil && read-reported >= 1<<20 {
				f.progress(read)
				reported = read
			}
		}
		l, raw, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		if l.blank() {
			f.d.write(raw)
			continue
		}
		f.t.Lines++
		f.t.line, f.t.torn = l, false
		f.m.Line(f.t, l)
		if !f.t.torn {
			f.d.write(raw)
		}
		if err := f.afterLine(); err != nil {
			return err
		}
	}
	return f.end()
}

// afterLine writes what the line just read makes ready.
func (f *fileImport) afterLine() error {
	if f.id == nil && !f.learning {
		id, _ := f.m.Identity(false)
		if id.SessionID != "" && (f.opts.Project != "" || id.Project != "" || id.Cwd != "") {
			f.id = &id
		}
	}
	for _, tg := range f.t.targets {
		if err := tg.w.afterLine(f, tg); err != nil {
			return err
		}
	}
	return f.ctx.Err()
}

// end finishes a pass at the end of the file: the last batch of every
// record, which records every byte consumed.
func (f *fileImport) end() error {
	id, err := f.m.Identity(true)
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	if f.id == nil {
		f.id = &id
	}
	if f.learning {
		return nil
	}
	for _, tg := range f.t.targets {
		if err := tg.w.end(f, tg); err != nil {
			return err
		}
	}
	return f.ctx.Err()
}

// newTarget sets up a target the Mapper just made: on the facts pass, and
// for a target the facts say has no conversation, it writes nothing.
func (f *fileImport) newTarget(tg *Target) {
	if f.learning {
		tg.w.off()
		return
	}
	if f.known != nil {
		if _, ok := f.known.created[tg.Agent]; !ok {
			tg.w.off()
		}
	}
}

// created returns tg's creation time: the Mapper's, else the time of its
// first record that has one, else (at the end of the file) the file's
// modification time (Transcript.ModTime); the zero time while it is not
// known yet.
func (f *fileImport) created(tg *Target, eof bool) time.Time {
	if f.known != nil {
		return f.known.created[tg.Agent]
	}
	switch {
	case !tg.Created.IsZero():
		return tg.Created.UTC().Truncate(time.Microsecond)
	case !tg.w.firstTime.IsZero():
		return tg.w.firstTime
	case eof && !f.t.ModTime.IsZero():
		return f.t.ModTime.UTC().Truncate(time.Microsecond)
	case eof: // a source with no time at all
		return time.Now().UTC().Truncate(time.Microsecond)
	}
	return time.Time{}
}

// key returns tg's key, once the lines have named the session; ok is
// false until then. The error is the file's: a working directory that
// has no project key.
func (f *fileImport) key(tg *Target) (key recall.Key, ok bool, err error) {
	if f.id == nil {
		return recall.Key{}, false, nil
	}
	if !f.keyed {
		f.project = f.opts.Project
		if f.project == "" {
			f.project = f.id.Project
		}
		if f.project == "" {
			if f.project, err = ProjectKey(f.id.Cwd); err != nil {
				return recall.Key{}, false, fmt.Errorf("%s: %w", f.path, err)
			}
		}
		f.keyed = true
	}
	key = recall.Key{Project: f.project, Session: SessionID(f.tool, f.id.SessionID)}
	if tg.Agent != "" {
		key.Subpath = subpath(tg.Agent)
	}
	return key, true, nil
}

// cwd returns the folder tg records (MetaCwd): the main session's, when
// it goes to the project the transcript names.
func (f *fileImport) cwd(tg *Target) string {
	if f.opts.Project != "" || tg.Agent != "" {
		return ""
	}
	return f.id.Cwd
}

// reopen opens the pass's stream again, to read a prefix of it once more:
// an Opener's through a new Mapper, whose counts are dropped.
func (f *fileImport) reopen() (io.ReadCloser, error) {
	if o, ok := f.newMapper(f.path).(Opener); ok {
		return o.Open(&Transcript{Tool: f.tool, File: f.path, f: f})
	}
	return open(f.path, nil)
}
