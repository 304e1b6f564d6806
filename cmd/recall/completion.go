package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/internal/sessionref"
	"github.com/recallkit/recall/internal/termsafe"
)

// completionPage is how many sessions a completion offers: one List page
// of the current project, newest first, and no item is read, so a Tab
// answers at once however large the store.
const completionPage = 100

// setupCompletion shows cobra's "completion" command (bash, zsh, fish,
// powershell) and teaches it recall's values: session IDs (with their
// titles as descriptions) for the commands that take one, and the values
// of --format, --api, --output-format and --source.
func setupCompletion(root *cobra.Command, a *app) {
	root.CompletionOptions.HiddenDefaultCmd = false
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			refuseUnknownShells(c)
		}
	}
	sessions := func(cmd *cobra.Command, argv []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return a.completeSessions(cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
	// commands whose every argument is a session, and those with one
	firstOnly := map[string]bool{"show": true, "fork": true, "rename": true, "compact": true}
	every := map[string]bool{"rm": true, "archive": true, "unarchive": true, "pin": true, "unpin": true, "export": true}
	fixed := map[string]map[string][]string{
		"show":   {"format": {"text", "markdown", "json", "jsonl"}},
		"export": {"format": {"markdown", "html", "json", "jsonl"}},
		"chat":   {"api": {"responses", "chat"}, "output-format": {"text", "json", "stream-json"}},
		"ls":     {"source": sources(root)},
		"search": {"source": sources(root)},
	}
	for _, c := range root.Commands() {
		name := c.Name()
		switch {
		case firstOnly[name]:
			c.ValidArgsFunction = func(cmd *cobra.Command, argv []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if len(argv) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return sessions(cmd, argv, toComplete)
			}
		case every[name]:
			c.ValidArgsFunction = sessions
		}
		for flag, values := range fixed[name] {
			if c.Flags().Lookup(flag) == nil {
				continue
			}
			_ = c.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
		}
		if name == "chat" && c.Flags().Lookup("resume") != nil {
			_ = c.RegisterFlagCompletionFunc("resume", sessions)
			c.ValidArgsFunction = resumeArgument(sessions)
		}
	}
}

// refuseUnknownShells makes "recall completion SHELL" of a shell cobra has
// no script for a usage error (exit 2) naming those it has, instead of
// cobra's help and exit 0; "recall completion" alone still shows the help.
func refuseUnknownShells(completion *cobra.Command) {
	var shells []string
	for _, c := range completion.Commands() {
		shells = append(shells, c.Name())
	}
	if len(shells) < 2 {
		return
	}
	list := strings.Join(shells[:len(shells)-1], ", ") + " and " + shells[len(shells)-1]
	completion.Args = cobra.ArbitraryArgs
	completion.RunE = func(cmd *cobra.Command, argv []string) error {
		if len(argv) == 0 {
			return cmd.Help()
		}
		return usageError("'"+cmd.CommandPath()+" SHELL --help' shows how to load a shell's script",
			"no completion for shell %q: recall completes %s", argv[0], list)
	}
}

// resumeArgument completes chat's argument: the session of "--resume
// <Tab>" and "-r <Tab>". --resume's value is optional, so cobra does not
// complete the word after it as the flag's value (only "--resume=<Tab>");
// it parses --resume as given without one (pickValue) and completes chat's
// argument, which chat takes as the session. Otherwise chat takes no
// argument and nothing is offered.
func resumeArgument(sessions cobra.CompletionFunc) cobra.CompletionFunc {
	return func(cmd *cobra.Command, argv []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if r := cmd.Flags().Lookup("resume"); len(argv) == 0 && r.Changed && r.Value.String() == pickValue {
			return sessions(cmd, argv, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeSessions returns the sessions of the current project whose
// short ID starts with toComplete, as "ID\ttitle" (the shells show the
// title beside the ID). Errors complete nothing: a Tab must not print
// one.
func (a *app) completeSessions(cmd *cobra.Command, toComplete string) []string {
	ctx := cmd.Context()
	proj, err := project("")
	if err != nil {
		return nil
	}
	a.readOnly = true // a Tab creates nothing
	st, err := a.store(ctx)
	if err != nil {
		return nil
	}
	page, err := st.List(ctx, proj, recall.ListOptions{Limit: completionPage})
	if err != nil {
		return nil
	}
	short := sessionref.ShortIDs(sessionIDs(page.Sessions))
	var out []string
	for i, m := range page.Sessions {
		id := short[i]
		if !strings.HasPrefix(id, toComplete) {
			if !strings.HasPrefix(m.Key.Session, toComplete) {
				continue
			}
			id = m.Key.Session
		}
		title := termsafe.Escape(m.Title)
		if title == "" {
			title = termsafe.Escape(m.FirstPrompt)
		}
		if title == "" {
			out = append(out, id)
			continue
		}
		out = append(out, id+"\t"+title)
	}
	return out
}
