package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/storeurl"
)

// envMirror names the replica `recall chat` mirrors to when --mirror is not
// given.
const envMirror = "RECALL_MIRROR"

func newMirrorCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mirror",
		Short: "Replicate the local sessions to a shared store, and check on it",
		Long: `A mirror keeps the local store as the source of truth and copies every
session, in the background, to another store: PostgreSQL or Redis for a team
dashboard, a second machine or a backup. 'recall chat --mirror URL' (or
RECALL_MIRROR) mirrors while you chat; a replica that is down never slows
the chat, and what it missed is sent when it returns.

The position of each session on each replica is kept beside the local store,
in <home>/mirror/<hash of the replica URL>/cursors.json. It is a cache: the
replica's own last seq is the authority, and copying is idempotent by seq.

Deletes stay local: 'recall rm' and 'recall gc' never remove anything from a
replica.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newMirrorStatusCmd(a), newMirrorSyncCmd(a), newMirrorForgetCmd(a))
	return cmd
}

func newMirrorStatusCmd(a *app) *cobra.Command {
	var (
		to                  string
		check, all, verbose bool
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show how far each replica lags behind, and its last errors",
		Long: `Show, for every replica this home has mirrored to (or the one --to names),
one line: how many sessions and entries it lacks and the last replication
error. --verbose lists the sessions behind or failing, --all every session.
The positions are those the last mirror saved; --check asks the replica
itself. Sessions the last mirror had still to check against the replica
after an outage are counted as "to check"; the next mirror checks them first.`,
		Example: `  recall mirror status
  recall mirror status --verbose
  recall mirror status --to postgres://db.internal/recall --check
  recall mirror status --all --json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if check && to == "" {
				return usageError("add --to URL: the replica to check", "--check needs --to")
			}
			ctx := cmd.Context()
			home, err := a.mirrorHome()
			if err != nil {
				return err
			}
			var dirs []string
			if to != "" {
				dirs = []string{mirror.StateDir(home, to)}
			} else if dirs, err = mirror.StateDirs(home); err != nil {
				return err
			}
			if len(dirs) == 0 {
				a.notef("no mirror has run from %s; start one with 'recall chat --mirror URL' or 'recall mirror sync --to URL --all'\n", home)
				return nil
			}
			st, err := a.rawStore(ctx)
			if err != nil {
				return err
			}
			var reports []mirrorReport
			for _, dir := range dirs {
				sum, sessions, err := mirror.ReadStatus(ctx, st, dir)
				if err != nil {
					return err
				}
				if sum.Replica == "" {
					sum.Replica = to
				}
				// again, for a name recorded under older, laxer rules
				sum.Replica = storeurl.Redact(sum.Replica)
				r := mirrorReport{StateDir: dir, Summary: sum, Sessions: sessions}
				if check {
					rep, err := a.checkReplica(ctx, st, to)
					if err != nil {
						return err
					}
					r.Check = &rep
				}
				reports = append(reports, r)
			}
			if a.json {
				for i := range reports {
					if !all {
						reports[i].Sessions = behind(reports[i].Sessions)
					}
					reports[i].Sessions = orEmpty(reports[i].Sessions)
				}
				return a.printJSON(reports)
			}
			for i, r := range reports {
				if i > 0 && (verbose || all) {
					a.printf("\n")
				}
				if err := a.printMirrorReport(r, all, verbose || all); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&to, "to", "", "show only the replica at this `URL`")
	f.BoolVar(&check, "check", false, "with --to: ask the replica for its positions instead of trusting the saved ones")
	f.BoolVarP(&all, "all", "a", false, "list every session, not only those behind or failing")
	f.BoolVarP(&verbose, "verbose", "v", false, "list the sessions behind or failing under each replica's line")
	return cmd
}

// mirrorReport is the status of one replica, as `mirror status --json`
// prints it.
type mirrorReport struct {
	StateDir string                 `json:"state_dir"`
	Summary  mirror.Summary         `json:"summary"`
	Sessions []mirror.SessionStatus `json:"sessions"`
	// Check is what the replica itself lacks (--check).
	Check *mirror.SyncReport `json:"check,omitempty"`
}

// behind keeps the sessions that lag, report an error or are owed a check.
func behind(sessions []mirror.SessionStatus) []mirror.SessionStatus {
	var out []mirror.SessionStatus
	for _, s := range sessions {
		if s.Lag > 0 || s.LastError != "" || s.Pending {
			out = append(out, s)
		}
	}
	return out
}

// checkReplica counts what the replica at url lacks, from its own
// positions.
func (a *app) checkReplica(ctx context.Context, st recall.Store, url string) (mirror.SyncReport, error) {
	replica, err := openURL(ctx, url)
	if err != nil {
		return mirror.SyncReport{}, err
	}
	defer replica.Close()
	rep, err := mirror.Sync(ctx, st, replica, mirror.SyncOptions{All: true, DryRun: true})
	if err != nil && len(rep.Failed) == 0 {
		return rep, err // the replica could not be read at all
	}
	return rep, nil
}

// printMirrorReport prints a replica's status: one line, or with verbose
// the lines of its state and the sessions behind or failing (every one
// with all).
func (a *app) printMirrorReport(r mirrorReport, all, verbose bool) error {
	now := time.Now()
	s := r.Summary
	name := s.Replica
	if name == "" {
		name = "(unnamed replica)"
	}
	saved := "never saved"
	if !s.Saved.IsZero() {
		saved = "positions saved " + age.Ago(s.Saved, now)
	}
	if !verbose {
		line := fmt.Sprintf("mirror to %s: %s (%s)", name, mirrorCounts(s), saved)
		if s.LastError != "" {
			line += fmt.Sprintf("; last error %s: %s", age.Ago(s.LastErrorAt, now), clip(s.LastError, 120))
		}
		a.printf("%s\n", line)
		a.printReplicaCheck(r.Check)
		return nil
	}
	a.printf("mirror to %s (%s)\n", name, saved)
	a.printf("  %s\n", mirrorCounts(s))
	if s.LastError != "" {
		a.printf("  last error %s: %s\n", age.Ago(s.LastErrorAt, now), s.LastError)
	}
	a.printReplicaCheck(r.Check)
	rows := r.Sessions
	if !all {
		rows = behind(rows)
	}
	if len(rows) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  SESSION\tPRIMARY\tREPLICATED\tLAG\tLAST ERROR")
	for _, ss := range rows {
		msg := "-"
		if ss.LastError != "" {
			msg = age.Ago(ss.LastErrorAt, now) + ": " + ss.LastError
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s\n", ss.Key, ss.PrimarySeq, ss.ReplicatedSeq, ss.Lag, msg)
	}
	return tw.Flush()
}

// mirrorCounts says how many sessions a replica has and lacks.
func mirrorCounts(s mirror.Summary) string {
	line := count(s.Sessions, "session")
	switch {
	case s.Behind == 0 && s.Unchecked == 0:
		line += ", all replicated"
	case s.Behind > 0:
		line += fmt.Sprintf(", %d behind by %s", s.Behind, entries(s.Lag))
	}
	if s.Unchecked > 0 {
		line += fmt.Sprintf(", %d to check against the replica after an outage", s.Unchecked)
	}
	return line
}

// printReplicaCheck prints what --check found the replica lacks.
func (a *app) printReplicaCheck(c *mirror.SyncReport) {
	if c == nil {
		return
	}
	a.printf("  replica check: %d of %d sessions complete, %d lack %s, %d failed\n",
		c.UpToDate, c.Sessions, c.Copied, entries(int64(c.Entries)), len(c.Failed))
	for _, f := range c.Failed {
		a.printf("    %s: %s\n", f.Key, f.Error)
	}
}

func newMirrorSyncCmd(a *app) *cobra.Command {
	var (
		to, proj    string
		all, dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "sync --to URL (--project DIR | --all)",
		Short: "Copy every session the replica lacks (resumable)",
		Long: `Copy to the store at --to every entry of the local sessions that it lacks:
the sessions of one project (--project, a directory or a project key from
'recall projects') or of all of them (--all), archived sessions and subagent
records included. The replica's own positions decide what is missing, so
an interrupted sync is resumed by running it again. A progress bar shows on
a terminal; otherwise progress is printed as plain lines.`,
		Example: `  recall mirror sync --to postgres://db.internal/recall --all
  recall mirror sync --to redis://cache:6379/0 --project . --dry-run`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case to == "":
				return usageError("name the replica: --to postgres://... or redis://...", "mirror sync needs --to")
			case all == (proj != ""):
				return usageError("choose --project DIR or --all", "mirror sync needs exactly one of --project and --all")
			}
			ctx := cmd.Context()
			var projectKey string
			if proj != "" {
				k, err := projectArg(proj)
				if err != nil {
					return err
				}
				projectKey = k
			}
			home, err := a.mirrorHome()
			if err != nil {
				return err
			}
			st, err := a.rawStore(ctx) // an encrypted store's replica gets its sealed log
			if err != nil {
				return err
			}
			replica, err := openURL(ctx, to)
			if err != nil {
				return err
			}
			defer replica.Close()
			bar := newProgress(a.stderr, isTerminal(a.stderr))
			rep, err := mirror.Sync(ctx, st, replica, mirror.SyncOptions{
				Project:     projectKey,
				All:         all,
				DryRun:      dryRun,
				StateDir:    mirror.StateDir(home, to),
				ReplicaName: storeurl.Redact(to),
				Progress:    bar.update,
			})
			bar.done()
			if a.json {
				if perr := a.printJSON(rep); perr != nil {
					return perr
				}
			} else {
				a.printSyncReport(rep, dryRun)
			}
			if err != nil {
				if errors.Is(err, mirror.ErrDiverged) {
					return withHint(err, "the replica holds a different log for these sessions (removed and re-created locally, or written by someone else); remove them from the replica to copy them again")
				}
				return withHint(err, "run the same command again to resume; what was copied stays copied")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&to, "to", "", "the replica store `URL` (postgres://, redis://, sqlite://, file://)")
	f.StringVar(&proj, "project", "", "copy the sessions of this project `DIR` (or project key)")
	f.BoolVarP(&all, "all", "a", false, "copy the sessions of every project")
	f.BoolVarP(&dryRun, "dry-run", "n", false, "only report what the replica lacks")
	return cmd
}

func newMirrorForgetCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "forget [URL|NAME]",
		Short: "Drop the saved state of a replica",
		Long: `Drop the positions this home keeps for a replica (its state directory under
<home>/mirror), named by its URL or by the name 'recall mirror status' shows;
with no argument, the only replica there is. The replica itself is not
touched, and nothing is lost: a later mirror or sync to it finds every
position from the replica again. Use it for a replica that is gone for good.`,
		Example: `  recall mirror forget postgres://db.internal/recall
  recall mirror forget`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			home, err := a.mirrorHome()
			if err != nil {
				return err
			}
			dirs, err := mirror.StateDirs(home)
			if err != nil {
				return err
			}
			var match []string
			for _, d := range dirs {
				name := mirror.ReplicaName(d)
				if len(argv) == 0 || d == mirror.StateDir(home, argv[0]) || name == argv[0] || name == storeurl.Redact(argv[0]) {
					match = append(match, d)
				}
			}
			switch {
			case len(match) == 0 && len(argv) == 0:
				a.notef("no mirror has run from %s: nothing to forget\n", home)
				return nil
			case len(match) == 0:
				return usageError("'recall mirror status' lists the replicas this home knows", "no replica %q has state in %s", storeurl.Redact(argv[0]), home)
			case len(match) > 1:
				var names []string
				for _, d := range match {
					names = append(names, mirror.ReplicaName(d))
				}
				return usageError("name one: recall mirror forget URL", "%d replicas have state here (%s)", len(match), strings.Join(names, ", "))
			}
			name, err := mirror.Forget(match[0])
			if err != nil {
				return err
			}
			if name == "" {
				name = match[0]
			}
			a.notef("forgot the replica %s: its positions in %s are removed; the replica is untouched, and a later mirror to it finds its positions again\n", name, match[0])
			return nil
		},
	}
}

func (a *app) printSyncReport(rep mirror.SyncReport, dryRun bool) {
	n := entries(int64(rep.Entries))
	if dryRun {
		a.printf("%d of %d sessions up to date; %d lack %s\n", rep.UpToDate, rep.Sessions, rep.Copied, n)
	} else {
		a.printf("copied %s into %s; %d already up to date\n", n, count(rep.Copied, "session"), rep.UpToDate)
	}
	for _, f := range rep.Failed {
		a.printf("failed %s: %s\n", f.Key, f.Error)
	}
}

// projectArg turns --project into a project key: an existing directory is
// keyed as everywhere else, anything else must already be a project key.
func projectArg(p string) (string, error) {
	if fi, err := os.Stat(p); err == nil && fi.IsDir() {
		return recall.ProjectKey(p)
	}
	if err := (recall.Key{Project: p, Session: "x"}).Validate(); err != nil {
		return "", usageError("--project takes a directory or a key that 'recall projects' lists", "project %q: not a directory nor a project key", p)
	}
	return p, nil
}

// mirrorHome is the directory that holds the mirror state: --home, or the
// file store's default home ($RECALL_HOME, else ~/.recall), also when the
// local store is named by --store.
func (a *app) mirrorHome() (string, error) {
	if a.home != "" {
		return a.home, nil
	}
	h, err := filestore.DefaultHome()
	if err != nil {
		return "", withHint(err, "set --home or RECALL_HOME")
	}
	return h, nil
}

// entries renders a number of entries: "1 entry", "2 entries".
func entries(n int64) string {
	if n == 1 {
		return "1 entry"
	}
	return fmt.Sprintf("%d entries", n)
}

// progress draws Sync's progress on w: a bar redrawn in place on a
// terminal, plain lines at every tenth of the way otherwise.
type progress struct {
	w        io.Writer
	terminal bool
	last     int // the last tenth printed as a plain line
	drawn    bool
}

func newProgress(w io.Writer, terminal bool) *progress {
	return &progress{w: w, terminal: terminal, last: -1}
}

func (p *progress) update(done, total int, key recall.Key) {
	if total == 0 {
		return
	}
	if !p.terminal {
		if tenth := done * 10 / total; tenth != p.last {
			p.last = tenth
			fmt.Fprintf(p.w, "synced %d/%d sessions\n", done, total)
		}
		return
	}
	const width = 30
	fill := done * width / total
	bar := strings.Repeat("=", fill) + strings.Repeat(" ", width-fill)
	name := key.String()
	if len(name) > 40 {
		name = "..." + name[len(name)-37:]
	}
	fmt.Fprintf(p.w, "\r[%s] %d/%d %-40s", bar, done, total, name)
	p.drawn = true
}

func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}

// useMirror turns on mirroring for this command line when url (the
// --mirror flag) or RECALL_MIRROR names a replica: the store the command
// uses becomes a mirror over the local store, whose Close flushes what it
// can in a few seconds. A replica that cannot be reached now does not stop
// the command: it is opened again in the background until it answers.
func (a *app) useMirror(ctx context.Context, url string) error {
	if url == "" {
		url = os.Getenv(envMirror)
	}
	if url == "" {
		return nil
	}
	home, err := a.mirrorHome()
	if err != nil {
		return err
	}
	// The mirror goes under the encryption, so the replica receives the
	// sealed log.
	if _, err := a.store(ctx); err != nil {
		return err
	}
	primary := a.raw
	if scheme, _, ok := strings.Cut(url, "://"); !ok || !slices.Contains(storeurl.Schemes(), scheme) {
		return usageError("see 'recall --help' for the store URLs", "mirror %s: not a store URL (%s)", storeurl.Redact(url), strings.Join(storeurl.Schemes(), ", "))
	}
	// The replica is opened by the mirror's workers, in the background: a
	// server that is down or silent costs the chat nothing (see
	// cliMirror.Close for the exit).
	replica := mirror.Lazy(func(ctx context.Context) (recall.Store, error) { return openURL(ctx, url) })
	m, err := mirror.New(primary, replica, mirror.Options{
		StateDir:    mirror.StateDir(home, url),
		ReplicaName: storeurl.Redact(url),
	})
	if err != nil {
		replica.Close()
		return err
	}
	st, err := a.encrypted(ctx, &cliMirror{Store: m, warn: a.stderr, started: time.Now()})
	if err != nil {
		m.Close()
		return err
	}
	a.st, a.raw = st, m
	return nil
}

// closeBudget bounds the flush at the exit of a command that mirrors, and
// firstAnswer how long of it a replica that has confirmed nothing yet in
// this process gets at most: a replica that answers at all answers within
// it. A command that ran less than five times as long gives it a fifth
// of its run (firstAnswerShare), so a silent replica costs any command at
// most a fifth more time: a chat with a model's answer of seconds gives
// it the whole 250 ms, a reply served from a cache a few milliseconds.
const (
	closeBudget      = 5 * time.Second
	firstAnswer      = 250 * time.Millisecond
	firstAnswerShare = 5
)

// exitWait is how long a command that ran for ran waits at its exit for a
// replica that has confirmed nothing yet.
func exitWait(ran time.Duration) time.Duration {
	return max(0, min(firstAnswer, ran/firstAnswerShare))
}

// cliMirror is the mirror a command line uses. Its Close reports a replica
// left behind as a warning, not a failure: the sessions are saved locally,
// and the next mirror sends the rest.
type cliMirror struct {
	*mirror.Store
	warn    io.Writer
	started time.Time // when the command began to use it
}

func (c *cliMirror) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeBudget)
	defer cancel()
	if c.Summary(ctx).LastReplicated.IsZero() {
		// The replica has not confirmed anything in this process: it may
		// be silent (a connection that hangs). Give it a moment to answer
		// rather than the whole budget; what it lacks is sent next time.
		wait := exitWait(time.Since(c.started))
		go func() {
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case <-t.C:
				if c.Summary(ctx).LastReplicated.IsZero() {
					cancel()
				}
			case <-ctx.Done():
			}
		}()
	}
	err := c.Store.Shutdown(ctx)
	if !errors.Is(err, mirror.ErrNotFlushed) {
		return err
	}
	sum := c.Summary(context.Background())
	fmt.Fprintf(c.warn, "recall: warning: the mirror %s is %s behind; they are saved locally and sent by the next 'recall chat --mirror' or 'recall mirror sync'\n",
		storeurl.Redact(sum.Replica), entries(sum.Lag))
	var rest []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !errors.Is(e, mirror.ErrNotFlushed) {
				rest = append(rest, e)
			}
		}
	}
	return errors.Join(rest...)
}
