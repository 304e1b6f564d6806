package main

import "time"

// config sizes one run of the harness. fullConfig is what BENCHMARKS.md
// reports; quickConfig is the CI smoke run: same code paths, small sizes.
type config struct {
	// runs is how many times each cell is measured; the median is reported.
	runs int
	// minRunTime is how long one run of a short operation repeats it, so
	// a run of a 100 µs operation is not one noisy sample.
	minRunTime time.Duration
	// maxOpsPerRun caps those repeats (each W4 fork adds a session to the
	// disk).
	maxOpsPerRun int

	// W1: chat turns, each three durable appends.
	turns int
	// W2, W4, W6: the size of the big session, in items.
	bigItems int
	// W2: how many of the newest items a resume loads.
	tailItems int
	// W3: project sizes listed, and items per session in them.
	listSessions []int
	listItems    int
	// W3: the page size.
	pageSize int
	// W5: concurrent writers and the chat turns each one writes.
	writers     int
	writerTurns int
}

func fullConfig() config {
	return config{
		runs:         5,
		minRunTime:   100 * time.Millisecond,
		maxOpsPerRun: 200,
		turns:        200,
		bigItems:     10_000,
		tailItems:    50,
		listSessions: []int{10_000, 1_000},
		listItems:    100,
		pageSize:     50,
		writers:      16,
		writerTurns:  10,
	}
}

// quickConfig is the smoke run: every workload and contender, in about a
// minute, with numbers too small to publish.
func quickConfig() config {
	return config{
		runs:         3,
		minRunTime:   10 * time.Millisecond,
		maxOpsPerRun: 20,
		turns:        20,
		bigItems:     1_000,
		tailItems:    50,
		listSessions: []int{300, 100},
		listItems:    10,
		pageSize:     50,
		writers:      16,
		writerTurns:  3,
	}
}
