package storeurl

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/recallkit/recall"
	"github.com/recallkit/recall/filestore"
	"github.com/recallkit/recall/memstore"
	"github.com/recallkit/recall/redisstore"
	"github.com/recallkit/recall/sqlstore"
)

// The built-in stores register like any other.
func init() {
	Register("file", openFile)
	Register("sqlite", openSQLite)
	Register("postgres", openPostgres)
	Register("postgresql", openPostgres)
	Register("redis", openRedis)
	Register("rediss", openRedis)
	Register("mem", openMem)
	Register("https", openRemote)
	Register("http", openRemote)
}

func openFile(_ context.Context, u *url.URL) (recall.Store, error) {
	q := newParams(u)
	opts := filestore.Options{}
	switch {
	case u.User != nil:
		return nil, q.errorf("a file URL has no user or password")
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

func openSQLite(ctx context.Context, u *url.URL) (recall.Store, error) {
	q := newParams(u)
	if u.User != nil {
		return nil, q.errorf("a SQLite URL has no user or password")
	}
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
	switch v := strings.ToLower(q.take("synchronous")); v {
	case "", "full":
		opts.SQLiteSync = sqlstore.SyncFull
	case "normal":
		opts.SQLiteSync = sqlstore.SyncNormal
	default:
		return nil, q.errorf("synchronous=%q: want full or normal", v)
	}
	var err error
	if opts.MaxItemSize, err = q.maxItemSize(); err != nil {
		return nil, err
	}
	if err := q.done("synchronous"); err != nil {
		return nil, err
	}
	return sqlstore.OpenSQLite(ctx, path, opts)
}

func openPostgres(ctx context.Context, u *url.URL) (recall.Store, error) {
	q := newParams(u)
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

func openRedis(ctx context.Context, u *url.URL) (recall.Store, error) {
	q := newParams(u)
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

func openMem(_ context.Context, u *url.URL) (recall.Store, error) {
	q := newParams(u)
	if u.User != nil || u.Host != "" || strings.Trim(u.Path, "/") != "" || u.Opaque != "" {
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
