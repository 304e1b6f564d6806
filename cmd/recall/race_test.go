//go:build race

package main

// raceEnabled makes the end-to-end tests build the binary with -race too.
const raceEnabled = true
