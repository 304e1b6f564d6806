package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/encrypt"
	"github.com/recallkit/recall/internal/sessionref"
	"github.com/recallkit/recall/secrets"
)

// app is the state one command line shares: its streams, the global
// flags, and the store, opened on first use.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	home       string   // --home
	storeURL   string   // --store
	encryptKey string   // --encrypt-key
	userKeys   string   // recall serve --user-keys: a key file per user
	oldKeys    []string // recall keys rotate --old-key
	json       bool     // --json
	// redact and redactPatterns are --redact and --redact-pattern.
	redact         bool
	redactPatterns []string
	// readOnly is set for the commands that only read (ls, show, ...):
	// opening the store for them creates nothing.
	readOnly bool

	st      recall.Store
	raw     recall.Store      // st without its encryption: what mirrors copy
	ring    *encrypt.Keyring  // the keys of --encrypt-key, read once
	secrets *secrets.Redactor // built on first use
}

// store opens the store the flags and environment name, once. Flags win
// over the environment: --store, then --home, then RECALL_STORE, then the
// file store in RECALL_HOME or ~/.recall. With --encrypt-key (or
// RECALL_ENCRYPT_KEY) the store is encrypted (see encrypted); with
// --redact (see redactOn) it redacts every write, before the encryption.
func (a *app) store(ctx context.Context) (recall.Store, error) {
	if a.st != nil {
		return a.st, nil
	}
	if _, err := a.rawStore(ctx); err != nil {
		return nil, err
	}
	st, err := a.encrypted(ctx, a.raw)
	if err == nil && a.redactOn() && !a.readOnly {
		// redaction runs first, on the plaintext: it wraps the encryption
		st, err = a.redacting(st)
	}
	if err != nil {
		a.raw.Close()
		a.raw = nil
		return nil, err
	}
	a.st = st
	return st, nil
}

// rawStore opens the store as store does, without its encryption: for the
// mirror commands, which copy the sealed log as it is.
func (a *app) rawStore(ctx context.Context) (recall.Store, error) {
	if a.raw != nil {
		return a.raw, nil
	}
	if a.storeURL != "" && a.home != "" {
		return nil, usageError("use one of them", "--store and --home both name a store")
	}
	url := a.storeURL
	if url == "" && a.home == "" {
		url = os.Getenv("RECALL_STORE")
	}
	var (
		st  recall.Store
		err error
	)
	if url != "" {
		st, err = openURLFor(ctx, url, a.readOnly)
	} else {
		st, err = openHome(a.home, a.readOnly)
	}
	if err != nil {
		return nil, err
	}
	a.raw = st
	return st, nil
}

// close closes the store if a command opened it.
func (a *app) close() error {
	st := a.st
	if st == nil {
		st = a.raw // opened by rawStore only
	}
	if st == nil {
		return nil
	}
	err := st.Close()
	a.st, a.raw = nil, nil
	if err != nil {
		return fmt.Errorf("close store: %w", err)
	}
	return nil
}

// project returns the project key of dir, or of the working directory
// when dir is empty.
func project(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("working directory: %w", err)
		}
		dir = wd
	}
	if fi, err := os.Stat(dir); err != nil {
		return "", withHint(fmt.Errorf("project directory: %w", err), "--project takes an existing directory")
	} else if !fi.IsDir() {
		return "", usageError("--project takes a directory", "project %s is not a directory", dir)
	}
	return recall.ProjectKey(dir)
}

// resolve opens the store and finds the session ref names (ID, unique ID
// prefix, project/ID or exact title), preferring the current project.
func (a *app) resolve(ctx context.Context, ref string) (recall.Store, recall.Meta, error) {
	st, err := a.store(ctx)
	if err != nil {
		return nil, recall.Meta{}, err
	}
	proj, _ := project("") // a missing cwd only loses the preference
	m, err := sessionref.Resolve(ctx, st, proj, ref)
	if err != nil {
		return nil, recall.Meta{}, err
	}
	return st, m, nil
}

// printJSON writes v as indented JSON on stdout.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// orEmpty returns s, or an empty, non-nil slice when s is nil: a list
// printed as JSON is then [], never null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// printf writes to stdout.
func (a *app) printf(format string, args ...any) {
	fmt.Fprintf(a.stdout, format, args...)
}

// notef writes a status line to stderr, where it stays out of the way of
// output a script reads from stdout.
func (a *app) notef(format string, args ...any) {
	fmt.Fprintf(a.stderr, format, args...)
}

// withStore is the RunE of a command that works on the store: it opens
// it, then runs run with the command's context.
func (a *app) withStore(run func(ctx context.Context, st recall.Store, argv []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, argv []string) error {
		ctx := cmd.Context()
		st, err := a.store(ctx)
		if err != nil {
			return err
		}
		return run(ctx, st, argv)
	}
}
