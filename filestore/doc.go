// Package filestore is recall's embedded default store: every session is an
// append-only JSONL file under a home directory, by default ~/.recall (or
// $RECALL_HOME).
//
// # Layout
//
//	<home>/projects/<project>/
//	    <session>.jsonl                    the session's entry log
//	    <session>/<subpath>.jsonl          subagent records (Key.Subpath), e.g.
//	    <session>/subagents/agent-7.jsonl
//	    <session>.jsonl#torn-<n>           bytes of a torn tail, kept aside
//	    #index-v5                          the List cache (see Guarantees)
//	<home>/#search-v1.db                   the search index (see Store.Search)
//
// Every name the store makes for itself holds a '#', a byte no key may
// contain, so it can never collide with a session. Session "a" has the
// file a.jsonl and session "a.jsonl" would keep its records in the
// directory a.jsonl/: of two such sessions in one project, the second to
// need the name gets recall.ErrConflict.
//
// # Log format
//
// One entry per line, as a JSON object whose fields come in this order:
//
//	{"seq":3,"kind":"item","time":"2025-06-01T10:00:00.123456Z","usage":{...},"data":{...}}
//
// "data" holds the payload verbatim. A payload whose bytes cannot sit on
// one line unchanged (a pretty-printed item with newlines, leading or
// trailing blanks, or bytes that are not JSON) is stored as a JSON string
// in "data_text" instead, or in "data_b64" when it is not valid UTF-8, so
// the bytes that went in are the bytes that come out. Every line of a
// batch but the last carries "more":true: a batch whose last line is
// missing was cut by a crash and is not part of the log.
//
// # Guarantees
//
//   - Append encodes the whole batch first and writes it with a single
//     write on an O_APPEND file, under an in-process lock and an advisory
//     file lock (flock), so writers in any number of goroutines and
//     processes never interleave. Seqs come from the log itself, under the
//     lock, and so does the check of Append's recall.Guard: a guard that
//     fails writes nothing and creates nothing (no log, no directory, no
//     index record), whichever process removed or extended the session.
//   - A call whose context has ended returns its error and changes
//     nothing: a write looks at its context last before the write that
//     commits it. Reads look at it as they go (every chunk of a log read,
//     every directory listed), so a Load of a huge log can be cancelled.
//   - With [SyncAlways] (the default) the log is fsynced before Append
//     returns: an acknowledged batch survives SIGKILL and power loss.
//     With [SyncNever] it is not: SIGKILL still loses nothing Append
//     acknowledged (the kernel holds it), but a power loss or a kernel
//     crash may lose the batches of the last seconds; the log stays
//     loadable. TestSyncPolicies checks both promises on an ext4 file
//     system shut down under a writer (see docs/TESTING.md).
//   - A write that fails — the disk is full (ENOSPC), the home is
//     read-only — returns an error that wraps the system's and names the
//     path, and leaves the log byte for byte as it was: the bytes of a
//     short write are cut off again before the error returns.
//   - A torn tail (a crash mid-write) is ignored by readers and found by
//     the next writer when it opens the log: its bytes are moved into a
//     side file and cut off, so the next batch starts on a clean line. A
//     complete line that does not decode is skipped, counted in
//     Meta.Corrupt and left where it is: no write or rewrite drops it. An
//     item entry whose item is not a JSON object (written by another
//     program) decodes, keeps its seq, and is likewise left out of the
//     view and counted in Meta.Corrupt (see recall.Entry.Item).
//   - Load reads a log once, up to its size when opened, and derives the
//     metadata from the same bytes as the entries; Items returns the
//     LastSeq of the bytes its view was read from. Each is one snapshot.
//   - Readers take no lock: a batch is one write, so they see all of it or
//     none of it.
//   - Files the store creates (a new session, a fork, the index) are
//     written to a temporary file, fsynced, linked or renamed into place,
//     and their directory is fsynced.
//   - List reads the index, never the logs: a per-project cache of each
//     log's Meta (the metadata map included), tagged with the log's inode,
//     size and mtime. Every List
//     compares it with a directory read plus one stat per log and
//     re-derives only the logs that changed (usually by reading just their
//     new bytes), so a session written by another process or copied in by
//     hand is never hidden, and a missing, stale or damaged index costs
//     reads, never a wrong answer. The index file's name carries its
//     version: #index-v1, whose Updated moved with title and meta entries,
//     is never read; its logs are derived afresh and it is removed.
//   - GetItems(limit) reads the log backwards from its end: its cost
//     depends on limit, not on the length of the session.
//   - ReadItems reads one page of a view from one snapshot of the log: the
//     view's pops and removes (and its last clear or compaction) line by
//     line where the log's index record says they are, and the page's
//     items from the place a search over the log by seq finds (seqs grow
//     along the log). Its cost depends on the page and on those entries,
//     not on the length of the session.
//   - Search answers from an index beside the logs, an SQLite database
//     with an FTS5 trigram index that nothing writes in the append path:
//     each search first brings it up to date from the logs (one stat per
//     log, then the bytes each changed log gained since it was indexed;
//     a log rewritten or replaced is indexed afresh, a removed one
//     dropped), so it never hides a hit nor shows a removed session. A
//     missing or damaged index is built again from the logs; where it
//     cannot be written (a read-only home) the logs are scanned instead.
package filestore
