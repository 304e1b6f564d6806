package main

import "github.com/spf13/cobra"

// newImportGeminiCmd is the use and help of 'recall import gemini'.
func newImportGeminiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "gemini [PATH]",
		Short: "Import Gemini CLI sessions (default ~/.gemini/tmp)",
		Long: `Import the conversations Gemini CLI keeps. PATH is its tmp folder (default
~/.gemini/tmp, or .gemini/tmp in $GEMINI_CLI_HOME), one project's folder in it,
or one file: a session recording (chats/session-*.jsonl, or .json of versions
before April 2026), a logs.json, or a checkpoint-<tag>.json of /chat save.

Each recording becomes one session, with Gemini's session ID, in the project
of the folder it was recorded in (named by the project's .project_root or
~/.gemini/projects.json; "gemini-<folder>" when nothing names it), which it
records as 'recall chat' does. Text, images, thoughts, tool calls and their
results become Responses items; the session's summary is its title; token
usage, the model and times are kept; a rewind or a compressed history becomes
a compaction; a subagent's recording becomes a subagent record. logs.json
gives the prompts of sessions that have no recording; a checkpoint becomes a
session titled by its tag. Messages shown only to you (info, errors), slash
commands, unknown kinds and a torn last line are skipped and counted.

A progress bar is shown when stderr is a terminal. The command fails (exit 1)
only when nothing could be read.`,
		Example: `  recall import gemini
  recall import gemini ~/.gemini/tmp/my-app --dry-run
  recall import gemini ~/.gemini/tmp/my-app/chats/session-2026-08-01T09-00-7d9c2f6e.jsonl --project ~/src/app`,
	}
}
