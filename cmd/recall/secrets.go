package main

import (
	"context"
	"os"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/secrets"
)

// envRedact turns redaction on for every command, as --redact does.
const envRedact = "RECALL_REDACT"

// redactOn reports whether the command line or the environment asks for
// the store to redact every write: --redact, a --redact-pattern, or
// RECALL_REDACT=1.
func (a *app) redactOn() bool {
	if a.redact || len(a.redactPatterns) > 0 {
		return true
	}
	switch strings.ToLower(os.Getenv(envRedact)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// redactor returns the redactor of the default rules and the command
// line's --redact-pattern, built once.
func (a *app) redactor() (*secrets.Redactor, error) {
	if a.secrets != nil {
		return a.secrets, nil
	}
	var opts secrets.Options
	for _, s := range a.redactPatterns {
		p, err := secrets.ParsePattern(s)
		if err != nil {
			return nil, usageError("write --redact-pattern NAME=REGEXP", "%v", err)
		}
		opts.Patterns = append(opts.Patterns, p)
	}
	r, err := secrets.New(opts)
	if err != nil {
		return nil, usageError("fix the --redact-pattern", "%v", err)
	}
	a.secrets = r
	return r, nil
}

// redacting returns st as a redacting store: st itself, or the store it
// wraps, when it redacts already (--redact, a store URL's redact=1);
// else st wrapped.
func (a *app) redacting(st recall.Store) (*secrets.Store, error) {
	if rs, ok := recall.As[*secrets.Store](st); ok {
		return rs, nil
	}
	r, err := a.redactor()
	if err != nil {
		return nil, err
	}
	return secrets.NewStore(st, r), nil
}

// importStore returns the store an import writes to: redacting, unless
// --no-redact (or a dry run, which writes nothing). rs is the redacting
// store whose report the import prints, or nil.
func (a *app) importStore(ctx context.Context, noRedact, dryRun bool) (st recall.Store, rs *secrets.Store, err error) {
	st, err = a.store(ctx)
	if err != nil || noRedact || dryRun {
		return st, nil, err
	}
	rs, err = a.redacting(st)
	if err != nil {
		return nil, nil, err
	}
	return rs, rs, nil
}

// noteRedacted prints what an import redacted, after its summary.
func (a *app) noteRedacted(rep secrets.Report) {
	if rep.Total() > 0 {
		a.printf("redacted %s\n", rep)
	}
}

// noteRedactedSince prints what rs redacted since the report before (the
// watcher's previous one), and returns the report to compare with next.
func (a *app) noteRedactedSince(rs *secrets.Store, before secrets.Report) secrets.Report {
	now := rs.Redacted()
	since := secrets.Report{}
	for rule, n := range now {
		if d := n - before[rule]; d > 0 {
			since[rule] = d
		}
	}
	a.noteRedacted(since)
	return now
}
