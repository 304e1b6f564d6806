//go:build race

package filestore_test

// raceBuild reports a build with the race detector, under which the
// SQLite of the search index (C translated to Go, every memory access
// instrumented) runs many times slower: the search crash tests run fewer
// rounds.
const raceBuild = true
