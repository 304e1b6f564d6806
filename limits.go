package recall

import "time"

// The limits and defaults of recall, the same in every store.
const (
	// DefaultListLimit is the page size List uses when ListOptions.Limit
	// is 0.
	DefaultListLimit = 50
	// DefaultSearchLimit is the page size Search uses when
	// SearchOptions.Limit is 0; MaxSearchLimit is the largest page it
	// returns.
	DefaultSearchLimit = 20
	MaxSearchLimit     = 1000
	// DefaultMaxItemSize is the largest item a store accepts unless its
	// options say otherwise: 32 MiB.
	DefaultMaxItemSize = 32 << 20
	// MaxIDLen is the longest session ID, project key or subpath segment
	// accepted.
	MaxIDLen = 128
	// MaxFirstPrompt is the longest Meta.FirstPrompt, in bytes.
	MaxFirstPrompt = 200
	// DefaultTrashGrace is how long a session stays in the trash before
	// EmptyTrash, as the CLI's gc and the service run it, deletes it for
	// good, unless configured otherwise.
	DefaultTrashGrace = 30 * 24 * time.Hour
	// The limits of a session's metadata map, OpenAI's for conversations:
	// pairs, and bytes of a key and of a value.
	MaxMetadataPairs    = 16
	MaxMetadataKeyLen   = 64
	MaxMetadataValueLen = 512
)
