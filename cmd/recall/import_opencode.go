package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/importer"
	"github.com/recallkit/recall/importer/opencode"
)

// newImportOpencodeCmd is the use and help of 'recall import opencode'.
func newImportOpencodeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "opencode [PATH]",
		Short: "Import opencode sessions (default ~/.local/share/opencode)",
		Long: `Import opencode's sessions. PATH is its data folder (default
~/.local/share/opencode, or opencode in $XDG_DATA_HOME, on every system; and
the database $OPENCODE_DB names), a database (opencode.db), the storage folder
of versions before the database, or one session's file in it. The database is
only read: opencode may keep running.

Each session becomes one session, with opencode's session ID, in the project
of the folder it ran in, which it records as 'recall chat' does, titled as
opencode titled it. Text, files, reasoning, tool calls and their outputs
become Responses items; token usage, the model and times are kept; a
compaction becomes a compaction; a child session (a subagent) becomes a
subagent record under its session. Messages still being written and turns a
pending undo hides wait for a later import; failed answers, unknown kinds and
damaged records are skipped and counted.

A progress bar is shown when stderr is a terminal. The command fails (exit 1)
only when nothing could be read.`,
		Example: `  recall import opencode
  recall import opencode ~/.local/share/opencode/opencode.db --dry-run
  recall --store sqlite:///tmp/r.db import opencode --project ~/src/app`,
	}
}

// followOpencode returns --watch's import of a path opencode.Find
// returned: a Follower's, which reads only the sessions that changed.
func followOpencode() func(ctx context.Context, st recall.Store, path string) (importer.Summary, error) {
	var f opencode.Follower
	return func(ctx context.Context, st recall.Store, path string) (importer.Summary, error) {
		return f.ImportFile(ctx, st, path, importer.Options{})
	}
}
