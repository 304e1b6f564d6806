package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/retention"
	"github.com/recallkit/recall/server/audit"
)

func newPolicyCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show or set how long sessions are kept (the retention policy)",
		Long: `Show the store's retention policy: how long a session is kept after its
last activity before 'recall gc' (or 'recall serve', on its schedule) moves it
to the trash. A store has none until one is set, and then nothing expires.
A session's keep is its labels' (the longest), else its project's, else its
user's (on a server), else the default; never keeps it; a pinned session is
always kept.`,
		Example: `  recall policy
  recall policy set --default 90d --label keep=never --project ~/src/app=1y --dry-run`,
		Args: args(cobra.NoArgs),
		RunE: a.withStore(func(ctx context.Context, st recall.Store, _ []string) error {
			p, err := retention.Load(ctx, st)
			if err != nil {
				return err
			}
			if a.json {
				return a.printJSON(p)
			}
			if p.IsZero() {
				a.printf("no retention policy: every session is kept until you delete it\n")
				return nil
			}
			a.printf("%s\n", strings.ReplaceAll(p.String(), "; ", "\n"))
			return nil
		}),
	}
	cmd.AddCommand(newPolicySetCmd(a))
	return cmd
}

// policyFlags are the flags of recall policy set.
type policyFlags struct {
	def                     string
	projects, labels, users []string
	dryRun, yes             bool
}

func newPolicySetCmd(a *app) *cobra.Command {
	var f policyFlags
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Replace the retention policy, saying first what it moves to the trash",
		Long: `Replace the store's retention policy with the one the flags give. Each keep
is an age (90d, 1y, 12h) or never. Before it is saved, it says how many
sessions it would move to the trash now (and how many pinned ones it holds);
in a terminal it asks (y/N), elsewhere it needs --yes. Saving moves nothing:
'recall gc' applies the policy, and 'recall serve' on its schedule.`,
		Example: `  recall policy set --default 90d --label keep=never --dry-run
  recall policy set --default never --project ~/src/scratch=7d --yes`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.policySet(cmd.Context(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.def, "default", "never", "how long sessions no rule names are kept (an age, or never)")
	fl.StringArrayVar(&f.projects, "project", nil, "`DIR=KEEP`: the keep of a project, by its directory or its key (repeatable)")
	fl.StringArrayVar(&f.labels, "label", nil, "`LABEL=KEEP`: the keep of sessions with a label (repeatable)")
	fl.StringArrayVar(&f.users, "user", nil, "`NAME=KEEP`: the keep of a server user's sessions (repeatable)")
	fl.BoolVarP(&f.dryRun, "dry-run", "n", false, "only say what the policy would move")
	fl.BoolVarP(&f.yes, "yes", "y", false, "save it without asking")
	return cmd
}

func (a *app) policySet(ctx context.Context, f policyFlags) error {
	p, err := f.policy()
	if err != nil {
		return err
	}
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	plan, err := retention.Apply(ctx, st, p, retention.Options{DryRun: true})
	if err != nil {
		return err
	}
	if a.json && f.dryRun {
		return a.printJSON(struct {
			Policy     retention.Policy `json:"policy"`
			WouldTrash int              `json:"would_trash"`
			Held       int              `json:"held_pinned"`
		}{p, len(plan.Trashed), plan.Held})
	}
	a.printf("policy: %s\nit would move %s to the trash now", p, count(len(plan.Trashed), "session"))
	if plan.Held > 0 {
		a.printf(" (and hold %d pinned)", plan.Held)
	}
	a.printf("\n")
	if f.dryRun {
		return nil
	}
	if len(plan.Trashed) > 0 {
		ok, err := a.confirmRemoval("policy set", plan.Trashed, f.yes, false)
		if err != nil || !ok {
			return err
		}
	}
	if err := retention.Save(ctx, st, p); err != nil {
		return err
	}
	a.recordLocal(ctx, st, audit.Event{Action: audit.ActionPolicy, Detail: map[string]string{"policy": p.String()}})
	a.notef("saved; 'recall gc' applies it (--dry-run shows what it would move)\n")
	return nil
}

// policy builds the policy the flags give.
func (f policyFlags) policy() (retention.Policy, error) {
	var p retention.Policy
	var err error
	if p.Default, err = retention.ParseKeep(f.def); err != nil {
		return p, usageError("--default takes an age such as 90d, or never", "--default: %v", err)
	}
	rules := func(flag string, vals []string, name func(string) (string, error)) (map[string]retention.Keep, error) {
		if len(vals) == 0 {
			return nil, nil
		}
		m := map[string]retention.Keep{}
		for _, v := range vals {
			n, k, ok := strings.Cut(v, "=")
			keep, err := retention.ParseKeep(k)
			if !ok || strings.TrimSpace(n) == "" || err != nil {
				return nil, usageError(fmt.Sprintf("--%s takes NAME=KEEP, as in --%s scratch=7d", flag, flag), "--%s %q: want NAME=KEEP with KEEP an age or never", flag, v)
			}
			if n, err = name(n); err != nil {
				return nil, err
			}
			m[n] = keep
		}
		return m, nil
	}
	same := func(s string) (string, error) { return s, nil }
	if p.Projects, err = rules("project", f.projects, projectRef); err != nil {
		return p, err
	}
	if p.Labels, err = rules("label", f.labels, same); err != nil {
		return p, err
	}
	if p.Users, err = rules("user", f.users, same); err != nil {
		return p, err
	}
	return p, nil
}

// projectRef names a project by its directory, when one exists by that
// name, or by its key as 'recall projects' shows it.
func projectRef(s string) (string, error) {
	if strings.HasPrefix(s, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			s = home + s[1:]
		}
	}
	if fi, err := os.Stat(s); err == nil && fi.IsDir() {
		return recall.ProjectKey(s)
	}
	return s, nil
}
