package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"regexp"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/agent"
	"github.com/recallkit/recall/encrypt"
	"github.com/recallkit/recall/internal/durable"
	"github.com/recallkit/recall/internal/sessionref"
	"github.com/recallkit/recall/remotestore"
	"github.com/recallkit/recall/sqlstore"
)

// Exit codes: the user contract of every command.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
	// exitInterrupted is what a shell reports for a process ended by
	// SIGINT (128+2): Ctrl-C, or Esc in a picker.
	exitInterrupted = 130
)

// cliError is an error with the exit code and the hint the user sees.
type cliError struct {
	err  error
	code int
	hint string
}

func (e *cliError) Error() string { return e.err.Error() }
func (e *cliError) Unwrap() error { return e.err }

// usageError reports a command line that cannot be run as written: exit 2.
func usageError(hint, format string, args ...any) error {
	return &cliError{err: fmt.Errorf(format, args...), code: exitUsage, hint: hint}
}

// withHint marks err as a failure (exit 1) with a hint for the user.
func withHint(err error, hint string) error {
	return &cliError{err: err, code: exitFailed, hint: hint}
}

// exitCode is the process exit code for err.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ce *cliError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.Is(err, errInterrupted):
		return exitInterrupted
	case errors.Is(err, recall.ErrInvalidKey):
		return exitUsage // a reference typed wrong, such as ""
	}
	return exitFailed
}

// errInterrupted is the cause of a command's context when the user
// pressed Ctrl-C (SIGINT): the command stops and recall exits 130.
var errInterrupted = errors.New("interrupted")

// errorLine renders err as the single line the user sees on stderr:
// "recall: <what failed>; hint: <what to do>". Multi-line errors (joined
// ones) are folded onto the line, so scripts can rely on one line.
func errorLine(err error) string {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ")
	// The line says "recall:" once, at its start: see selfPrefix.
	for {
		trimmed := selfPrefix.ReplaceAllString(msg, "$1")
		if trimmed == msg {
			break
		}
		msg = trimmed
	}
	line := "recall: " + msg
	if h := hintFor(err); h != "" {
		line += "; hint: " + h
	}
	return line
}

// selfPrefix matches the CLI's own name where a wrapped error repeats it
// at the start of one of the line's parts: the root package's errors
// ("recall: not found", wrapped deep in a store's error) and the chat's
// agent, which is named recall ("agent recall: turn 1: ...").
var selfPrefix = regexp.MustCompile(`(^|: |; )(?:agent )?recall: `)

// hintFor returns the explicit hint attached to err, or one derived from
// the kind of failure.
func hintFor(err error) string {
	var ce *cliError
	if errors.As(err, &ce) && ce.hint != "" {
		return ce.hint
	}
	var (
		amb    *sessionref.AmbiguousError
		pe     *fs.PathError
		apiErr *oai.Error
		netErr *net.OpError
	)
	switch {
	case errors.As(err, &apiErr):
		return modelHint(apiErr.StatusCode)
	case errors.As(err, &netErr):
		return "a server did not answer: check that the model server (--base-url, OPENAI_BASE_URL) or the store (--store, RECALL_STORE) is running"
	case errors.Is(err, remotestore.ErrUnauthorized), errors.Is(err, remotestore.ErrNoToken):
		return "recall login URL keeps a token for the server; 'recall token create --user NAME' on the server makes one"
	case errors.Is(err, remotestore.ErrForbidden):
		return "this token is read-only: log in with a token made without --read-only to write"
	case errors.Is(err, remotestore.ErrInsecure):
		return "use https://, or a server on this machine (localhost, 127.0.0.1)"
	case errors.Is(err, agent.ErrMaxTurns):
		return "the model kept calling tools; what it did is saved, ask it to go on"
	case errors.As(err, &amb):
		return "use a longer ID prefix, or project/ID"
	case errors.Is(err, encrypt.ErrWrongKey):
		return "pass the key the store was encrypted with (--encrypt-key or RECALL_ENCRYPT_KEY); after a rotation, the new one"
	case errors.Is(err, encrypt.ErrNoKey), errors.Is(err, encrypt.ErrBadKey):
		return "--encrypt-key (or RECALL_ENCRYPT_KEY) takes file:PATH, env:NAME or cmd:COMMAND giving 32 bytes as base64 or hex; 'recall keys new' makes one"
	case errors.Is(err, recall.ErrNotFound):
		return "run 'recall ls --all' to see the sessions and their IDs"
	case errors.Is(err, recall.ErrInvalidKey):
		return "session IDs are 1-128 characters of A-Z a-z 0-9 . _ -"
	case errors.Is(err, sqlstore.ErrDamaged):
		return "the database itself is damaged: restore it from a backup ('sqlite3 FILE .recover' salvages what it can of a SQLite file)"
	case errors.Is(err, recall.ErrCorrupt):
		return "run 'recall check' to find damaged sessions"
	case errors.Is(err, recall.ErrConflict):
		return "another process changed the session; try again"
	case durable.ReadOnlyFS(err):
		return "the recall home is on a read-only file system: reading works, writing does not; remount it read-write, or choose another home with --home or RECALL_HOME"
	case errors.Is(err, fs.ErrPermission) && errors.As(err, &pe):
		return fmt.Sprintf("make %s writable, or choose another home with --home or RECALL_HOME", pe.Path)
	case errors.Is(err, fs.ErrPermission):
		return "check the permissions of the recall home, or choose another with --home or RECALL_HOME"
	}
	return ""
}

// modelHint explains an error status from the model server.
func modelHint(status int) string {
	switch {
	case status == 401 || status == 403:
		return "the server refused the API key; check OPENAI_API_KEY"
	case status == 404:
		return "check the model name (--model or RECALL_MODEL) and the server (--base-url or OPENAI_BASE_URL)"
	case status == 429:
		return "rate limited even after retries; wait and run 'recall chat -c' (your message is saved)"
	case status >= 500:
		return "the model server failed; run 'recall chat -c' to try again (your message is saved)"
	}
	return "the model server rejected the request; your message is saved"
}

// flagError turns a flag the command line got wrong into a usage error
// (exit 2) that says what the flag wants, without strconv's wording.
func flagError(cmd *cobra.Command, err error) error {
	hint := "run '" + cmd.CommandPath() + " --help'"
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return usageError(hint, "%v", err)
	}
	f := ive.GetFlag()
	want := "a valid value"
	switch f.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		want = "a whole number"
	case "float32", "float64":
		want = "a number"
	case "bool":
		want = "true or false"
	case "duration":
		want = "a duration such as 30s, 5m or 2h"
	}
	return usageError(hint+" ("+f.Usage+")", "--%s takes %s, not %q", f.Name, want, ive.GetValue())
}

// interrupted returns errInterrupted (exit 130) in place of err when ctx
// ended because the user pressed Ctrl-C, and err otherwise.
func interrupted(ctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errInterrupted) {
		return withCode(fmt.Errorf("%w by Ctrl-C; what was said before is saved", errInterrupted), exitInterrupted,
			"'recall chat -c' continues the session")
	}
	return err
}

// withCode is err with an exit code and a hint.
func withCode(err error, code int, hint string) error {
	return &cliError{err: err, code: code, hint: hint}
}
