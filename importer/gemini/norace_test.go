//go:build !race

package gemini

const raceEnabled = false
