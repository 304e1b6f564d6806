// Package export takes sessions out of a recall store, and brings
// recall's own export back in.
//
// Load reads one session whole (its metadata, its entry log and the
// subagent records under it); Write and the writers render it. Stream
// renders a session straight from a store instead, reading its log a
// page at a time, so its memory is bounded by a page, not by the
// session; it writes the same bytes. The formats:
//
//   - [Markdown]: for people, readable in a pull request on GitHub;
//   - [HTML]: one self-contained page, every piece of content escaped, under
//     a Content-Security-Policy that forbids scripts;
//   - [JSON]: the item list of the OpenAI Conversations API
//     ({"object":"list","data":[…]}), so other tools read it;
//   - [JSONL]: recall's own log, lossless: a header line with the session's
//     metadata, then every entry of its log as stored.
//
// The history Markdown and HTML show (every item the log ever held, with
// notes where a fork, a compaction or a clear changed the view) is read
// the same way for a terminal: [StreamText] writes it as plain text, and
// [HistoryItems] hands on its items. [StreamRecord] renders one record
// without the subagent records under it.
//
// [ImportJSONL] reads a JSONL export back into any store, a line at a time
// and a batch of entries at a time, so an export of any size imports in
// bounded memory: a round trip gives a session whose items are the same
// bytes. [ScanJSONL] yields its lines one by one, checked; [ReadJSONL]
// reads it whole into [Session] values, which [Import] writes.
package export
