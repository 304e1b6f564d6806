// Package encrypt keeps a recall store's conversations encrypted at rest:
// Wrap returns a recall.Store that seals items and titles before they
// reach the store it wraps (a file store, SQLite, PostgreSQL, Redis, a
// mirror and so its replica) and opens them on the way out, so the disk,
// the database, a replica or a backup never hold them in plaintext.
//
// # Keys
//
// Each session has its own data key (DEK): 32 random bytes, made by the
// process that first writes to the session, and wrapped (AES-256-GCM)
// under a key-encryption key (KEK) that the caller gives through a
// KeyProvider: a Keyring (one key for every project), DirKeys (a key file
// per project, as a service keeps one per user), or any ProviderFunc.
// LoadKEK reads a key from a file, an environment variable or the output
// of a command (a password manager, a KMS client). The wrapped DEK rides
// in every sealed payload with the ID of its KEK, so the wrapper needs no
// side store and a payload opens with the KEK alone. Destroying a
// project's KEK makes its sessions unreadable everywhere they were copied
// (crypto-shredding).
//
// # What is sealed
//
// Sealed (AES-256-GCM under the session's DEK, with the session's key as
// associated data): every item, every title, and the items of
// compactions. Meta.FirstPrompt, which a store derives from the items, is
// derived by the wrapper from the opened log instead.
//
// Not sealed, because lists, guards, cleanup and replication need them:
// keys (project, session ID, subpath), seqs, times, entry kinds, item
// counts, token usage, archive and pin flags, labels, the metadata map,
// fork origins, and the refs of pops and removals. The size of each item
// shows through its sealed form.
//
// A sealed item is a JSON object, so every store keeps it as it keeps any
// item; items written before the store was encrypted read as they are.
// Seqs are assigned by the wrapped store after sealing, so a sealed
// payload is bound to its session, not to its seq: someone who can write
// to the storage could reorder or repeat a session's sealed items, not
// read or alter them.
//
// # Search
//
// The wrapped store's index would hold only ciphertext. The Store
// searches by scanning (search.Scan): it lists the sessions, opens each
// in memory and matches its text; nothing opened is written anywhere.
//
// # Rotation
//
// Rotate wraps every session's data keys under the current KEK by
// appending one KindRewrap entry per session; no log is rewritten. It is
// resumable, and the old KEK can be destroyed once it has run.
package encrypt
