package main

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
)

func newLabelCmd(a *app) *cobra.Command {
	var add, remove []string
	var clear bool
	cmd := &cobra.Command{
		Use:   "label ID... [--add LABEL]... [--remove LABEL]... [--clear]",
		Short: "Add labels to sessions or take them off (retention policies keep sessions by label)",
		Long: `Add labels to the sessions named, take labels off them, or clear them. A label
is any short text; the API's PATCH and the web viewer set the same labels, and
a retention policy ('recall policy') keeps sessions by label. Without a flag
it prints the sessions' labels.`,
		Example: `  recall label 0199a3f2 --add keep-forever
  recall label 0199a3f2 0199b7c4 --remove draft
  recall label 0199a3f2 --clear`,
		Args: args(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if len(add) == 0 && len(remove) == 0 && !clear {
				_, metas, err := resolveAll(cmd, a, argv)
				if err != nil {
					return err
				}
				if a.json {
					return a.printJSON(listJSON(metas, ""))
				}
				for _, m := range metas {
					a.printf("%s\t%s\n", describe(m), strings.Join(m.Labels, ", "))
				}
				return nil
			}
			for _, l := range add {
				if l == "" || !utf8.ValidString(l) {
					return usageError("a label is a short UTF-8 text", "invalid label %q", l)
				}
			}
			return eachSession(cmd, a, argv, "labelled", func(st recall.Store, m recall.Meta) (recall.Meta, error) {
				return recall.NewSession(st, m.Key).ChangeMeta(cmd.Context(), recall.MetaChange{Labels: relabel(m.Labels, add, remove, clear), SetLabels: true})
			})
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&add, "add", nil, "add `LABEL` (repeat for more)")
	fl.StringArrayVar(&remove, "remove", nil, "take `LABEL` off (repeat for more)")
	fl.BoolVar(&clear, "clear", false, "take every label off first")
	return cmd
}

// relabel returns labels with remove taken off and add added (after
// every label is taken off, with clear), in order, each once.
func relabel(labels, add, remove []string, clear bool) []string {
	var out []string
	if !clear {
		for _, l := range labels {
			if !slices.Contains(remove, l) && !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	for _, l := range add {
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return orEmpty(out)
}
