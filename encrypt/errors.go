package encrypt

import "errors"

// The sentinel errors of package encrypt; compare with errors.Is. A read
// that fails with one of them returns nothing of the session, and a write
// writes nothing.
var (
	// ErrNoKey reports that no key is there for a project: none was
	// given, the key file, variable or command gave none, or the
	// KeyProvider has none for the project (a shredded project).
	ErrNoKey = errors.New("encrypt: no key")

	// ErrWrongKey reports data sealed under a key that none of the keys
	// given is: the error names the key ID the data needs and the IDs of
	// the keys given.
	ErrWrongKey = errors.New("encrypt: wrong key")

	// ErrBadKey reports key material that is not a key: not 32 bytes,
	// nor 64 hex digits or base64 of 32 bytes.
	ErrBadKey = errors.New("encrypt: bad key")
)
