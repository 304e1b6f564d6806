package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/internal/durable"
	"github.com/recallkit/recall/internal/gitremote"
	"github.com/recallkit/recall/mirror"
	"github.com/recallkit/recall/remotestore"
	"github.com/recallkit/recall/storeurl"
)

// syncAskAbove is the number of sessions a first sync moves without
// asking: a handful.
const syncAskAbove = 5

func newSyncCmd(a *app) *cobra.Command {
	var all, dryRun, yes bool
	cmd := &cobra.Command{
		Use:   "sync [URL] [--all] [--dry-run] [--yes]",
		Short: "Sync this machine's sessions with a server, both ways",
		Long: `Push this machine's sessions to the store at URL (a recall serve, or any
store URL; by default the recall serve you logged in to, when 'recall login'
kept a token for exactly one) and pull the sessions it holds that this machine lacks or holds
less of: the current project's by default, every project's with --all. A
server's own projects (_server.*) are never copied either way.

A project is found on the other side by its git remote: sessions record the
folder they were made in and, in a git checkout, its remote URL, so
/home/ann/src/app and /Users/ann/src/app are one project when both check out
github.com/ann/app. 'recall sync map SERVER_PROJECT LOCAL_PROJECT' sets a
mapping by hand, which wins; a project with neither keeps its key.

A session continued on two machines since they last synced keeps both
continuations: the server's stays the session, and this machine's becomes a
fork of the common history, titled "TITLE (from HOST)", on both sides.

Sync is incremental (by seq) and resumable: an interrupted sync is finished
by running it again, and nothing is copied twice. A first sync that would
move more than a handful of sessions says so and asks (--yes skips that).`,
		Example: `  recall login https://recall.example.com && recall sync
  recall sync https://recall.example.com
  recall sync postgres://db.internal/recall --all --dry-run
  recall sync map -Users-ann-src-app ~/src/app`,
		Args: args(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			url, err := syncURL(argv)
			if err != nil {
				return err
			}
			return a.runSync(cmd.Context(), url, all, dryRun, yes)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&all, "all", "a", false, "sync every project, not only the current one")
	f.BoolVarP(&dryRun, "dry-run", "n", false, "only say what a sync would push, pull and fork")
	f.BoolVarP(&yes, "yes", "y", false, "do not ask before a first sync that moves many sessions")
	cmd.AddCommand(newSyncMapCmd(a))
	return cmd
}

// syncURL is the URL recall sync syncs with: the one given, or else the
// server recall login kept a token for, when it kept exactly one.
func syncURL(argv []string) (string, error) {
	if len(argv) == 1 {
		return argv[0], nil
	}
	servers, err := remotestore.Servers()
	if err != nil {
		return "", err
	}
	switch len(servers) {
	case 0:
		return "", usageError("log in to your recall serve first: recall login URL; or name a store: recall sync URL",
			"sync: no server to sync with: you are logged in to none")
	case 1:
		return servers[0], nil
	}
	return "", usageError("name one: recall sync URL", "sync: you are logged in to %d servers (%s)", len(servers), strings.Join(servers, ", "))
}

// runSync is recall sync URL.
func (a *app) runSync(ctx context.Context, url string, all, dryRun, yes bool) error {
	home, err := a.mirrorHome()
	if err != nil {
		return err
	}
	local, err := a.rawStore(ctx) // an encrypted home's server gets its sealed log
	if err != nil {
		return err
	}
	remote, err := openURL(ctx, url)
	if err != nil {
		return err
	}
	defer remote.Close()
	pairs, err := a.syncPairs(ctx, home, local, remote, all)
	if err != nil {
		return err
	}
	name := storeurl.Redact(url)
	opts := mirror.TwoWayOptions{Projects: pairs, RemoteName: name, StateDir: mirror.SyncStateDir(home, url)}
	if dryRun || !yes {
		opts.DryRun = true
		plan, err := mirror.TwoWay(ctx, local, remote, opts)
		if dryRun || err != nil {
			return a.syncDone(name, plan, err, true)
		}
		if ok, err := a.confirmSync(name, opts.StateDir, plan); !ok || err != nil {
			return err
		}
		opts.DryRun = false
	}
	bar := newProgress(a.stderr, isTerminal(a.stderr))
	opts.Progress = bar.update
	rep, err := mirror.TwoWay(ctx, local, remote, opts)
	bar.done()
	return a.syncDone(name, rep, err, false)
}

// confirmSync asks before a first sync with the server (no positions
// kept yet) that moves more than a handful of sessions.
func (a *app) confirmSync(name, stateDir string, plan mirror.TwoWayReport) (bool, error) {
	moves := plan.Pushed + plan.Pulled
	if moves <= syncAskAbove {
		return true, nil
	}
	if _, err := os.Stat(filepath.Join(stateDir, "cursors.json")); err == nil {
		return true, nil // not the first sync
	}
	if !isTerminal(a.stdin) || !isTerminal(a.stderr) {
		return false, usageError("pass --yes to sync without a question ('recall sync --dry-run' shows what would move)",
			"a first sync with %s would %s and asks first, but there is no terminal to ask in", name, syncPlan(plan))
	}
	return a.askYes(fmt.Sprintf("A first sync with %s will %s. Go on?", name, syncPlan(plan)), "nothing synced"), nil
}

// syncPlan says what a sync moves.
func syncPlan(r mirror.TwoWayReport) string {
	s := fmt.Sprintf("push %s (%s) and pull %s (%s)",
		count(r.Pushed, "session"), entries(int64(r.EntriesPushed)), count(r.Pulled, "session"), entries(int64(r.EntriesPulled)))
	if n := len(r.Forks); n > 0 {
		s += fmt.Sprintf(", keeping %s continued on both sides as %s", count(n, "session"), count(n, "fork"))
	}
	return s
}

// syncDone reports a sync (or its plan) and turns its error into the
// command's.
func (a *app) syncDone(name string, rep mirror.TwoWayReport, err error, dryRun bool) error {
	if a.json {
		if perr := a.printJSON(rep); perr != nil {
			return perr
		}
	} else {
		verb := "synced with"
		if dryRun {
			verb = "a sync with"
		}
		what := syncPlan(rep)
		if !dryRun {
			what = strings.NewReplacer("push ", "pushed ", "pull ", "pulled ", "keeping", "kept").Replace(what)
		} else {
			what = "would " + what
		}
		a.printf("%s %s: %s; %d up to date\n", verb, name, what, rep.UpToDate)
		for _, f := range rep.Forks {
			a.printf("  %s was continued here and there since seq %d: this machine's continuation is %s\n", f.Session, f.At, f.Fork.Session)
		}
		for _, f := range rep.Failed {
			a.printf("  failed %s: %s\n", f.Key, f.Error)
		}
	}
	if err != nil {
		return withHint(err, "run the same command again to resume; what was copied stays copied")
	}
	return nil
}

// syncPairs chooses the projects to sync and their keys on the remote:
// the current project, or with all every project of both sides (the
// reserved ones left out). See projectRemotes for the rule.
func (a *app) syncPairs(ctx context.Context, home string, local, remote recall.Store, all bool) ([]mirror.ProjectPair, error) {
	byHand, err := readSyncMap(home)
	if err != nil {
		return nil, err
	}
	remotes, err := projectRemotes(ctx, remote)
	if err != nil {
		return nil, fmt.Errorf("sync: list the server's projects: %w", err)
	}
	toLocal := map[string]string{} // remote project -> local, by hand
	for r, l := range byHand {
		toLocal[r] = l
	}
	pick := func(localProject, gitRemote string) string {
		for r, l := range byHand {
			if l == localProject {
				return r
			}
		}
		if gitRemote != "" {
			for _, p := range sortedKeys(remotes) {
				if remotes[p] == gitRemote {
					return p
				}
			}
		}
		return localProject
	}
	if !all {
		dir, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		p, err := recall.ProjectKey(dir)
		if err != nil {
			return nil, err
		}
		return []mirror.ProjectPair{{Local: p, Remote: pick(p, gitremote.Of(dir))}}, nil
	}
	locals, err := projectRemotes(ctx, local)
	if err != nil {
		return nil, err
	}
	var pairs []mirror.ProjectPair
	taken := map[string]bool{}
	for _, p := range sortedKeys(locals) {
		r := pick(p, locals[p])
		pairs = append(pairs, mirror.ProjectPair{Local: p, Remote: r})
		taken[r] = true
	}
	for _, r := range sortedKeys(remotes) {
		if taken[r] {
			continue
		}
		l := toLocal[r]
		if l == "" {
			l = r
		}
		pairs = append(pairs, mirror.ProjectPair{Local: l, Remote: r})
	}
	return pairs, nil
}

// projectRemotes returns the projects of st (the reserved ones left out),
// each with the git remote its newest sessions record ("" when none
// does).
func projectRemotes(ctx context.Context, st recall.Store) (map[string]string, error) {
	projects, err := recall.Projects(ctx, st)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, p := range projects {
		if mirror.Reserved(p.Project) {
			continue
		}
		out[p.Project] = ""
		page, err := st.List(ctx, p.Project, recall.ListOptions{Limit: 20, IncludeArchived: true})
		if err != nil {
			return nil, err
		}
		for _, m := range page.Sessions {
			if r := m.Metadata[importer.MetaGitRemote]; r != "" {
				out[p.Project] = r
				break
			}
		}
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// syncMapFile holds the project mappings set by hand: server project ->
// local project.
func syncMapFile(home string) string { return filepath.Join(home, "sync", "projects.json") }

func readSyncMap(home string) (map[string]string, error) {
	b, err := os.ReadFile(syncMapFile(home))
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, withHint(fmt.Errorf("sync: %s: %w", syncMapFile(home), err), "fix or remove the file; 'recall sync map' rewrites it")
	}
	return m, nil
}

func newSyncMapCmd(a *app) *cobra.Command {
	var remove bool
	cmd := &cobra.Command{
		Use:   "map [SERVER_PROJECT LOCAL_PROJECT]",
		Short: "Show or set which local project a server's project syncs with",
		Long: `With no arguments, list the mappings set by hand. With two, sync the server's
project SERVER_PROJECT with the local LOCAL_PROJECT (a directory or a project
key). --remove SERVER_PROJECT drops a mapping. A mapping set here wins over
the git remote rule of 'recall sync'.`,
		Args: args(cobra.RangeArgs(0, 2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			home, err := a.mirrorHome()
			if err != nil {
				return err
			}
			m, err := readSyncMap(home)
			if err != nil {
				return err
			}
			switch {
			case remove && len(argv) == 1:
				delete(m, argv[0])
			case !remove && len(argv) == 2:
				l, err := projectArg(argv[1])
				if err != nil {
					return err
				}
				if mirror.Reserved(argv[0]) || mirror.Reserved(l) {
					return usageError("choose a project of yours", "%s: a server's reserved projects are never synced", argv[0])
				}
				m[argv[0]] = l
			case len(argv) == 0 && !remove:
				if a.json {
					return a.printJSON(m)
				}
				for _, r := range sortedKeys(m) {
					a.printf("%s -> %s\n", r, m[r])
				}
				return nil
			default:
				return usageError("usage: recall sync map [SERVER_PROJECT LOCAL_PROJECT] | --remove SERVER_PROJECT", "sync map: wrong arguments")
			}
			b, _ := json.MarshalIndent(m, "", "  ")
			if err := os.MkdirAll(filepath.Dir(syncMapFile(home)), 0o700); err != nil {
				return err
			}
			if err := durable.WriteFile(syncMapFile(home), "projects.json.tmp-*", append(b, '\n')); err != nil {
				return err
			}
			if len(argv) == 2 {
				a.notef("the server's project %s now syncs with %s\n", argv[0], m[argv[0]])
			} else {
				a.notef("mapping of %s removed\n", argv[0])
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&remove, "remove", false, "drop the mapping of SERVER_PROJECT")
	return cmd
}
