package mirror

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/recallkit/recall"
)

// SyncOptions select what Sync copies.
type SyncOptions struct {
	// Project limits the copy to one project. Exactly one of Project and
	// All must be set.
	Project string
	// All copies every project.
	All bool
	// DryRun only reports what is missing, without writing to dst.
	DryRun bool
	// BatchSize is the number of entries per Import. Default 256.
	BatchSize int
	// StateDir, when set, is the state directory of a mirror from src to
	// dst (see Options.StateDir): the positions Sync confirms are written
	// to its cursor file, so a mirror started later, and ReadStatus, know
	// them. Default "": no cursor file is touched.
	StateDir string
	// ReplicaName is recorded in the cursor file with StateDir.
	ReplicaName string
	// Progress, when set, is called after each session with the number of
	// sessions done, the total, and the session just done.
	Progress func(done, total int, key recall.Key)
}

// SyncReport is what Sync did.
type SyncReport struct {
	// Sessions is the number of session records examined.
	Sessions int `json:"sessions"`
	// UpToDate counts those dst already held in full.
	UpToDate int `json:"up_to_date"`
	// Copied counts those that got entries (or lack entries, with DryRun).
	Copied int `json:"copied"`
	// Entries is the number of entries copied (or missing, with DryRun).
	Entries int `json:"entries"`
	// Failed lists the sessions that could not be brought up to date.
	Failed []SyncFailure `json:"failed,omitempty"`
}

// SyncFailure is a session Sync could not bring up to date.
type SyncFailure struct {
	Key   recall.Key `json:"key"`
	Error string     `json:"error"`
}

// Sync copies to dst every entry of src that dst lacks, for the sessions of
// opts.Project or of every project (opts.All): main sessions, archived ones
// and subagent records. It is the one-shot backfill of `recall mirror
// sync`. Positions are read from dst itself (its LastSeq of each session,
// checked against src at that seq), and Import is idempotent by seq, so an
// interrupted Sync is resumed by running it again: it copies only what is
// still missing.
//
// A session that fails (dst is down, ErrDiverged) is reported in
// SyncReport.Failed, and the others go on; the error then wraps the
// failures. A failure to enumerate src, or ctx ending, stops Sync. Sync
// closes neither store.
func Sync(ctx context.Context, src, dst recall.Store, opts SyncOptions) (SyncReport, error) {
	var rep SyncReport
	switch {
	case opts.All && opts.Project != "":
		return rep, fmt.Errorf("mirror: sync: %w: both a project and all projects given", recall.ErrInvalidKey)
	case !opts.All && opts.Project == "":
		return rep, fmt.Errorf("mirror: sync: %w: give a project or all projects", recall.ErrInvalidKey)
	case Reserved(opts.Project):
		return rep, fmt.Errorf("mirror: sync: %w: %s is a server's reserved project, never copied", recall.ErrInvalidKey, opts.Project)
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 256
	}
	var state *stateFile
	if opts.StateDir != "" && !opts.DryRun {
		var err error
		if state, err = openStateFile(opts.StateDir); err != nil {
			return rep, err
		}
	}
	var metas []recall.Meta
	if err := eachSession(ctx, src, opts.Project, func(m recall.Meta) error {
		metas = append(metas, m)
		return ctx.Err()
	}); err != nil {
		return rep, fmt.Errorf("mirror: sync: %w", err)
	}

	c := copier{src: src, dst: dst, batch: opts.BatchSize}
	positions := map[recall.Key]savedSession{}
	var errs []error
	for i, m := range metas {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		rep.Sessions++
		pos, n, err := syncOne(ctx, c, m, opts.DryRun)
		switch {
		case errors.Is(err, errGone):
			// removed from src since it was listed
		case err != nil:
			rep.Failed = append(rep.Failed, SyncFailure{Key: m.Key, Error: err.Error()})
			errs = append(errs, err)
			positions[m.Key] = savedSession{Key: m.Key, Seq: pos, LastError: err.Error(), LastErrorAt: time.Now().UTC()}
		case n == 0:
			rep.UpToDate++
			positions[m.Key] = savedSession{Key: m.Key, Seq: pos}
		default:
			rep.Copied++
			rep.Entries += n
			positions[m.Key] = savedSession{Key: m.Key, Seq: pos}
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(metas), m.Key)
		}
	}
	if state != nil {
		if err := mergeState(state, opts.ReplicaName, positions); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("mirror: sync: %d of %d sessions failed: %w", len(rep.Failed), rep.Sessions, errors.Join(errs...))
	}
	return rep, nil
}

// syncOne brings one session of dst up to src's meta, or, with dryRun,
// counts what dst lacks. It returns dst's position and the entries copied
// (or missing).
func syncOne(ctx context.Context, c copier, m recall.Meta, dryRun bool) (int64, int, error) {
	// guess -1: the tip is always compared, since Sync trusts no cursor.
	pos, err := c.position(ctx, m.Key, -1)
	if errors.Is(err, errHeadless) {
		// dst lacks the start of the log: its copy is replaced whole.
		if dryRun {
			return 0, int(m.LastSeq), nil
		}
		if err := c.remove(ctx, m.Key); err != nil {
			return pos, 0, err
		}
		pos, err = 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	if dryRun {
		return pos, int(max(0, m.LastSeq-pos)), nil
	}
	return c.sync(ctx, m.Key, pos, true, nil)
}

// mergeState writes positions into the cursor file of state, over what it
// holds.
func mergeState(state *stateFile, replica string, positions map[recall.Key]savedSession) error {
	doc, disk, err := state.read()
	if err != nil && !errors.Is(err, recall.ErrCorrupt) {
		return err
	}
	doc.Sessions = doc.Sessions[:0]
	if replica != "" {
		doc.Replica = replica
	}
	doc.Saved = time.Now().UTC()
	for k, ss := range positions {
		if old, ok := disk[k]; ok && ss.LastError != "" {
			// A failed session's position is not known, and a removal
			// a mirror owes it is still owed.
			ss.Seq, ss.Remove = old.Seq, old.Remove
		}
		disk[k] = ss
	}
	for _, ss := range disk {
		doc.Sessions = append(doc.Sessions, ss)
	}
	sortSaved(doc.Sessions)
	return state.write(doc)
}
