//go:build race

package claudecode

// raceEnabled skips the 50 MB import under the race detector, where it
// takes minutes; it runs in every test run without -race.
const raceEnabled = true
