package main

import (
	"context"
	"errors"
	"time"

	"github.com/recallkit/recall"
)

// subject is one contender opened on one scope of data: the operations the
// workloads need, in the contender's own terms. An operation the contender
// cannot do returns an error from notAvailable, which the report prints as
// "n/a" with its reason.
type subject interface {
	// append saves items to session as one durable save (as durable as the
	// contender is configured to be), creating the session if needed.
	append(ctx context.Context, session string, items []recall.Item) error
	// load returns the newest limit items of session, oldest first; all
	// of them when limit <= 0.
	load(ctx context.Context, session string, limit int) ([]recall.Item, error)
	// fork copies session src, whole, to the new session dst.
	fork(ctx context.Context, src, dst string) error
	// pop removes the newest item of session and returns it.
	pop(ctx context.Context, session string) (recall.Item, error)
	// list returns the IDs of the limit most recently updated sessions of
	// the scope, newest first.
	list(ctx context.Context, limit int) ([]string, error)
	close() error
}

// seeder is a subject that can write a whole session in one call; set-up
// uses it instead of many saves when the subject has it.
type seeder interface {
	seed(ctx context.Context, session string, items []recall.Item) error
}

// listSeeder is a subject that can write a whole session whose last update
// is at a given time. W3's set-up uses it to write many sessions in
// parallel and still fix the order the list must return them in.
type listSeeder interface {
	seedAt(ctx context.Context, session string, items []recall.Item, updated time.Time) error
}

// kind groups the rows of the report.
type kind int

const (
	kindRecall   kind = iota // one of recall's stores
	kindPeer                 // a library a user would otherwise pick
	kindBaseline             // a simple design recall replaces
	kindFloor                // the physical limit of the medium
)

// medium says which physical floor a contender's ratios compare against.
type medium string

const (
	mediumFile     medium = "file"
	mediumModernc  medium = "sqlite"       // modernc.org/sqlite, as sqlstore uses it
	mediumMattn    medium = "sqlite-mattn" // mattn/go-sqlite3 (cgo), as LangChainGo uses it
	mediumPostgres medium = "postgres"
	mediumRedis    medium = "redis"
)

// contender is one row of the report.
type contender struct {
	name string
	kind kind
	// medium selects the floor row of the same medium for the ratios.
	medium medium
	// note is shown under the tables: what the contender is and how it is
	// configured.
	note string
	// unavailable, when set, is why the contender cannot run at all (its
	// package is not built in, its server is down); every cell says n/a.
	unavailable string
	// skip names the workloads the contender sits out, with the reason the
	// report gives. A floor row that sits a workload out is left out of
	// its table.
	skip map[string]string
	// listData names the contender whose W3 data this one lists: it
	// writes none of its own (recall's file store without fsync lists the
	// durable one's files; head/tail and the file floor list simple
	// JSONL's, as Claude Code's picker reads such files).
	listData string
	// stateless marks a contender that keeps nothing between calls, so
	// W3's warm list is its cold list, measured once.
	stateless bool
	// noListCheck marks a contender whose list result is not checked: a
	// floor that reads the directory without sorting it.
	noListCheck bool
	// open opens (creating when new) the contender's data in scope. A scope
	// is opened again to measure a cold list.
	open func(ctx context.Context, scope string) (subject, error)
	// dropScope deletes the data of scope once its workloads are done.
	dropScope func(ctx context.Context, scope string) error
}

// naError marks an operation a contender cannot do.
type naError struct{ reason string }

func (e *naError) Error() string { return "n/a: " + e.reason }

// notAvailable returns the error a subject gives for an operation it
// cannot do, with the reason the report shows.
func notAvailable(reason string) error { return &naError{reason: reason} }

// naReason returns the reason of an n/a error, or "" for any other error.
func naReason(err error) string {
	var na *naError
	if errors.As(err, &na) {
		return na.reason
	}
	return ""
}

// unsupported is embedded by subjects that implement only append; each
// other operation reports the reason given.
type unsupported struct{ why string }

func (u unsupported) load(context.Context, string, int) ([]recall.Item, error) {
	return nil, notAvailable(u.why)
}

func (u unsupported) fork(context.Context, string, string) error { return notAvailable(u.why) }

func (u unsupported) pop(context.Context, string) (recall.Item, error) {
	return nil, notAvailable(u.why)
}

func (u unsupported) list(context.Context, int) ([]string, error) {
	return nil, notAvailable(u.why)
}
