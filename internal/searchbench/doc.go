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
package searchbench
