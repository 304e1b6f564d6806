package mirror

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/recallkit/recall"
)

// TwoWayOptions select what TwoWay syncs.
type TwoWayOptions struct {
	// Projects are the projects to sync, each a local project and its key
	// on the remote store (the same repository may have another path, so
	// another key, on another machine). Reserved projects are refused.
	Projects []ProjectPair
	// DryRun only reports what a sync would do, writing nothing.
	DryRun bool
	// StateDir, when set, is where the positions both stores agreed on
	// are kept (a cursor file as Options.StateDir's), so the next run
	// skips the sessions neither side has written to since without a
	// call to either store. It is a cache: without it every session
	// present on both sides is compared. Default "": none.
	StateDir string
	// RemoteName is recorded in the cursor file with StateDir.
	RemoteName string
	// Host names this machine in the title of a fork it makes ("TITLE
	// (from HOST)"). Default: os.Hostname.
	Host string
	// BatchSize is the number of entries per Import. Default 256.
	BatchSize int
	// Progress, when set, is called after each session with the number of
	// sessions done, the total, and the local key of the session.
	Progress func(done, total int, key recall.Key)
}

// ProjectPair is one project as each store keys it.
type ProjectPair struct {
	Local  string `json:"local"`
	Remote string `json:"remote"`
}

// TwoWayReport is what TwoWay did (or, with DryRun, would do).
type TwoWayReport struct {
	// Sessions is the number of session records examined.
	Sessions int `json:"sessions"`
	// UpToDate counts those both stores held alike.
	UpToDate int `json:"up_to_date"`
	// Pushed counts the sessions the remote got entries of, and
	// EntriesPushed the entries.
	Pushed        int `json:"pushed"`
	EntriesPushed int `json:"entries_pushed"`
	// Pulled counts the sessions the local store got entries of, and
	// EntriesPulled the entries.
	Pulled        int `json:"pulled"`
	EntriesPulled int `json:"entries_pulled"`
	// Forks lists the sessions continued on both sides, whose local
	// continuation became a fork.
	Forks []ForkReport `json:"forks,omitempty"`
	// Failed lists the sessions that could not be synced.
	Failed []SyncFailure `json:"failed,omitempty"`
}

// ForkReport is one divergent session and the fork its local continuation
// became.
type ForkReport struct {
	// Session is the session's local key; it now holds the remote's log.
	Session recall.Key `json:"session"`
	// Fork is the local key of the fork (the remote's is in the remote
	// project); it holds the common history and the local continuation.
	Fork recall.Key `json:"fork"`
	// At is the last seq the two continuations had in common.
	At int64 `json:"at"`
}

// TwoWay syncs the sessions of opts.Projects between a local store and a
// remote one, both ways: a session only one side holds is copied to the
// other; a session one side holds more of is completed on the other; a
// session both sides continued differently since their common seq (the
// same session written on two machines between syncs) keeps both
// continuations: the remote's stays the session, and the local one
// becomes a fork of the common history (see fork.go), on both stores.
// Every entry either store held before is held by both after.
//
// Copies are Imports, idempotent by seq, and each step is durable before
// the next, so a TwoWay killed at any instant is finished by running it
// again, which copies nothing twice and makes no second fork.
//
// A session that fails is reported in TwoWayReport.Failed and the others
// go on; the error then wraps the failures. A failure to list either
// store, or ctx ending, stops TwoWay. TwoWay closes neither store.
func TwoWay(ctx context.Context, local, remote recall.Store, opts TwoWayOptions) (TwoWayReport, error) {
	var rep TwoWayReport
	for _, p := range opts.Projects {
		if p.Local == "" || p.Remote == "" || Reserved(p.Local) || Reserved(p.Remote) {
			return rep, fmt.Errorf("mirror: two-way sync: %w: project %q to %q: not a project to sync", recall.ErrInvalidKey, p.Local, p.Remote)
		}
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = 256
	}
	if opts.Host == "" {
		opts.Host, _ = os.Hostname()
	}
	t := &twoWay{local: local, remote: remote, opts: opts, saved: map[recall.Key]savedSession{},
		remoteOf: map[string]string{}, localOf: map[string]string{}}
	for _, p := range opts.Projects {
		t.remoteOf[p.Local], t.localOf[p.Remote] = p.Remote, p.Local
	}
	var state *stateFile
	if opts.StateDir != "" {
		var err error
		if state, err = openStateFile(opts.StateDir); err != nil {
			return rep, err
		}
		if _, t.saved, err = state.read(); err != nil && !errors.Is(err, recall.ErrCorrupt) {
			return rep, err
		}
	}
	var work []pairing
	for _, p := range opts.Projects {
		w, err := t.pair(ctx, p)
		if err != nil {
			return rep, fmt.Errorf("mirror: two-way sync: %w", err)
		}
		work = append(work, w...)
	}
	positions := map[recall.Key]savedSession{}
	var errs []error
	for i, w := range work {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		rep.Sessions++
		pos, err := t.one(ctx, w, &rep)
		if err != nil {
			rep.Failed = append(rep.Failed, SyncFailure{Key: w.lk, Error: err.Error()})
			errs = append(errs, err)
		} else if pos > 0 {
			positions[w.lk] = savedSession{Key: w.lk, Seq: pos}
		}
		if opts.Progress != nil {
			opts.Progress(i+1, len(work), w.lk)
		}
	}
	if state != nil && !opts.DryRun {
		if err := mergeState(state, opts.RemoteName, positions); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("mirror: two-way sync: %d of %d sessions failed: %w", len(rep.Failed), rep.Sessions, errors.Join(errs...))
	}
	return rep, nil
}

// twoWay is one run of TwoWay.
type twoWay struct {
	local, remote recall.Store
	opts          TwoWayOptions
	// saved are the positions of the last run (local keys).
	saved map[recall.Key]savedSession
	// remoteOf and localOf map the projects of opts.Projects.
	remoteOf, localOf map[string]string
}

// toRemote is the remote's key of the local project p: its pair's, or p
// when it is not one of the synced projects.
func (t *twoWay) toRemote(p string) string {
	if r, ok := t.remoteOf[p]; ok {
		return r
	}
	return p
}

// toLocal is toRemote backwards.
func (t *twoWay) toLocal(p string) string {
	if l, ok := t.localOf[p]; ok {
		return l
	}
	return p
}

// same reports whether a, a local entry, and b, the remote's entry of the
// same seq, are one entry, the origin of a fork entry compared as each
// store keys it (see moveOrigins).
func (t *twoWay) same(a, b recall.Entry) bool {
	return sameEntry(a, moveOrigins([]recall.Entry{b}, t.toLocal)[0])
}

// pairing is one session record as each store keys it, with what each
// holds of it (nil: nothing).
type pairing struct {
	lk, rk recall.Key
	lm, rm *recall.Meta
}

// pair lists the sessions of a project pair on both stores and pairs them
// by session ID and subpath. Subagent records come first: a main session
// replaced by its remote log (after a fork) takes its subagent records
// with it, so they must be on the remote by then.
func (t *twoWay) pair(ctx context.Context, p ProjectPair) ([]pairing, error) {
	byID := map[recall.Key]*pairing{}
	var order []recall.Key
	add := func(m recall.Meta, remote bool) error {
		id := recall.Key{Session: m.Key.Session, Subpath: m.Key.Subpath}
		w := byID[id]
		if w == nil {
			w = &pairing{lk: id, rk: id}
			w.lk.Project, w.rk.Project = p.Local, p.Remote
			byID[id] = w
			order = append(order, id)
		}
		if remote {
			w.rm = &m
		} else {
			w.lm = &m
		}
		return ctx.Err()
	}
	if err := eachSession(ctx, t.local, p.Local, func(m recall.Meta) error { return add(m, false) }); err != nil {
		return nil, err
	}
	if err := eachSession(ctx, t.remote, p.Remote, func(m recall.Meta) error { return add(m, true) }); err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	var subs, mains []pairing
	for _, id := range order {
		if id.Subpath != "" {
			subs = append(subs, *byID[id])
		} else {
			mains = append(mains, *byID[id])
		}
	}
	return append(subs, mains...), nil
}

// push copies to the remote what it lacks of w after seq from, and
// returns the last seq copied.
func (t *twoWay) push(ctx context.Context, w pairing, from int64, rep *TwoWayReport) (int64, error) {
	last := w.lm.LastSeq
	if !t.opts.DryRun {
		c := copier{src: t.local, dst: t.remote, batch: t.opts.BatchSize, to: constKey(w.rk), origins: t.toRemote}
		var n int
		var err error
		if last, n, err = c.copy(ctx, w.lk, from, nil); err != nil {
			return from, err
		}
		rep.EntriesPushed += n
	} else {
		rep.EntriesPushed += int(last - from)
	}
	rep.Pushed++
	return last, nil
}

// pull copies to the local store what it lacks of w after seq from.
func (t *twoWay) pull(ctx context.Context, w pairing, from int64, rep *TwoWayReport) (int64, error) {
	last := w.rm.LastSeq
	if !t.opts.DryRun {
		c := copier{src: t.remote, dst: t.local, batch: t.opts.BatchSize, to: constKey(w.lk), origins: t.toLocal}
		var n int
		var err error
		if last, n, err = c.copy(ctx, w.rk, from, nil); err != nil {
			return from, err
		}
		rep.EntriesPulled += n
	} else {
		rep.EntriesPulled += int(last - from)
	}
	rep.Pulled++
	return last, nil
}

// constKey maps every key to k: a copier copies one session.
func constKey(k recall.Key) func(recall.Key) recall.Key {
	return func(recall.Key) recall.Key { return k }
}

// one syncs one session and returns the position both stores hold alike
// afterwards (0: none to record).
func (t *twoWay) one(ctx context.Context, w pairing, rep *TwoWayReport) (int64, error) {
	switch {
	case w.rm == nil:
		return t.push(ctx, w, 0, rep)
	case w.lm == nil:
		return t.pull(ctx, w, 0, rep)
	}
	lLast, rLast := w.lm.LastSeq, w.rm.LastSeq
	hint := t.saved[w.lk].Seq
	if lLast == rLast && hint == lLast {
		rep.UpToDate++ // neither side wrote since the last sync
		return lLast, nil
	}
	common, err := t.common(ctx, w, min(lLast, rLast), hint)
	if err != nil {
		return 0, err
	}
	switch {
	case common == lLast && common == rLast:
		rep.UpToDate++
		return common, nil
	case common == lLast:
		return t.pull(ctx, w, common, rep)
	case common == rLast:
		return t.push(ctx, w, common, rep)
	}
	return t.diverged(ctx, w, common, rep)
}

// common returns the last seq up to which the two logs of w hold the same
// entries, at most hi. Logs are append-only, so equal entries at a seq
// mean equal logs up to it, and the answer is found by bisection; hint,
// the position of the last run, is tried first.
func (t *twoWay) common(ctx context.Context, w pairing, hi, hint int64) (int64, error) {
	if hi <= 0 {
		return 0, nil
	}
	eq := func(seq int64) (bool, error) {
		a, err := entryAt(ctx, t.local, w.lk, seq)
		if err != nil {
			return false, err
		}
		b, err := entryAt(ctx, t.remote, w.rk, seq)
		if err != nil {
			return false, fromReplica(err)
		}
		return a != nil && b != nil && t.same(*a, *b), nil
	}
	same, err := eq(hi)
	if err != nil || same {
		return hi, err
	}
	lo := int64(0) // eq(lo) holds (vacuously at 0), eq(hi) does not
	if hint > 0 && hint < hi {
		if same, err := eq(hint); err != nil {
			return 0, err
		} else if same {
			lo = hint
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		same, err := eq(mid)
		if err != nil {
			return 0, err
		}
		if same {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// entryAt returns key's entry at seq, or nil when the log does not hold
// that seq (it was purged below it).
func entryAt(ctx context.Context, st recall.Store, key recall.Key, seq int64) (*recall.Entry, error) {
	es, err := st.Entries(ctx, key, seq-1, 1)
	if err != nil {
		return nil, fmt.Errorf("read %s at seq %d: %w", key, seq, err)
	}
	if len(es) == 0 || es[0].Seq != seq {
		return nil, nil
	}
	return &es[0], nil
}

// forkTime is the time stamped on the entries a fork adds; a variable so
// that tests can fix it.
var forkTime = func() time.Time { return time.Now().UTC() }
