package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memory"
)

func newMemoryCmd(a *app) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Show or edit the project's memory (MEMORY.md)",
		Long: `The project's memory is a Markdown file of short notes (decisions, rules,
pitfalls) that 'recall chat --memory' keeps: after every exchange a cheap
model call may append a few, and every session that starts gets them in its
system prompt. Memory is off unless --memory is given.

The file is MEMORY.md next to the project's sessions:
<home>/projects/<project>/MEMORY.md, where home is --home, $RECALL_HOME or
~/.recall (also when --store names another kind of store).`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&dir, "project", "", "project directory (default: the working directory)")
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Print the project's memory",
		Args:  args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := a.memoryFile(cmd.Context(), dir)
			if err != nil {
				return err
			}
			text, err := f.Read()
			if err != nil {
				return err
			}
			if a.json {
				notes, err := f.Notes()
				if err != nil {
					return err
				}
				return a.printJSON(struct {
					Path  string   `json:"path"`
					Notes []string `json:"notes"`
					Text  string   `json:"text"`
				}{f.Path, orEmpty(notes), text})
			}
			if text == "" {
				a.notef("no memory yet for this project (%s); 'recall chat --memory' keeps one\n", f.Path)
				return nil
			}
			a.notef("%s\n", f.Path)
			a.printf("%s", text)
			return nil
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "edit",
		Short: "Edit the project's memory in $EDITOR",
		Long: `Open the project's MEMORY.md in $VISUAL or $EDITOR (default vi). Notes an agent
appends while you edit are kept after your text; if someone else edited the
file meanwhile, your version is not written and is kept in a file whose name
is printed.`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := a.memoryFile(cmd.Context(), dir)
			if err != nil {
				return err
			}
			return a.editMemory(cmd.Context(), f)
		},
	})
	return cmd
}

// memoryFile returns the memory file of the project in dir (the working
// directory when empty): in the file store's project directory, or, for
// other stores, in the file store layout under --home, $RECALL_HOME or
// ~/.recall.
func (a *app) memoryFile(ctx context.Context, dir string) (*memory.File, error) {
	proj, err := project(dir)
	if err != nil {
		return nil, err
	}
	return a.projectMemory(ctx, proj)
}

// projectMemory returns the memory file of a project key.
func (a *app) projectMemory(ctx context.Context, proj string) (*memory.File, error) {
	st, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	for {
		// a mirror writes to its primary, the store that holds the home;
		// a redacting store wraps it
		if p, ok := st.(interface{ Primary() recall.Store }); ok {
			st = p.Primary()
		} else if w, ok := st.(interface{ Unwrap() recall.Store }); ok {
			st = w.Unwrap()
		} else {
			break
		}
	}
	if fs, ok := st.(*filestore.Store); ok {
		pd, err := fs.ProjectDir(proj)
		if err != nil {
			return nil, err
		}
		return memory.ForProject(pd), nil
	}
	home := a.home
	if home == "" {
		h, err := filestore.DefaultHome()
		if err != nil {
			return nil, err
		}
		home = h
	}
	if err := (recall.Key{Project: proj, Session: "x"}).Validate(); err != nil {
		return nil, err
	}
	return memory.ForProject(filepath.Join(home, "projects", proj)), nil
}

// editMemory runs the editor on a copy of f and writes the result back.
func (a *app) editMemory(ctx context.Context, f *memory.File) error {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	var tmpName string
	err := f.Edit(ctx, func(text string) (string, error) {
		tmp, err := os.CreateTemp("", "recall-memory-*.md")
		if err != nil {
			return "", err
		}
		tmpName = tmp.Name()
		if text == "" {
			text = "# Project memory\n\n"
		}
		_, err = tmp.WriteString(text)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", err
		}
		// The editor is run by the shell, so EDITOR="code --wait" works.
		cmd := exec.CommandContext(ctx, "sh", "-c", editor+` "$1"`, "sh", tmpName)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
		if err := cmd.Run(); err != nil {
			return "", withHint(fmt.Errorf("editor %q: %w", editor, err), "set $EDITOR to an editor that exits 0 when you save")
		}
		b, err := os.ReadFile(tmpName)
		return string(b), err
	})
	if errors.Is(err, recall.ErrConflict) {
		return withHint(fmt.Errorf("memory: %w", err), "your version is in "+tmpName+"; run 'recall memory edit' again")
	}
	if tmpName != "" {
		os.Remove(tmpName)
	}
	if err != nil {
		return err
	}
	a.notef("saved %s\n", f.Path)
	return nil
}
