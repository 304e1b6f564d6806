package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/recallkit/recall"
)

// sqlFloor is the physical floor of a SQL store: a bare single-row INSERT
// loop on the same database (a save of n items is one INSERT of n rows,
// one autocommit transaction). It does nothing else; the other workloads
// have no SQL floor.
type sqlFloor struct {
	unsupported
	db    *sql.DB
	table string

	mu    sync.Mutex
	stmts map[int]*sql.Stmt // prepared INSERTs by row count
	// placeholder numbers its parameters: "?" for SQLite.
	placeholder func(i int) string
}

func newSQLFloor(ctx context.Context, db *sql.DB, table string) (*sqlFloor, error) {
	ddl := fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (id INTEGER PRIMARY KEY, session TEXT NOT NULL, data TEXT NOT NULL)`, table)
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return nil, err
	}
	return &sqlFloor{
		unsupported: unsupported{why: "the SQL floor is an INSERT loop only"},
		db:          db,
		table:       table,
		stmts:       map[int]*sql.Stmt{},
		placeholder: func(int) string { return "?" },
	}, nil
}

func (f *sqlFloor) stmt(ctx context.Context, rows int) (*sql.Stmt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st := f.stmts[rows]; st != nil {
		return st, nil
	}
	values := make([]string, rows)
	for i := range values {
		values[i] = "(" + f.placeholder(2*i+1) + ", " + f.placeholder(2*i+2) + ")"
	}
	st, err := f.db.PrepareContext(ctx, fmt.Sprintf("INSERT INTO %s (session, data) VALUES %s", f.table, strings.Join(values, ", ")))
	if err != nil {
		return nil, err
	}
	f.stmts[rows] = st
	return st, nil
}

func (f *sqlFloor) append(ctx context.Context, session string, items []recall.Item) error {
	st, err := f.stmt(ctx, len(items))
	if err != nil {
		return err
	}
	args := make([]any, 0, 2*len(items))
	for _, it := range items {
		args = append(args, session, string(it))
	}
	_, err = st.ExecContext(ctx, args...)
	return err
}

func (f *sqlFloor) close() error {
	for _, st := range f.stmts {
		st.Close()
	}
	return f.db.Close()
}

// pgFloor is the same INSERT loop on PostgreSQL, over pgx as sqlstore uses
// it.
type pgFloor struct {
	unsupported
	pool  *pgxpool.Pool
	table string
}

func openPGFloor(ctx context.Context, dsn, schema, name string) (subject, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, err
	}
	table := schema + "." + name
	for _, ddl := range []string{
		"CREATE SCHEMA IF NOT EXISTS " + schema,
		"CREATE TABLE IF NOT EXISTS " + table + " (id BIGSERIAL PRIMARY KEY, session TEXT NOT NULL, data TEXT NOT NULL)",
	} {
		if _, err := pool.Exec(ctx, ddl); err != nil {
			pool.Close()
			return nil, err
		}
	}
	return &pgFloor{unsupported: unsupported{why: "the SQL floor is an INSERT loop only"}, pool: pool, table: table}, nil
}

func (f *pgFloor) append(ctx context.Context, session string, items []recall.Item) error {
	values := make([]string, len(items))
	args := make([]any, 0, 2*len(items))
	for i, it := range items {
		values[i] = fmt.Sprintf("($%d, $%d)", 2*i+1, 2*i+2)
		args = append(args, session, string(it))
	}
	_, err := f.pool.Exec(ctx, "INSERT INTO "+f.table+" (session, data) VALUES "+strings.Join(values, ", "), args...)
	return err
}

func (f *pgFloor) close() error {
	f.pool.Close()
	return nil
}
