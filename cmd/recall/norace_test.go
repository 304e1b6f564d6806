//go:build !race

package main

// raceEnabled: the tests run without -race, so the binary is built
// without it too (see raceBinary).
const raceEnabled = false
