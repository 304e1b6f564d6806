package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/redact"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/sqlstore"
	"github.com/recallkit/recall/storeurl"
)

// quietLogger drops go-redis's internal log lines ("redis: … pool.go:770
// … failed to dial"): the CLI reports the error itself, in one line.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietLogger{}) }

// openHome opens the file store in home (the default home when empty).
// A read-only command on a home that does not exist gets an empty store
// and creates nothing.
func openHome(home string, readOnly bool) (recall.Store, error) {
	if readOnly {
		dir := home
		if dir == "" {
			d, err := filestore.DefaultHome()
			if err != nil {
				return nil, withHint(fmt.Errorf("open store: %w", err), "set RECALL_HOME or pass --home")
			}
			dir = d
		}
		if missing(dir) {
			return memstore.New(memstore.Options{}), nil
		}
	}
	st, err := filestore.Open(filestore.Options{Dir: home})
	if err != nil {
		return nil, withHint(fmt.Errorf("open store: %w", err), "choose a writable directory with --home or RECALL_HOME")
	}
	return st, nil
}

// openURL opens the store a URL names (file://, sqlite://, postgres://,
// redis://, mem://, or a plain path). The errors storeurl returns never
// show a password.
func openURL(ctx context.Context, rawURL string) (recall.Store, error) {
	return openURLFor(ctx, rawURL, false)
}

// openURLFor is openURL for a command that writes or, when readOnly, only
// reads. A read-only command creates nothing: a file store that
// does not exist reads as empty, and a SQLite database that does not
// exist is an error.
func openURLFor(ctx context.Context, rawURL string, readOnly bool) (recall.Store, error) {
	if readOnly {
		scheme, path := localPath(rawURL)
		switch {
		case path == "":
		case scheme == "sqlite" && missing(path):
			return nil, withHint(fmt.Errorf("open store: no SQLite database at %s", path),
				"check the path in --store or RECALL_STORE; a command that writes creates it")
		case scheme == "file" && missing(path):
			return memstore.New(memstore.Options{}), nil
		}
	}
	st, err := storeurl.Open(ctx, rawURL)
	var (
		ce *pgconn.ConnectError
		pe *pgconn.ParseConfigError
	)
	switch {
	case errors.Is(err, storeurl.ErrUnknownScheme):
		return nil, usageError("see 'recall --help' for the store URLs", "open store: %v", err)
	case errors.Is(err, storeurl.ErrInvalidURL), errors.As(err, &pe):
		return nil, usageError("check the URL in --store or RECALL_STORE; 'recall --help' shows the store URLs", "open store: %v", err)
	case errors.As(err, &ce):
		// Opening reads the schema first: no write was under way, so
		// say plainly that the server did not answer.
		return nil, withHint(fmt.Errorf("open store: cannot connect to PostgreSQL: %w", distinct(ce.Unwrap())),
			"check the URL in --store or RECALL_STORE, and that the server is running")
	case errors.Is(err, sqlstore.ErrDamaged):
		return nil, fmt.Errorf("open store: %w", err) // hintFor says what to do
	case err != nil:
		return nil, withHint(fmt.Errorf("open store: %w", err), "check the URL in --store or RECALL_STORE, and that the server is running")
	}
	return st, nil
}

// distinct returns err without the repeats of a joined error: pgx joins
// the failures of every attempt, and with sslmode=prefer (the default)
// it tries each address with TLS and then without, failing twice alike.
func distinct(err error) error {
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var errs []error
	seen := map[string]bool{}
	for _, e := range joined.Unwrap() {
		if !seen[e.Error()] {
			seen[e.Error()] = true
			errs = append(errs, e)
		}
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// localPath returns the scheme ("file" or "sqlite") and the local path of
// a store URL that names one, and "" for every other store.
func localPath(rawURL string) (scheme, path string) {
	s, _, ok := strings.Cut(rawURL, ":")
	s = strings.ToLower(s)
	if !ok || len(s) < 2 || !redact.IsScheme(s) {
		// a plain path names the file store, as storeurl reads it
		if strings.HasPrefix(rawURL, "~/") {
			if h, err := os.UserHomeDir(); err == nil {
				return "file", filepath.Join(h, rawURL[2:])
			}
			return "", ""
		}
		return "file", rawURL
	}
	if s != "file" && s != "sqlite" {
		return "", ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", ""
	}
	switch {
	case u.Opaque != "":
		path = u.Opaque
	case s == "sqlite" && u.Host != "":
		path = u.Host + u.Path
	case u.Host == "" || u.Host == "localhost":
		path = u.Path
	}
	if s == "file" && path == "" {
		d, err := filestore.DefaultHome()
		if err != nil {
			return "", ""
		}
		path = d
	}
	return s, path
}

// missing reports whether nothing exists at path.
func missing(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}
