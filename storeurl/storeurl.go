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
//	redis:   prefix=recall: ttl=720h (other parameters go to go-redis, e.g. dial_timeout=3s)
//	postgres: schema=name (other parameters go to pgx, e.g. sslmode=disable)
//	any:     max_item_size=bytes
//
// The package sits above the backends: it imports them all, and neither the
// core nor any backend imports it. A string without a scheme is a file
// store path; a scheme this package does not know is an error that lists
// the supported ones.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/redisstore"
	"github.com/recallkit/recall/sqlstore"
)

// ErrUnknownScheme reports a URL whose scheme no store is registered for.
var ErrUnknownScheme = errors.New("storeurl: unknown scheme")

// opener opens the store a parsed URL names. q holds its query parameters:
// the opener takes those it knows and fails on the others, or hands the
// URL with what is left (q.rest) to a driver that parses it itself.
type opener func(ctx context.Context, u *url.URL, q *params) (recall.Store, error)

// openers is the registry of schemes. Adding a backend is one line here.
var openers = map[string]opener{
	"file":       openFile,
	"sqlite":     openSQLite,
	"postgres":   openPostgres,
	"postgresql": openPostgres,
	"redis":      openRedis,
	"rediss":     openRedis,
	"mem":        openMem,
}

// Schemes returns the URL schemes Open supports, sorted.
func Schemes() []string { return slices.Sorted(maps.Keys(openers)) }

// Open opens the store rawURL names (see the package documentation). The
// caller closes it. Errors name the store and never show a password.
func Open(ctx context.Context, rawURL string) (recall.Store, error) {
	if strings.TrimSpace(rawURL) == "" {
		return nil, errors.New("storeurl: empty store URL")
	}
	scheme, _, ok := strings.Cut(rawURL, ":")
	if !ok || !isScheme(scheme) {
		return openPath(rawURL)
	}
	scheme = strings.ToLower(scheme)
	open := openers[scheme]
	if open == nil {
		return nil, fmt.Errorf("%w %q in %s: supported schemes are %s, or a plain path for the file store",
			ErrUnknownScheme, scheme, redact(rawURL), strings.Join(Schemes(), ", "))
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, password included
		}
		return nil, fmt.Errorf("storeurl: %s: %v", redact(rawURL), err)
	}
	q := &params{u: u, raw: rawURL, values: u.Query()}
	// The backends' own errors already name the store, redacted.
	return open(ctx, u, q)
}

// isScheme reports whether s can be a URL scheme (RFC 3986) of two bytes
// or more; a one-letter "scheme" is more likely a Windows drive.
func isScheme(s string) bool {
	if len(s) < 2 {
		return false
	}
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// openPath opens the file store at a plain path; a leading ~/ is the
// user's home directory (RECALL_STORE does not pass through a shell).
func openPath(path string) (recall.Store, error) {
	if rest, ok := strings.CutPrefix(path, "~/"); ok || path == "~" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("storeurl: %s: %w", path, err)
		}
		path = filepath.Join(home, rest)
	}
	return filestore.Open(filestore.Options{Dir: path})
}

// params are a URL's query parameters, which openers take one by one;
// whatever no opener takes is an error, so a misspelt option is never
// silently ignored.
type params struct {
	u      *url.URL
	raw    string
	values url.Values
}

// take removes and returns parameter name ("" when absent).
func (p *params) take(name string) string {
	v := p.values.Get(name)
	p.values.Del(name)
	return v
}

// maxItemSize takes max_item_size.
func (p *params) maxItemSize() (int, error) {
	v := p.take("max_item_size")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, p.errorf("max_item_size %q is not a positive number of bytes", v)
	}
	return n, nil
}

// done fails if parameters are left that no one took, naming those known.
func (p *params) done(known ...string) error {
	if len(p.values) == 0 {
		return nil
	}
	return p.errorf("unknown option %s (this store takes %s)",
		strings.Join(slices.Sorted(maps.Keys(p.values)), ", "), strings.Join(append(known, "max_item_size"), ", "))
}

// rest returns the URL as given without the parameters that were taken,
// for a driver that parses the rest itself.
func (p *params) rest() string {
	u := *p.u
	u.RawQuery = p.values.Encode()
	return u.String()
}

func (p *params) errorf(format string, args ...any) error {
	return fmt.Errorf("storeurl: %s: %s", redact(p.raw), fmt.Sprintf(format, args...))
}

// redact hides the password of a URL, even one that does not parse.
func redact(raw string) string {
	return redisstore.Redact(raw)
}

func openFile(_ context.Context, u *url.URL, q *params) (recall.Store, error) {
	opts := filestore.Options{}
	switch {
	case u.Opaque != "": // file:relative/dir
		opts.Dir = u.Opaque
	case u.Host == "" || u.Host == "localhost":
		opts.Dir = u.Path // "" is the default home
	default:
		return nil, q.errorf("a file URL names a local path: file:///abs/path, file:relative/path, or file:// for the default home")
	}
	switch v := q.take("sync"); v {
	case "", "always":
		opts.Sync = filestore.SyncAlways
	case "never":
		opts.Sync = filestore.SyncNever
	default:
		return nil, q.errorf("sync=%q: want always or never", v)
	}
	var err error
	if opts.MaxItemSize, err = q.maxItemSize(); err != nil {
		return nil, err
	}
	if err := q.done("sync"); err != nil {
		return nil, err
	}
	return filestore.Open(opts)
}

func openSQLite(ctx context.Context, u *url.URL, q *params) (recall.Store, error) {
	path := u.Opaque // sqlite:relative.db
	if path == "" {
		path = u.Path
		if u.Host != "" && u.Host != "localhost" {
			path = u.Host + u.Path // sqlite://relative.db, a common slip for sqlite:relative.db
		}
	}
	if path == "" {
		return nil, q.errorf("no database path: use sqlite:///abs/path.db or sqlite:relative.db")
	}
	var opts sqlstore.Options
	var err error
	if opts.MaxItemSize, err = q.maxItemSize(); err != nil {
		return nil, err
	}
	if err := q.done(); err != nil {
		return nil, err
	}
	return sqlstore.OpenSQLite(ctx, path, opts)
}

func openPostgres(ctx context.Context, _ *url.URL, q *params) (recall.Store, error) {
	var opts sqlstore.Options
	var err error
	opts.Schema = q.take("schema")
	if opts.MaxItemSize, err = q.maxItemSize(); err != nil {
		return nil, err
	}
	// pgx reads the other parameters (sslmode, pool_max_conns...) and
	// reports those it does not know.
	return sqlstore.OpenPostgres(ctx, q.rest(), opts)
}

func openRedis(ctx context.Context, _ *url.URL, q *params) (recall.Store, error) {
	var opts redisstore.Options
	var err error
	opts.Prefix = q.take("prefix")
	if v := q.take("ttl"); v != "" {
		if opts.TTL, err = time.ParseDuration(v); err != nil || opts.TTL < 0 {
			return nil, q.errorf("ttl=%q: want a duration such as 720h", v)
		}
	}
	if opts.MaxItemSize, err = q.maxItemSize(); err != nil {
		return nil, err
	}
	// go-redis reads the other parameters (dial_timeout, pool_size...) and
	// reports those it does not know.
	return redisstore.Open(ctx, q.rest(), opts)
}

func openMem(_ context.Context, u *url.URL, q *params) (recall.Store, error) {
	if u.Host != "" || strings.Trim(u.Path, "/") != "" || u.Opaque != "" {
		return nil, q.errorf("an in-memory store has no address: use mem://")
	}
	var opts memstore.Options
	var err error
	if opts.MaxItemSize, err = q.maxItemSize(); err != nil {
		return nil, err
	}
	if err := q.done(); err != nil {
		return nil, err
	}
	return memstore.New(opts), nil
}
