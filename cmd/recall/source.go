package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall/importer"
)

// sources returns the values --source takes, sorted: importer.SourceRecall
// (the sessions recall wrote itself) and the names of the subcommands of
// root's import command. Those are the one table of sources: each import
// subcommand is named after the tool whose sessions it brings in, the
// name those sessions then carry (importer.MetaSource), so an importer
// added there is a source here too.
func sources(root *cobra.Command) []string {
	names := []string{importer.SourceRecall}
	for _, c := range root.Commands() {
		if c.Name() != "import" {
			continue
		}
		for _, sub := range c.Commands() {
			names = append(names, sub.Name())
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// checkSource refuses a --source value that names no known source (see
// sources) as bad usage; "" (no --source) is fine.
func checkSource(cmd *cobra.Command, source string) error {
	if source == "" {
		return nil
	}
	known := sources(cmd.Root())
	if slices.Contains(known, source) {
		return nil
	}
	return usageError("--source takes "+strings.Join(known, ", "), "unknown source %q", source)
}
