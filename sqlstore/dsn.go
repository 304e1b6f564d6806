package sqlstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/recallkit/recall/internal/redact"
)

// storeError is the error of opening a store: one line that names the
// store, with every secret redacted (see storeurl.Redact), wrapping the
// cause for errors.Is. Its text is made once, so the DSN itself is never
// kept.
type storeError struct {
	msg string
	err error
}

// openError returns the error of opening dialect's store at dsn. password
// is a password the driver found elsewhere (PGPASSWORD, a password file),
// to scrub from the cause's text too.
func openError(store, dsn, password string, err error) error {
	msg := redact.Message(err.Error(), dsn, password)
	// pgx joins the errors of each address it tried with newlines; an
	// open error is one line.
	msg = strings.ReplaceAll(strings.ReplaceAll(msg, ":\n", ": "), "\n", "; ")
	msg = strings.Join(strings.Fields(msg), " ")
	msg = strings.TrimPrefix(msg, "sqlstore: ")
	if damaged(err) && !errors.Is(err, ErrDamaged) {
		err = fmt.Errorf("%w: %w", ErrDamaged, err) // the message says it already
	}
	return &storeError{msg: "sqlstore: open " + store + " " + redact.URL(dsn) + ": " + msg, err: err}
}

func (e *storeError) Error() string { return e.msg }

func (e *storeError) Unwrap() error { return e.err }
