//go:build race

package storetest

// raceEnabled reports a build with the race detector, which makes
// byte-crunching work 10 to 20 times slower; see edgeSizes.
const raceEnabled = true
