package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/age"
	"github.com/recallkit/recall/retention"
)

// gcFlags are the flags of recall gc.
type gcFlags struct {
	olderThan   string
	olderSet    bool // --older-than was given
	grace       string
	dryRun, yes bool
	all         bool
	dir         string
}

func newGcCmd(a *app) *cobra.Command {
	var f gcFlags
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Move sessions not updated for a while to the trash, and empty old trash",
		Long: `Move the sessions of this project (every project with --all) that have
not been updated for --older-than (default 30d) to the trash, from where
'recall trash restore ID' brings one back; and delete for good the
sessions that have been in the trash for longer than --grace (default
30d). Pinned sessions are never moved or deleted, and --all leaves the
service's own projects (_server.*) alone. Ages take y, w, d, h, m and s
units: 1y, 30d, 12h, 1d12h, 90m.

In a terminal gc lists what it would move and asks (y/N); --yes skips the
question. Without a terminal there is nobody to ask, so gc needs --yes (or
--dry-run, which only reports).`,
		Example: `  recall gc --dry-run
  recall gc --older-than 90d
  recall gc --all --older-than 1y --yes`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.olderSet = cmd.Flags().Changed("older-than")
			return a.gc(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.olderThan, "older-than", "30d", "move sessions not updated for this long to the trash (y, w, d, h, m, s); without it, the retention policy decides when the store has one")
	fl.StringVar(&f.grace, "grace", "30d", "delete for good what has been in the trash this long")
	fl.BoolVarP(&f.dryRun, "dry-run", "n", false, "only report what would be removed")
	fl.BoolVarP(&f.yes, "yes", "y", false, "go ahead without asking")
	fl.BoolVarP(&f.all, "all", "a", false, "clean up every project, not only this one")
	fl.StringVar(&f.dir, "project", "", "clean up the project of this `DIR` (default: the working directory)")
	return cmd
}

func (a *app) gc(ctx context.Context, f gcFlags) error {
	olderThan, err := age.Parse(f.olderThan)
	if err != nil {
		return usageError("--older-than takes an age such as 30d, 12h or 1y", "%v", err)
	}
	grace, err := age.Parse(f.grace)
	if err != nil {
		return usageError("--grace takes an age such as 30d, 12h or 1y", "%v", err)
	}
	if f.all && f.dir != "" {
		return usageError("use one of them", "--all and --project both choose the projects")
	}
	var projects []string
	if !f.all {
		p, err := project(f.dir)
		if err != nil {
			return err
		}
		projects = []string{p}
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	if f.all {
		ps, err := recall.Projects(ctx, st)
		if err != nil {
			return fmt.Errorf("read projects: %w", err)
		}
		for _, p := range ps {
			if !reservedProject(p.Project) {
				projects = append(projects, p.Project)
			}
		}
	}
	cutoff := time.Now().Add(-olderThan)
	// First what would go, then (after the question) the deletion, with
	// the same cutoff: a session updated in between stays. Without
	// --older-than, the store's retention policy says what goes, when it
	// has one.
	sweep := func(dry bool) (recall.CleanupReport, error) { return cleanup(ctx, st, projects, cutoff, dry) }
	what := "not updated for " + f.olderThan
	if !f.olderSet {
		p, err := retention.Load(ctx, st)
		if err != nil {
			return err
		}
		if !p.IsZero() {
			now := time.Now()
			sweep = func(dry bool) (recall.CleanupReport, error) { return applyPolicy(ctx, st, projects, p, now, dry) }
			what = "past the retention policy (" + p.String() + ")"
		}
	}
	plan, err := sweep(true)
	if err != nil {
		return err
	}
	rep := plan
	if !f.dryRun && len(plan.Removed) > 0 {
		ok, err := a.confirmRemoval("gc", plan.Removed, f.yes, false)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if rep, err = sweep(false); err != nil {
			return err
		}
	}
	purged, err := emptyTrash(ctx, st, projects, time.Now().Add(-grace), f.dryRun)
	if err != nil {
		return err
	}
	return a.printGc(f, what, rep, purged)
}

// printGc prints what gc moved to the trash (rep, chosen by what) and
// deleted from it (purged), or would with --dry-run.
func (a *app) printGc(f gcFlags, what string, rep, purged recall.CleanupReport) error {
	if a.json {
		return a.printJSON(struct {
			DryRun bool `json:"dry_run"`
			sessionsJSON
			KeptPinned int           `json:"kept_pinned"`
			Purged     []sessionJSON `json:"purged"`
		}{f.dryRun, listJSON(rep.Removed, ""), rep.Kept, listJSON(purged.Removed, "").Sessions})
	}
	verb, pverb := "moved to the trash", "deleted for good"
	if f.dryRun {
		verb, pverb = "would move to the trash", "would delete for good"
	}
	now := time.Now()
	for _, m := range rep.Removed {
		a.printf("%s %s, updated %s\n", verb, describe(m), age.Ago(m.Updated, now))
	}
	scope := "in this project"
	if f.all {
		scope = "in every project"
	}
	summary := fmt.Sprintf("%s %s %s %s", verb, count(len(rep.Removed), "session"), scope, what)
	if rep.Kept > 0 {
		summary += fmt.Sprintf("; kept %d pinned", rep.Kept)
	}
	a.printf("%s\n", summary)
	for _, m := range purged.Removed {
		a.printf("%s %s, in the trash since %s\n", pverb, describe(m), age.Ago(m.Trashed, now))
	}
	if len(purged.Removed) > 0 {
		a.printf("%s %s from the trash, there for over %s\n", pverb, count(len(purged.Removed), "session"), f.grace)
	}
	if len(rep.Removed) > 0 && !f.dryRun {
		a.notef("'recall trash ls' lists the trash; 'recall trash restore ID' brings a session back\n")
	}
	return nil
}

// emptyTrash runs recall.EmptyTrash on each project and adds up the
// reports.
func emptyTrash(ctx context.Context, st recall.Store, projects []string, cutoff time.Time, dryRun bool) (recall.CleanupReport, error) {
	var total recall.CleanupReport
	for _, p := range projects {
		rep, err := recall.EmptyTrash(ctx, st, recall.CleanupOptions{OlderThan: cutoff, DryRun: dryRun, Project: p})
		if err != nil {
			return total, fmt.Errorf("empty the trash of %s: %w", p, err)
		}
		total.Removed = append(total.Removed, rep.Removed...)
		total.Kept += rep.Kept
	}
	return total, nil
}

// applyPolicy applies the retention policy p on each project (every one
// but the reserved ones when projects is nil) and adds up the reports.
func applyPolicy(ctx context.Context, st recall.Store, projects []string, p retention.Policy, now time.Time, dryRun bool) (recall.CleanupReport, error) {
	var total recall.CleanupReport
	if projects == nil {
		projects = []string{""} // retention.Apply leaves the reserved projects alone
	}
	for _, project := range projects {
		rep, err := retention.Apply(ctx, st, p, retention.Options{Now: now, DryRun: dryRun, Project: project})
		if err != nil {
			return total, err
		}
		total.Removed = append(total.Removed, rep.Trashed...)
		total.Kept += rep.Held
	}
	return total, nil
}

// cleanup runs recall.Cleanup on each project and adds up the reports.
func cleanup(ctx context.Context, st recall.Store, projects []string, cutoff time.Time, dryRun bool) (recall.CleanupReport, error) {
	var total recall.CleanupReport
	for _, p := range projects {
		rep, err := recall.Cleanup(ctx, st, recall.CleanupOptions{OlderThan: cutoff, DryRun: dryRun, Project: p})
		if err != nil {
			if dryRun {
				return total, fmt.Errorf("read sessions of %s: %w", p, err)
			}
			return total, fmt.Errorf("move sessions of %s to the trash: %w", p, err)
		}
		total.Removed = append(total.Removed, rep.Removed...)
		total.Kept += rep.Kept
	}
	return total, nil
}
