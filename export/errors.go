package export

import "errors"

// The sentinel errors of package export, wrapped with context; compare
// with errors.Is. Errors of the store an exporter reads or an import
// writes (recall.ErrNotFound, recall.ErrConflict, ...) come through
// wrapped as they are.
var (
	// ErrInvalidLog reports input that is not a recall JSONL export, or
	// one whose lines contradict each other (a seq out of order, an entry
	// before any header, a later format version). Nothing is imported
	// from it.
	ErrInvalidLog = errors.New("export: invalid recall log")

	// ErrUnknownFormat reports a format name ParseFormat does not know.
	ErrUnknownFormat = errors.New("export: unknown format")
)
