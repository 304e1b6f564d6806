//go:build !race

package claudecode

const raceEnabled = false
