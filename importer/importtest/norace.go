//go:build !race

package importtest

const raceEnabled = false
