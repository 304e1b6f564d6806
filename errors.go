package recall

import "errors"

// The sentinel errors of recall. Stores wrap them with context using %w;
// compare with errors.Is.
var (
	// ErrNotFound reports that a session (or the seq asked for) does not exist.
	ErrNotFound = errors.New("recall: not found")

	// ErrInvalidKey reports a key that fails validation. A key that fails
	// validation never reaches the storage layer.
	ErrInvalidKey = errors.New("recall: invalid key")

	// ErrInvalidItem reports an item that is not a single JSON object.
	// Nothing of a batch that holds such an item is written.
	ErrInvalidItem = errors.New("recall: invalid item")

	// ErrInvalidMetadata reports a metadata change over the limits of
	// ValidateMetadata. Nothing is written.
	ErrInvalidMetadata = errors.New("recall: invalid metadata")

	// ErrTooLarge reports an item larger than the store's maximum item size.
	ErrTooLarge = errors.New("recall: item too large")

	// ErrConflict reports a write that lost a race or contradicts the state
	// of the store: a Guard that failed (a session created twice, a
	// compare-and-swap whose seq is stale), a fork onto an existing
	// session, an import with a gap in its seqs.
	ErrConflict = errors.New("recall: conflict")

	// ErrCorrupt reports stored data that cannot be decoded.
	ErrCorrupt = errors.New("recall: corrupt data")

	// ErrUnsupported reports an optional ability the store does not have.
	ErrUnsupported = errors.New("recall: unsupported")

	// ErrInvalidQuery reports a search query that is empty or cannot be
	// parsed (an unterminated quote, say), or a search option out of range.
	ErrInvalidQuery = errors.New("recall: invalid query")

	// ErrClosed reports a call on a store that has been closed.
	ErrClosed = errors.New("recall: store closed")

	// ErrUnavailable reports that a store's backend could not be
	// reached: its server refused or dropped the connection, did not
	// answer in time, or the store's connection pool was closed. It is
	// the outage of a service, not a fault of the call: the same call may
	// succeed later. A read failed with it wrote nothing; a write whose
	// connection failed after it was sent may or may not have been
	// applied (the stores say which in the error's text). The stores
	// over a server (sqlstore on PostgreSQL, redisstore) return it,
	// wrapped with the driver's error.
	ErrUnavailable = errors.New("recall: store unavailable")

	// ErrNothingToRedo reports a Redo with no rewind to undo: the session
	// was never rewound, every rewind was redone, or its view changed
	// since.
	ErrNothingToRedo = errors.New("recall: nothing to redo")
)
