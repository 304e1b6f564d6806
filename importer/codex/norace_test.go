//go:build !race

package codex

const raceEnabled = false
