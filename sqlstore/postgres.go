package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/recallkit/recall"
)

// OpenPostgres opens (and creates or migrates, as needed) a store in the
// PostgreSQL database dsn names, a URL ("postgres://user:pass@host/db") or
// keyword/value string as pgx accepts; pool settings such as
// pool_max_conns (default: 4 or the number of CPUs, whichever is more) may
// be given in it. The tables live in opts.Schema. An unreachable server, a
// bad DSN or a schema newer than this program is an error naming the
// store, with the password redacted.
//
// The pool survives a server restart: a connection idle for more than a
// second is pinged before use and replaced if dead, a statement that
// failed before anything reached the server is retried, and so is a read
// whose connection died under it. A write whose statement was in flight
// when the server went away fails, saying its outcome is unknown; it is
// never retried, since it may have committed.
func OpenPostgres(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, openError("postgres", dsn, "", err)
	}
	password := cfg.ConnConfig.Password
	schema := opts.Schema
	if schema == "" {
		schema = "public"
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	// A canceled statement is canceled in the server before the call
	// returns (see cancelFirst).
	cfg.ConnConfig.BuildContextWatcherHandler = newCancelFirst
	if cfg.ConnConfig.ConnectTimeout == 0 {
		// pgx has no timeout of its own: without one a blackholed host
		// would hang Open until ctx ends, if it ever does.
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, openError("postgres", dsn, password, err)
	}
	b := &pgBackend{pool: pool}
	b.gin.ctx, b.gin.stop = context.WithCancel(context.Background())
	if err := b.migrate(ctx, schema); err != nil {
		pool.Close()
		return nil, openError("postgres", dsn, password, err)
	}
	return &Store{opts: opts, db: b}, nil
}

// pgBackend is the PostgreSQL dialect, over a pgx pool.
type pgBackend struct {
	pool *pgxpool.Pool
	gin  ginCleaner
}

// ginCleaner brings the search rows that appends write into the search
// table's GIN indexes (search_body, trigrams; search_grams, CJK
// bigrams), in the background, in batches.
//
// An append of a few items (fewer than pgIndexInline) writes their search
// rows into the tail: indexed = false, in neither GIN index, only in the
// small B-tree of the tail (search_tail, migration 7). Putting a row into
// the trigram index costs the server about 65 µs and into the bigram index
// 20 µs, against 40 µs for the row itself, so indexing at append time made
// a durable append 1.12 to 1.24 times as long (docs/BENCHMARKS.md). So
// after every ginCleanText bytes of search text it appended, a store
// indexes the tail (indexTailPGSQL: the rows go into the indexes' pending
// lists) and then merges the pending lists into the indexes proper
// (ginCleanSQL), one batch at a time, off the append's path. The rows a
// store leaves in the tail (it exits first, or appends less than a
// batch) are indexed by the next store's batch, or by a search that finds
// the tail long (indexTailPG); until then searches read them through
// search_tail (see itemQuery). Setting indexed on a row
// that a pop or a remove is making not live waits for that writer, or it
// for the batch, as any two updates of one row do: neither change is lost.
type ginCleaner struct {
	ctx  context.Context // cancelled by close
	stop context.CancelFunc
	text atomic.Int64 // bytes of search text appended since the last batch began

	mu      sync.Mutex
	running bool // a batch is under way
	closed  bool // no batch starts
	wg      sync.WaitGroup

	// every, when above 0, stands for ginCleanText (a test's).
	every int64
	// merges counts the batches begun (a test's).
	merges atomic.Int64
}

// ginCleanText is how many bytes of search text a store appends between
// batches: about 40 rows of 150 bytes. A byte of text makes 15 to 20 bytes
// of pending tuples, so a batch fills a third to half of the 256 kB of a
// pending list (migration 5) and the batch's own update never merges one.
const ginCleanText = 6 << 10

// pgIndexInline is how many search rows a write must have for them to go
// into the GIN indexes at once rather than into the tail: a write of many
// (an import, a batch of a conversation's items) pays the indexing in
// proportion to what it writes anyway, and the tail stays as short as
// the single appends since the last batch, however many rows are
// imported at once.
const pgIndexInline = 16

// inlineIndexed reports whether a write of n search rows indexes them at
// once (see pgIndexInline).
func inlineIndexed(n int) bool { return n >= pgIndexInline }

// indexTailPGSQL puts the rows of the tail into the GIN indexes.
const indexTailPGSQL = `UPDATE search SET indexed = true WHERE NOT indexed`

// ginCleanSQL merges both pending lists into their indexes.
const ginCleanSQL = `SELECT gin_clean_pending_list('search_body'::regclass), gin_clean_pending_list('search_grams'::regclass)`

// pgTailBatch is how many rows of the tail a search reads without the
// GIN indexes: a search that finds so many or more indexes the tail
// first (indexTailPG).
const pgTailBatch = 256

// pgTailSizeSQL counts the rows of the tail, up to $1.
const pgTailSizeSQL = `SELECT count(*) FROM (SELECT 1 FROM search WHERE NOT indexed LIMIT $1) t`

// indexTailPG indexes the tail when it holds pgTailBatch rows or more,
// before a search reads: a tail that long is left by stores that exit
// before their batch (a CLI appends a few rows a run), and reading it
// without the index would cost every search more than indexing it
// costs this one.
func (b *pgBackend) indexTailPG(ctx context.Context) error {
	var n int
	if err := b.pool.QueryRow(ctx, pgTailSizeSQL, pgTailBatch).Scan(&n); err != nil {
		return err
	}
	if n < pgTailBatch {
		return nil
	}
	_, err := b.pool.Exec(ctx, indexTailPGSQL)
	return err
}

// appended counts n bytes of search text just appended and, once
// ginCleanText are in the tail and no batch is running, starts one.
func (b *pgBackend) appended(n int) {
	g := &b.gin
	every := int64(ginCleanText)
	if g.every > 0 {
		every = g.every
	}
	if n <= 0 || g.text.Add(int64(n)) < every {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running || g.closed {
		return
	}
	g.running = true
	g.text.Store(0)
	g.merges.Add(1)
	g.wg.Go(func() {
		defer func() {
			g.mu.Lock()
			g.running = false
			g.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(g.ctx, time.Minute)
		defer cancel()
		// An error leaves the rows to the next batch or a search
		// (and the pending lists to an insert or VACUUM): nothing is
		// lost, the rows are in the table, and searches read the tail.
		if _, err := b.pool.Exec(ctx, indexTailPGSQL); err != nil {
			return
		}
		_, _ = b.pool.Exec(ctx, ginCleanSQL)
	})
}

// pgRunner is what a pool, a connection and a transaction have in common.
type pgRunner interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgQuerier adapts a pgRunner to querier.
type pgQuerier struct{ r pgRunner }

func (p pgQuerier) exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := p.r.Exec(ctx, sql, args...)
	return tag.RowsAffected(), unavailable(ctx, err)
}

func (p pgQuerier) query(ctx context.Context, sql string, args ...any) (rows, error) {
	rs, err := p.r.Query(ctx, sql, args...)
	if err != nil {
		return nil, unavailable(ctx, err)
	}
	return rs, nil
}

func (p pgQuerier) queryRow(ctx context.Context, sql string, args ...any) row {
	return pgRow{p.r.QueryRow(ctx, sql, args...), ctx}
}

// pgRow is a pgx.Row whose Scan says when the server was unreachable.
type pgRow struct {
	r   pgx.Row
	ctx context.Context
}

func (r pgRow) Scan(dest ...any) error { return unavailable(r.ctx, r.r.Scan(dest...)) }

func (b *pgBackend) name() string { return "postgres" }

func (b *pgBackend) q() querier { return pgQuerier{b.pool} }

func (b *pgBackend) lockSQL() string { return " FOR UPDATE" }

func (b *pgBackend) timeArg(t time.Time) any { return t.UTC() }

func (b *pgBackend) close() {
	b.gin.mu.Lock()
	b.gin.closed = true
	b.gin.mu.Unlock()
	b.gin.stop()
	b.gin.wg.Wait()
	b.pool.Close()
}

// view runs fn in a REPEATABLE READ, READ ONLY transaction: one snapshot
// for all its statements. Being read-only, it is run again when the
// connection was lost.
func (b *pgBackend) view(ctx context.Context, fn func(ctx context.Context, q querier) error) error {
	attempt := func() error {
		return pgx.BeginTxFunc(ctx, b.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
			func(tx pgx.Tx) error { return fn(ctx, pgQuerier{tx}) })
	}
	err := b.retry(ctx, attempt)
	if err != nil && b.lostConnection(err) {
		err = b.retry(ctx, attempt)
	}
	return err
}

// lostConnection reports an error that did not come from the server (no
// PgError), nor from the caller's context or a missing row, nor from the
// store's own checks (a guard, a plan, a schema too new): the connection
// failed under the statement.
func (b *pgBackend) lostConnection(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, pgx.ErrNoRows) || errors.Is(err, errRetry) || errors.Is(err, ErrSchemaTooNew) {
		return false
	}
	for _, own := range []error{recall.ErrNotFound, recall.ErrConflict, recall.ErrCorrupt, recall.ErrInvalidItem,
		recall.ErrInvalidMetadata, recall.ErrTooLarge, recall.ErrInvalidKey} {
		if errors.Is(err, own) {
			return false
		}
	}
	return true
}

// update runs fn in a READ COMMITTED transaction. Writers of one session
// serialise on its row lock (SELECT ... FOR UPDATE or the upsert of
// appendItems), which is all the isolation the store needs.
func (b *pgBackend) update(ctx context.Context, fn func(ctx context.Context, q querier) error) error {
	return b.writeError(b.retry(ctx, func() error {
		return pgx.BeginTxFunc(ctx, b.pool, pgx.TxOptions{}, func(tx pgx.Tx) error { return fn(ctx, pgQuerier{tx}) })
	}))
}

// writeError says so when a write failed on a lost connection after it
// was sent: whether it committed is unknown, and the caller should know
// it is not a plain failure (reading the session's LastSeq tells).
func (b *pgBackend) writeError(err error) error {
	if err != nil && b.lostConnection(err) && !pgconn.SafeToRetry(err) {
		return fmt.Errorf("connection to PostgreSQL lost, the write may or may not have been applied: %w", err)
	}
	return err
}

// retry runs attempt again when it failed in a way that a new attempt can
// resolve and that is sure to have changed nothing: errRetry, a deadlock or
// serialization failure (the server rolled the transaction back), or a
// connection that failed before anything was sent (a pooled connection
// that a server restart killed). An error after the commit was sent is not
// retried: the outcome is unknown, and retrying could apply it twice.
// An error of an unreachable server is returned wrapping
// recall.ErrUnavailable (unavailable).
func (b *pgBackend) retry(ctx context.Context, attempt func() error) error {
	var err error
	for range maxAttempts {
		err = attempt()
		if err == nil || !retryable(err) || ctx.Err() != nil {
			break
		}
	}
	return unavailable(ctx, err)
}

// unavailable returns err wrapping recall.ErrUnavailable when it is an
// error of an unreachable server (see unreachable) and ctx has not ended;
// any other error as it is. Every statement's error passes through it:
// the pgQuerier's, and retry's (a transaction that could not begin, the
// fast paths' statements).
func unavailable(ctx context.Context, err error) error {
	if err != nil && ctx.Err() == nil && unreachable(err) && !errors.Is(err, recall.ErrUnavailable) {
		return fmt.Errorf("%w: %w", recall.ErrUnavailable, err)
	}
	return err
}

// unreachable reports an error that says PostgreSQL could not be reached
// or the connection to it failed: a connection that could not be made
// (refused, no route, a timeout), one that broke under a statement, or
// the server's own "connection exception" and
// "shutting down" errors (classes 08 and 57P0x).
func unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}

func retryable(err error) bool {
	if errors.Is(err, errRetry) || pgconn.SafeToRetry(err) {
		return true
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") // deadlock_detected, serialization_failure
}

// appendItemsPG is Append's fast path on PostgreSQL: one statement, so one
// round trip and one implicit transaction. The upsert creates the session
// row or takes its row lock and advances last_seq by the batch size; the
// entries are numbered back from the new last_seq, and their search rows
// (see searchindex.go) numbered alike, indexed or in the tail as $19 says
// (inlineIndexed). Concurrent appenders to
// one session queue on that row lock, so each gets its own dense run. It
// moves updated_at to the batch's latest time, as recall.Meta.Apply does:
// items are conversation activity (and items are all this path writes).
// checked_seq follows last_seq when it was at it (see advanceChecked; the
// right-hand sides read the row as it was).
var appendItemsPG = appendItemsStmt(`DO UPDATE SET
		first_prompt = CASE WHEN s.first_prompt = '' THEN EXCLUDED.first_prompt ELSE s.first_prompt END,
		updated_at = GREATEST(s.updated_at, EXCLUDED.updated_at),
		item_count = s.item_count + EXCLUDED.item_count,
		last_seq = s.last_seq + EXCLUDED.last_seq,
		checked_seq = CASE WHEN s.checked_seq = s.last_seq THEN s.last_seq + EXCLUDED.last_seq ELSE s.checked_seq END,
		input_tokens = s.input_tokens + EXCLUDED.input_tokens,
		output_tokens = s.output_tokens + EXCLUDED.output_tokens,
		total_tokens = s.total_tokens + EXCLUDED.total_tokens`)

// createItemsPG is appendItemsPG for a session that must not exist: it
// writes nothing, and returns no row, when the session does.
var createItemsPG = appendItemsStmt(`DO NOTHING`)

// appendItemsStmt returns the statement of the item fast path whose
// upsert resolves a conflict on the session key with onConflict.
func appendItemsStmt(onConflict string) string {
	return `WITH s AS (
	INSERT INTO sessions AS s (project, id, subpath, created_at, updated_at, item_count, last_seq,
		checked_seq, input_tokens, output_tokens, total_tokens, first_prompt)
	VALUES ($1, $2, $3, $4, $5, $6, $6, $6, $7, $8, $9, $17)
	ON CONFLICT (project, id, subpath) ` + onConflict + `
	RETURNING s.sid, s.last_seq
), e AS (
	INSERT INTO entries (session, seq, kind, payload, time, input_tokens, output_tokens, total_tokens)
	SELECT s.sid, s.last_seq - $6 + u.ord, 'item', u.payload, u.time, u.it, u.ot, u.tt
	FROM s, unnest($10::bytea[], $11::timestamptz[], $12::int8[], $13::int8[], $14::int8[])
		WITH ORDINALITY AS u(payload, time, it, ot, tt, ord)
), x AS (
	INSERT INTO search (sid, seq, idx, role, time, live, body, grams, indexed)
	SELECT s.sid, s.last_seq - $6 + u.ord, 0, u.role, u.time, true, u.body, u.grams::int4[], $19::bool
	FROM s, unnest($15::text[], $16::text[], $11::timestamptz[], $18::text[]) WITH ORDINALITY AS u(role, body, time, grams, ord)
	WHERE u.role IS NOT NULL
)
SELECT last_seq FROM s`
}

// appendItems runs appendItemsPG. With the zero guard that is the whole
// write. Otherwise the session row is first read with FOR UPDATE in a
// transaction and the guard checked against it: an existing row stays
// locked until the upsert, and a missing one is created with
// createItemsPG, so that a session created by someone else meanwhile is
// noticed (and the transaction run again, to check the guard against it)
// rather than appended to.
func (b *pgBackend) appendItems(ctx context.Context, key recall.Key, guard recall.Guard, ib itemBatch) (int64, error) {
	n := len(ib.entries)
	payloads := make([][]byte, n)
	times := make([]time.Time, n)
	in, out, total := make([]*int64, n), make([]*int64, n), make([]*int64, n)
	for i, e := range ib.entries {
		payloads[i], times[i] = e.Data, e.Time
		if u := e.Usage; u != nil {
			in[i], out[i], total[i] = &u.InputTokens, &u.OutputTokens, &u.TotalTokens
		}
	}
	// The search rows of the items (see searchindex.go): a NULL role
	// where an item has none; NULL bigrams where its text has none.
	roles, bodies, grams := make([]*string, n), make([]*string, n), make([]*string, n)
	for i, r := range ib.search {
		if r != nil {
			roles[i], bodies[i], grams[i] = &r.role, &r.body, bigramsLiteral(r.body)
		}
	}
	args := []any{key.Project, key.Session, key.Subpath, ib.created, ib.updated, int64(n),
		ib.usage.InputTokens, ib.usage.OutputTokens, ib.usage.TotalTokens,
		payloads, times, in, out, total, roles, bodies, ib.prompt, grams, inlineIndexed(n)}
	var last int64
	if guard.IsZero() {
		err := b.retry(ctx, func() error {
			return b.pool.QueryRow(ctx, appendItemsPG, args...).Scan(&last)
		})
		if err == nil {
			b.appended(batchText(ib.search))
		}
		return last, b.writeError(err)
	}
	err := b.update(ctx, func(ctx context.Context, q querier) error {
		var sid, cur int64
		err := q.queryRow(ctx, lastSeqSQL+b.lockSQL(), key.Project, key.Session, key.Subpath).Scan(&sid, &cur)
		exists := err == nil
		if errors.Is(err, pgx.ErrNoRows) {
			err = nil
		}
		if err != nil {
			return err
		}
		if err := guard.Check(exists, cur); err != nil {
			return err
		}
		stmt := appendItemsPG
		if !exists {
			stmt = createItemsPG
		}
		err = q.queryRow(ctx, stmt, args...).Scan(&last)
		if !exists && errors.Is(err, pgx.ErrNoRows) {
			return errRetry // created meanwhile: check the guard against it
		}
		return err
	})
	if err == nil {
		b.appended(batchText(ib.search))
	}
	return last, err
}

// batchText is the length of the search text of a batch's items.
func batchText(rows []*searchRow) int {
	n := 0
	for _, r := range rows {
		if r != nil {
			n += len(r.body)
		}
	}
	return n
}

// insertSearch inserts search rows in one statement.
func (b *pgBackend) insertSearch(ctx context.Context, q querier, sid int64, rows []searchRow) error {
	if err := insertSearchPG(ctx, q, sid, rows); err != nil {
		return err
	}
	n := 0
	for _, r := range rows {
		n += len(r.body)
	}
	b.appended(n)
	return nil
}

// insertEntries inserts the whole batch with one statement over arrays,
// whose text is the same for any batch size (so pgx prepares it once).
func (b *pgBackend) insertEntries(ctx context.Context, q querier, sid int64, entries []recall.Entry) error {
	n := len(entries)
	seqs := make([]int64, n)
	kinds := make([]string, n)
	payloads := make([][]byte, n)
	times := make([]time.Time, n)
	in, out, total := make([]*int64, n), make([]*int64, n), make([]*int64, n)
	for i, e := range entries {
		seqs[i], kinds[i], times[i] = e.Seq, string(e.Kind), e.Time
		if len(e.Data) > 0 {
			payloads[i] = e.Data
		}
		if u := e.Usage; u != nil {
			in[i], out[i], total[i] = &u.InputTokens, &u.OutputTokens, &u.TotalTokens
		}
	}
	_, err := q.exec(ctx, `INSERT INTO entries (session, seq, kind, payload, time, input_tokens, output_tokens, total_tokens)
		SELECT $1, * FROM unnest($2::int8[], $3::text[], $4::bytea[], $5::timestamptz[], $6::int8[], $7::int8[], $8::int8[])`,
		sid, seqs, kinds, payloads, times, in, out, total)
	return err
}

// migrate creates the schema if missing and brings it to the latest
// version, holding an advisory lock so that concurrent openers of one
// schema migrate it once.
func (b *pgBackend) migrate(ctx context.Context, schema string) error {
	ms, err := loadMigrations("postgres")
	if err != nil {
		return err
	}
	h := fnv.New64a()
	h.Write([]byte("recall/sqlstore:" + schema))
	lock := int64(h.Sum64())
	return b.update(ctx, func(ctx context.Context, q querier) error {
		if _, err := q.exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lock); err != nil {
			return err
		}
		if _, err := q.exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return err
		}
		return applyMigrations(ctx, q, ms)
	})
}
