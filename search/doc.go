// Package search is the search engine every recall store shares: what a
// query means (Parse, Query.Match, Normalize), what of an item is searched
// (Text), the hits of one session's log (SessionHits), the snippet around
// a match (Snippet), the order of hits and the cursor of a page (Compare,
// Cursor), and Scan, which searches any store by reading its logs and is
// the reference every index is checked against (storetest).
//
// A store answers recall.Search through its own index or with Scan. An
// index built on SQLite's FTS5 trigram tokenizer (the file store's and the
// SQLite store's) plans its candidate rows with TrigramMatch and reads
// them in windows of Window rows; each store supplies only its index
// access. An application calls recall.Search; it needs this package only
// to validate options early (Check).
package search
