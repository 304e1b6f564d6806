// Package searchbench holds the side-by-side benchmark of search
// (docs/BENCHMARKS.md, "Search"): one synthetic corpus, mixed English and
// Chinese, loaded into the file store, SQLite and PostgreSQL, and the
// first page of hits for a rare word, a common word, a phrase and CJK
// terms on each store's index, against a literal scan of the file store's
// JSONL logs, the way an agent that greps its transcripts searches (the
// baseline, in the same run). It has no code but its benchmarks:
//
//	go test -run '^$' -bench . -benchtime 20x ./internal/searchbench
//
// RECALL_SEARCH_BENCH_SESSIONS sets the corpus size in sessions of 100
// items (default 1,000: 100,000 items; 10000 is the 1,000,000);
// RECALL_SEARCH_BENCH_STORES, a comma-separated list, limits the stores
// beside the file store and the scan (sqlite, postgres; default both).
// RECALL_SEARCH_BENCH_DIR keeps the corpus between runs: the file store's
// home and the SQLite database are in that directory, PostgreSQL's schema
// is recall_searchbench_keep_N (N sessions), none is removed, and a store
// already loaded there (a marker file says so) is not loaded again. A
// kept corpus is the one an earlier run built, schema migrations
// included: remove the directory and the schema to build it anew.
package searchbench
