//go:build race

package importtest

const raceEnabled = true
