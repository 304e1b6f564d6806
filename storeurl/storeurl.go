// Package storeurl opens any recall store from a URL, so that a program
// (the recall CLI's --store and RECALL_STORE, a service's config) names its
// store in one string:
//
//	/path/to/dir, ./dir, ~/dir     the file store in that directory
//	file:///path/to/dir            the same; file:// alone is the default home
//	sqlite:///path/to/db           SQLite (sqlite:relative.db for a relative path)
//	postgres://user:pass@host/db   PostgreSQL (postgresql:// too)
//	redis://user:pass@host:6379/0  Redis (rediss:// for TLS)
//	mem://                         an in-memory store, gone when closed
//
// Query parameters set store options:
//
//	file:    sync=always|never
//	sqlite:  synchronous=full|normal (full, the default, fsyncs every commit;
//	         normal does not: a power loss may lose the last appends)
//	redis:   prefix=recall: ttl=720h (other parameters go to go-redis, e.g. dial_timeout=3s)
//	postgres: schema=name (other parameters go to pgx, e.g. sslmode=disable)
//	any:     max_item_size=bytes
//	any:     redact=1 (see Secrets)
//
// # Other stores
//
// A store of another package plugs in the way a database/sql driver does:
// it calls Register with its scheme and an Opener, usually from an init
// function, and a program that imports it (for its side effects, if need
// be) can then name it in any URL Open takes, --store included. The
// built-in schemes are registered the same way; Schemes lists them all.
//
// # Secrets
//
// With redact=1 (or true), the store is wrapped by secrets.NewStore with
// the default rules: every item, title and compaction is redacted before
// the store sees it (API keys, tokens, private keys, URL passwords become
// [REDACTED:rule]). The parameter is Open's, so it works for every scheme,
// registered ones included; a plain path takes no parameters (write
// file:///path?redact=1).
//
// Redact is the one function that makes a store URL fit to print or log:
// it hides the password of the user info and of every parameter that
// carries a secret, copes with keyword/value DSNs, and never echoes a URL
// that does not parse. Every error Open returns names the store through
// it, and its text is scrubbed of the URL's secrets even when a driver
// quoted the URL itself.
//
// The package sits above the backends: it imports them all, and neither the
// core nor any backend imports it. A string without a scheme is a file
// store path; a scheme no one registered is an error that lists the
// registered ones.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/internal/redact"
	"github.com/recallkit/recall/secrets"
)

// ErrUnknownScheme reports a URL whose scheme no store is registered for.
var ErrUnknownScheme = errors.New("storeurl: unknown scheme")

// ErrInvalidURL reports a URL a built-in store cannot be opened from as
// written, before any store is reached: it is empty, it does not parse,
// it lacks the path its scheme needs, or a parameter is unknown or has a
// bad value. The error's text says which; errors.Is finds ErrInvalidURL.
var ErrInvalidURL = errors.New("storeurl: invalid URL")

// invalidURL is an error about the URL itself: its text is err's, and it
// is ErrInvalidURL too.
type invalidURL struct{ err error }

func (e *invalidURL) Error() string   { return e.err.Error() }
func (e *invalidURL) Unwrap() []error { return []error{ErrInvalidURL, e.err} }

// Open opens the store rawURL names (see the package documentation). The
// caller closes it. Errors name the store by Redact(rawURL), and their
// text never shows a secret of rawURL, whichever opener failed.
func Open(ctx context.Context, rawURL string) (recall.Store, error) {
	st, err := openStore(ctx, rawURL)
	if err != nil {
		// The built-in openers already redact; an opener registered by
		// another package may have quoted the URL.
		return nil, redact.Clean(err, rawURL)
	}
	return st, nil
}

func openStore(ctx context.Context, rawURL string) (recall.Store, error) {
	if strings.TrimSpace(rawURL) == "" {
		return nil, &invalidURL{errors.New("storeurl: empty store URL")}
	}
	scheme, _, ok := strings.Cut(rawURL, ":")
	if !ok || !isScheme(scheme) {
		if looksLikeDSN(rawURL) {
			// Taken as a path, it would become a directory named after
			// the password it holds.
			return nil, &invalidURL{fmt.Errorf("storeurl: %s looks like a keyword/value connection string, not a path; write it as a URL (postgres://user:pass@host/db)", Redact(rawURL))}
		}
		return openPath(rawURL)
	}
	scheme = strings.ToLower(scheme)
	opener := lookup(scheme)
	if opener == nil {
		return nil, fmt.Errorf("%w %q in %s: registered schemes are %s, or a plain path for the file store",
			ErrUnknownScheme, scheme, Redact(rawURL), strings.Join(Schemes(), ", "))
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL
		}
		return nil, &invalidURL{redact.Wrap("storeurl:", rawURL, err)}
	}
	redacting, err := takeRedact(u)
	if err != nil {
		return nil, err
	}
	st, err := opener(ctx, u)
	if err == nil && st == nil {
		err = fmt.Errorf("storeurl: %s: the opener of scheme %q returned no store", Redact(rawURL), scheme)
	}
	if err != nil || !redacting {
		return st, err
	}
	r, err := secrets.New(secrets.Options{})
	if err != nil {
		st.Close()
		return nil, err
	}
	return secrets.NewStore(st, r), nil
}

// takeRedact removes the redact parameter from u and reports whether it
// asks for redaction.
func takeRedact(u *url.URL) (bool, error) {
	q := u.Query()
	if !q.Has("redact") {
		return false, nil
	}
	v := q.Get("redact")
	q.Del("redact")
	u.RawQuery = q.Encode()
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, &invalidURL{fmt.Errorf("storeurl: %s: redact takes 1 or 0, not %q", Redact(u.String()), v)}
}

// Redact returns rawURL (a store URL, a keyword/value DSN or a path) fit to
// print, log or record: the password of its user info, and the value of
// every query or keyword/value parameter that carries a secret (pwd, key,
// sig, and any name that contains pass, secret, token, auth, credential or
// signature, or ends in key: password, sslpassword, access_token,
// api_key...), are replaced by "xxxxx", the user name and everything else
// kept.
// A URL that does not parse is never echoed: only its scheme and host are
// kept when they can be found unambiguously, and "[hidden]" stands for the
// rest. Redacting twice is the same as redacting once.
//
// It is the one redaction of recall: the backends' open errors, Open's
// errors, the mirror's state directory and `recall mirror status` all go
// through it.
func Redact(rawURL string) string { return redact.URL(rawURL) }

// isScheme reports whether s can be a URL scheme (RFC 3986) of two bytes
// or more; a one-letter "scheme" is more likely a Windows drive.
func isScheme(s string) bool { return len(s) >= 2 && redact.IsScheme(s) }

// openPath opens the file store at a plain path; a leading ~/ is the
// user's home directory (RECALL_STORE does not pass through a shell).
func openPath(path string) (recall.Store, error) {
	if rest, ok := strings.CutPrefix(path, "~/"); ok || path == "~" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("storeurl: %s: %w", Redact(path), err)
		}
		path = filepath.Join(home, rest)
	}
	return filestore.Open(filestore.Options{Dir: path})
}

// looksLikeDSN reports whether s reads as a libpq keyword/value string
// ("host=h dbname=d password=p"): its first word is name=value.
func looksLikeDSN(s string) bool {
	first, _, _ := strings.Cut(strings.TrimSpace(s), " ")
	name, _, ok := strings.Cut(first, "=")
	if !ok || name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
