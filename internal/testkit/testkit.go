// Package testkit holds what recall's tests share beyond the services of
// package testsvc: the size of a loop in each test tier, replayable random
// seeds, the harness that runs the test binary again as a child process
// to kill it with SIGKILL, and the loop of the benchmarks that time an
// operation against its baseline in the same run (Paired).
//
// The fast tier is `go test -short` (README's test command): a loop there
// shrinks rather than skips, so every code path still runs on every push.
// The long tier (docs/TESTING.md) runs without -short, at full size.
package testkit

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Size returns short in the fast tier (go test -short) and full otherwise.
func Size(short, full int) int {
	if testing.Short() {
		return short
	}
	return full
}

// SeedEnv is the environment variable that sets the random seed of every
// test that draws one (and of the children they start), to replay a
// failure: the seed is in the failed test's log.
const SeedEnv = "RECALL_TEST_SEED"

var (
	seedOnce sync.Once
	seedBase uint64
)

// base is the run's seed: RECALL_TEST_SEED, or the clock.
func base() uint64 {
	seedOnce.Do(func() {
		if s := os.Getenv(SeedEnv); s != "" {
			if v, err := strconv.ParseUint(s, 10, 64); err == nil {
				seedBase = v
				return
			}
			fmt.Fprintf(os.Stderr, "testkit: %s=%q is not an unsigned integer; using the clock\n", SeedEnv, s)
		}
		seedBase = uint64(time.Now().UnixNano())
	})
	return seedBase
}

// Seed returns the test's random seed and logs it, so a failure says how to
// replay it: RECALL_TEST_SEED when set, otherwise one drawn from the clock.
// Tests of one run with the variable set all get the same seed.
func Seed(t testing.TB) uint64 {
	t.Helper()
	s := base()
	t.Logf("random seed %d (replay with %s=%d)", s, SeedEnv, s)
	return s
}

// Rand returns a generator seeded with Seed(t).
func Rand(t testing.TB) *rand.Rand {
	t.Helper()
	s := Seed(t)
	return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
}

// ChildRand returns the generator of a child process: seeded from
// RECALL_TEST_SEED, which Command passes on from the parent, mixed with
// salt so that children of one run draw different numbers.
func ChildRand(salt uint64) *rand.Rand {
	s := base()
	return rand.New(rand.NewPCG(s, salt))
}
