//go:build race

package main

// raceEnabled: the tests run with -race. The end-to-end tests then build
// the binary with -race too in the long tier only (RECALL_LONG=1); see
// raceBinary.
const raceEnabled = true
