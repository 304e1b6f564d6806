//go:build race

package gemini

// raceEnabled shrinks the 50 MB import to 10 MB under the race detector,
// where the full size takes minutes.
const raceEnabled = true
