package sqlstore

import (
	"net/url"
	"regexp"
	"strings"
)

// storeError is the error of opening a store: one line that names the
// store, with any password redacted, wrapping the cause for errors.Is.
type storeError struct {
	store  string // "postgres" or "sqlite"
	target string // the redacted DSN or path
	secret string // a password to scrub from the cause's text, if known
	err    error
}

// openError returns the error of opening dialect's store at dsn.
func openError(store, dsn, password string, err error) error {
	return &storeError{store: store, target: Redact(dsn), secret: password, err: err}
}

func (e *storeError) Error() string {
	msg := e.err.Error()
	if e.secret != "" {
		msg = strings.ReplaceAll(msg, e.secret, "xxxxx")
	}
	// pgx joins the errors of each address it tried with newlines; an
	// open error is one line.
	msg = strings.ReplaceAll(strings.ReplaceAll(msg, ":\n", ": "), "\n", "; ")
	msg = strings.Join(strings.Fields(msg), " ")
	msg = strings.TrimPrefix(msg, "sqlstore: ")
	return "sqlstore: open " + e.store + " " + e.target + ": " + msg
}

func (e *storeError) Unwrap() error { return e.err }

var passwordParam = regexp.MustCompile(`(?i)(password\s*=\s*)('(\\.|[^'])*'|[^&\s]*)`)

// Redact returns dsn with its password, in URL userinfo or as a
// password= parameter, replaced by "xxxxx", for messages and logs.
func Redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.Scheme != "" && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			dsn = u.String()
		}
	} else if i := strings.LastIndex(dsn, "@"); err != nil && i > 0 && strings.Contains(dsn, "://") {
		// An unparsable URL: drop whatever stands between user: and @.
		start := strings.Index(dsn, "://") + 3
		if j := strings.Index(dsn[start:i], ":"); j >= 0 {
			dsn = dsn[:start+j+1] + "xxxxx" + dsn[i:]
		}
	}
	return passwordParam.ReplaceAllString(dsn, "${1}xxxxx")
}
