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

// options are bench's flags, parsed.
type options struct {
	quick, write, keep bool
	doc, dir           string
	pgDSN, redisURL    string
	cpuprofile         string
	only, which        *regexp.Regexp // -contenders, -workloads
	sizes              []int          // -scale; nil: the side-by-side run
}

func run() int {
	o, ok := parseFlags()
	if !ok {
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	root, err := dataRoot(o.dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	if !o.keep {
		defer os.RemoveAll(root)
	}

	if o.cpuprofile != "" {
		stopProfile, err := startCPUProfile(o.cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer stopProfile()
	}

	cfg := fullConfig()
	if o.quick {
		cfg = quickConfig()
	}
	dataDir := o.dir
	if dataDir == "" {
		dataDir = filepath.Dir(root) // the random name says nothing
	}
	mach := describeMachine(dataDir)
	if mach.fs == "tmpfs" {
		fmt.Fprintln(os.Stderr, "bench: warning: the data directory is on tmpfs, where fsync costs nothing; use -dir on a disk")
	}

	p := planRun(ctx, o, cfg, root)
	if os.Getenv("RECALL_REQUIRE_SERVICES") == "1" {
		// CI wants every contender measured, as the tests want every server.
		if err := requireServices(p.contenders); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
	}
	h := newHarness(p.cfg, p.contenders, os.Stderr)
	start := time.Now()
	runWorkloads(ctx, h, p, o.which)
	h.dropAll(ctx)
	if err := ctx.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: interrupted")
		return 1
	}
	return printReport(o, h, p, mach, start)
}

// parseFlags parses the command line into options. On bad usage it says
// so, and ok is false.
func parseFlags() (o options, ok bool) {
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
		return o, false
	}
	onlyRE, err1 := regexp.Compile(*only)
	whichRE, err2 := regexp.Compile(*which)
	if err1 != nil || err2 != nil {
		fmt.Fprintln(os.Stderr, "bench: bad regexp:", firstErr(err1, err2))
		return o, false
	}
	var sizes []int
	if *scale != "" {
		var err error
		if sizes, err = parseSizes(*scale); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return o, false
		}
	}
	return options{
		quick:      *quick,
		write:      *write,
		keep:       *keep,
		doc:        *doc,
		dir:        *dir,
		pgDSN:      *pgDSN,
		redisURL:   *redisURL,
		cpuprofile: *cpuprofile,
		only:       onlyRE,
		which:      whichRE,
		sizes:      sizes,
	}, true
}

// dataRoot returns the directory the contenders keep their files in: dir,
// created if need be, or a new directory under $TMPDIR when dir is "".
func dataRoot(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "recall-bench-")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return dir, nil
}

// startCPUProfile starts writing a CPU profile of the run to path, and
// returns the function that stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// runPlan is what a run measures: the contenders, the workloads and the
// order they run in, with the configuration they run at, and the section
// of the doc the results go to.
type runPlan struct {
	cfg        config
	contenders []contender
	workloads  []*workload
	order      []string // workload ids
	sec        section
}

// planRun plans the run o asks for at cfg, the contenders keeping their
// files under root: with -scale, the file store's scale workloads at each
// size; else W1 to W7 in runOrder, with the contenders -contenders
// matches (recall's durable file store and the floors always).
func planRun(ctx context.Context, o options, cfg config, root string) runPlan {
	if o.sizes != nil {
		cfg = scaleConfig(cfg, o.sizes)
		p := runPlan{cfg: cfg, contenders: scaleContenders(root), workloads: scaleWorkloads(cfg), sec: atScale}
		for _, w := range p.workloads {
			p.order = append(p.order, w.id)
		}
		return p
	}
	p := runPlan{cfg: cfg, order: runOrder, sec: sideBySide}
	for _, c := range allContenders(ctx, root, o.pgDSN, o.redisURL) {
		if c.name == recallRow || c.kind == kindFloor || o.only.MatchString(c.name) {
			p.contenders = append(p.contenders, c)
		}
	}
	p.workloads = workloads(cfg)
	return p
}

// requireServices returns an error naming the first contender of cs
// whose server did not answer.
func requireServices(cs []contender) error {
	for _, c := range cs {
		if c.unavailable != "" {
			return fmt.Errorf("%s: %s, and RECALL_REQUIRE_SERVICES=1", c.name, c.unavailable)
		}
	}
	return nil
}

// runWorkloads runs the workloads of p that which matches, in p's order,
// logging each with the time it took, until ctx ends.
func runWorkloads(ctx context.Context, h *harness, p runPlan, which *regexp.Regexp) {
	for _, id := range p.order {
		i := slices.IndexFunc(p.workloads, func(w *workload) bool { return w.id == id })
		w := p.workloads[i]
		if !which.MatchString(w.id) {
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
}

// printReport prints the results of the run begun at start, of the
// workloads o.which matches, as Markdown, and writes them into o.doc's
// section with -write. It returns the exit status: 1 when the doc could
// not be written or a measurement failed.
func printReport(o options, h *harness, p runPlan, mach machine, start time.Time) int {
	ws := slices.DeleteFunc(p.workloads, func(w *workload) bool { return !o.which.MatchString(w.id) })
	r := &report{h: h, workloads: ws, machine: mach, command: command(), took: time.Since(start), endLoad: loadAverage()}
	md := r.markdown()
	if o.sizes != nil {
		md = r.scaleMarkdown()
	}
	fmt.Print(md)
	if o.write {
		if err := writeSection(o.doc, md, p.sec); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		fmt.Fprintln(os.Stderr, "bench: wrote", o.doc)
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
