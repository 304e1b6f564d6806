// Command bench runs recall's stores side by side with the peers a user
// would otherwise pick, simple baselines and the physical floors, on the
// workloads W1 to W7 of docs/BENCHMARKS.md, and prints the results as
// Markdown.
//
// It is its own module, so recall's go.mod never depends on the peers. From
// the repository root:
//
//	go -C bench run . -quick     # smoke run, about a minute; writes nothing
//	go -C bench run . -write     # full run (under 10 minutes on 2 cores),
//	                             # then updates docs/BENCHMARKS.md
//	go -C bench run . -scale 10000,100000 -write
//	                             # the file store at scale (a few minutes)
//
// -scale runs, instead of W1 to W7, the scale workloads of scale.go:
// recall's durable file store in a project of each given number of
// sessions, against the floor of each operation measured in the same run.
// With -write it rewrites the section between the scale markers;
// -contenders does not apply (the file store and its floor are the rows).
//
// The full run without -write only prints. -write rewrites the part of
// docs/BENCHMARKS.md between the side-by-side markers and nothing else; it
// is refused with -quick, whose numbers are too small to publish.
//
// PostgreSQL and Redis come from -postgres and -redis (defaults: the
// RECALL_TEST_POSTGRES and RECALL_TEST_REDIS variables, then the local
// servers); a contender whose server does not answer is reported as n/a,
// unless RECALL_REQUIRE_SERVICES=1 (as in CI), which makes it an error.
// The exit status is 1 when any measurement failed (n/a is not a failure),
// 2 on bad usage.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

// Default servers, as the repository's tests use them.
const (
	defaultPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	defaultRedis    = "redis://127.0.0.1:6379/0"
)

func main() { os.Exit(run()) }

func run() int {
	var (
		quick      = flag.Bool("quick", false, "smoke run: small sizes, about a minute; never writes the doc")
		write      = flag.Bool("write", false, "write the results into -doc (refused with -quick)")
		doc        = flag.String("doc", "../docs/BENCHMARKS.md", "the Markdown file -write updates, between its side-by-side markers")
		dir        = flag.String("dir", "", "where the contenders keep their files (default: a new directory under $TMPDIR, removed at the end)")
		keep       = flag.Bool("keep", false, "keep the data directory")
		pgDSN      = flag.String("postgres", envOr("RECALL_TEST_POSTGRES", defaultPostgres), "PostgreSQL DSN")
		redisURL   = flag.String("redis", envOr("RECALL_TEST_REDIS", defaultRedis), "Redis URL")
		only       = flag.String("contenders", "", "regexp: run only the contenders it matches (recall's durable file store and the floors always run)")
		which      = flag.String("workloads", "", "regexp: run only the workloads it matches (W1 ... W7)")
		cpuprofile = flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
		scale      = flag.String("scale", "", "comma-separated project sizes, such as 10000,100000: run the file store's scale workloads at each instead of W1 to W7")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go -C bench run . [-quick | -write] [flags]\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 || *quick && *write {
		flag.Usage()
		return 2
	}
	onlyRE, err1 := regexp.Compile(*only)
	whichRE, err2 := regexp.Compile(*which)
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "bench: bad regexp:", firstErr(err1, err2))
		return 2
	}
	var sizes []int
	if *scale != "" {
		var err error
		if sizes, err = parseSizes(*scale); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 2
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	root := *dir
	if root == "" {
		var err error
		if root, err = os.MkdirTemp("", "recall-bench-"); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	} else if err := os.MkdirAll(root, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if !*keep {
		defer os.RemoveAll(root)
	}

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}

	cfg := fullConfig()
	if *quick {
		cfg = quickConfig()
	}
	dataDir := *dir
	if dataDir == "" {
		dataDir = filepath.Dir(root) // the random name says nothing
	}
	mach := describeMachine(dataDir)
	if mach.fs == "tmpfs" {
		fmt.Fprintln(os.Stderr, "bench: warning: the data directory is on tmpfs, where fsync costs nothing; use -dir on a disk")
	}

	var (
		cs    []contender
		ws    []*workload
		order = runOrder
		sec   = sideBySide
	)
	if sizes != nil {
		cfg = scaleConfig(cfg, sizes)
		cs = scaleContenders(root)
		ws = scaleWorkloads(cfg)
		order = nil
		for _, w := range ws {
			order = append(order, w.id)
		}
		sec = atScale
	} else {
		for _, c := range allContenders(ctx, root, *pgDSN, *redisURL) {
			if c.name == recallRow || c.kind == kindFloor || onlyRE.MatchString(c.name) {
				cs = append(cs, c)
			}
		}
		ws = workloads(cfg)
	}
	if os.Getenv("RECALL_REQUIRE_SERVICES") == "1" {
		// CI wants every contender measured, as the tests want every server.
		for _, c := range cs {
			if c.unavailable != "" {
				fmt.Fprintf(os.Stderr, "bench: %s: %s, and RECALL_REQUIRE_SERVICES=1\n", c.name, c.unavailable)
				return 1
			}
		}
	}
	h := newHarness(cfg, cs, os.Stderr)
	start := time.Now()
	for _, id := range order {
		i := slices.IndexFunc(ws, func(w *workload) bool { return w.id == id })
		w := ws[i]
		if !whichRE.MatchString(w.id) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		t := time.Now()
		h.logf("%s · %s", w.id, w.title)
		w.run(ctx, h, w)
		h.logf("  %v", time.Since(t).Round(time.Second))
	}
	h.dropAll(ctx)
	if err := ctx.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: interrupted")
		return 1
	}

	ws = slices.DeleteFunc(ws, func(w *workload) bool { return !whichRE.MatchString(w.id) })
	r := &report{h: h, workloads: ws, machine: mach, command: command(), took: time.Since(start), endLoad: loadAverage()}
	md := r.markdown()
	if sizes != nil {
		md = r.scaleMarkdown()
	}
	fmt.Print(md)
	if *write {
		if err := writeSection(*doc, md, sec); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "bench: wrote", *doc)
	}
	if n := h.errorCount(); n > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d measurements failed\n", n)
		return 1
	}
	return 0
}

// command returns the command line as run from the repository root.
func command() string {
	return strings.TrimSpace("go -C bench run . " + strings.Join(os.Args[1:], " "))
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
