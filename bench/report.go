package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"time"
)

// section is a part of docs/BENCHMARKS.md that the harness rewrites,
// between its markers; everything outside them is left alone. heading
// names the section the markers are put in when the file has none.
type section struct{ begin, end, heading string }

// The sections: the side-by-side run of W1 to W7, and the file store at
// scale (-scale).
var (
	sideBySide = section{
		begin:   "<!-- side-by-side:begin: written by the harness in bench/; edit outside the markers -->",
		end:     "<!-- side-by-side:end -->",
		heading: "Side-by-side",
	}
	atScale = section{
		begin:   "<!-- scale:begin: written by the harness in bench/ (-scale); edit outside the markers -->",
		end:     "<!-- scale:end -->",
		heading: "The file store at scale",
	}
)

// The names of the rows the ratios and targets refer to.
const (
	recallRow   = "recall file (durable)"
	simpleRow   = "simple JSONL"
	langRow     = "LangChainGo SQLite"
	headTailRow = "head/tail listing"
)

// Targets of the issue.
const (
	headTailTarget = 20  // W3: recall at least this many times faster
	floorTarget    = 0.7 // W1, W2: recall at least this fraction of the floor's speed
	// W7: a store's turn p99 at most this many times its own p50, and
	// SQLite's p99 at most sdkTailTarget times the Agents SDK schema's.
	tailTarget    = 2.0
	sdkTailTarget = 1.5
)

// report renders the results as Markdown.
type report struct {
	h         *harness
	workloads []*workload
	machine   machine
	command   string
	took      time.Duration
	// endLoad is the load average when the run ended, "" when unknown.
	endLoad string
}

// header writes where, when and by which command the run was measured.
func (r *report) header(b *strings.Builder) {
	m := r.machine
	fmt.Fprintf(b, "Measured %s on %d cores (%s), %s RAM, %s, %s; data under `%s` (%s). Load average at the start: %s",
		m.date.Format("2006-01-02 15:04 MST"), m.cores, m.cpu, m.memory, m.os, m.goVersion, m.dataDir, m.fs, m.load)
	if r.endLoad != "" {
		fmt.Fprintf(b, ", at the end: %s", r.endLoad)
	}
	fmt.Fprintf(b, ".\n\nCommand, from the repository root: `%s` (the whole run took %v).\n\n", r.command, r.took.Round(time.Second))
}

func (r *report) markdown() string {
	var b strings.Builder
	r.header(&b)
	fmt.Fprintf(&b, "Every figure is the median of %d runs. Within a run the contenders take turns, operation by "+
		"operation (W1: chat turn by chat turn, starting each turn one contender further along, so that none always "+
		"follows the same neighbour's disk work; W5: one contender's writers after the other's), so they share the "+
		"same stretch of machine load; a short operation "+
		"repeats until it has run for %v (at most %d times) and the run counts its mean. The ratios are the "+
		"medians of the per-run ratios, which cancels the load's drift between runs. Results are checked outside "+
		"the timing: a load must return every item saved, in order and byte for byte, a pop the newest item, a "+
		"list the right page, or the cell fails.\n\n",
		r.h.cfg.runs, r.h.cfg.minRunTime, r.h.cfg.maxOpsPerRun)
	b.WriteString("**Reading the ratios.** *× recall* is a contender's time divided by the time of recall's file store " +
		"(durable: fsync on every save) on the same metric, so 20× means recall is 20 times faster; for the " +
		"throughput of W5 it is recall's rate divided by the contender's. *floor* is the time of the physical floor " +
		"of the contender's medium divided by the contender's time: 100% is as fast as the bare disk or database " +
		"work, 70% is \"within 0.7× of the floor\".\n\n")

	r.targets(&b)
	r.tailTargets(&b)
	for _, w := range r.workloads {
		r.table(&b, w)
	}
	r.contenders(&b)
	return b.String()
}

// targets writes the table of the targets.
func (r *report) targets(b *strings.Builder) {
	b.WriteString("### Targets\n\n")
	fmt.Fprintf(b, "recall's file store (durable) against each rival: how many times faster it is (✓ when it beats "+
		"simple JSONL and LangChainGo, and head/tail by %d× on W3), and the share of the floor's speed it reaches "+
		"(✓ at %.0f%% or more, on W1 and W2).\n\n", headTailTarget, floorTarget*100)
	b.WriteString("| metric | vs simple JSONL | vs LangChainGo | vs head/tail | of floor |\n")
	b.WriteString("| --- | --: | --: | --: | --: |\n")
	for _, w := range r.workloads {
		for _, m := range w.metrics {
			fmt.Fprintf(b, "| %s %s | %s | %s | %s | %s |\n", w.id, m.label,
				r.beat(m, simpleRow, 1), r.beat(m, langRow, 1), r.headTailTarget(w, m), r.floorTarget(w, m))
		}
	}
	b.WriteString("\n")
}

// tailTargets writes W7's targets: each of recall's stores' p99 over its
// own p50, and SQLite's p99 over the Agents SDK schema's, each the median
// of the per-run ratios. It writes nothing when W7 did not run.
func (r *report) tailTargets(b *strings.Builder) {
	p50, p99 := r.h.results["W7 p50"], r.h.results["W7 p99"]
	if p50 == nil {
		return
	}
	fmt.Fprintf(b, "W7's tail: each of recall's stores' turn p99 over its own p50 (✓ at %.1f× or less), and "+
		"recall SQLite's p99 over the Agents SDK schema's (✓ at %.1f× or less). The last column is the same ratio "+
		"for the floor of the store's medium, measured in the same turns: the tail the machine itself gives.\n\n", tailTarget, sdkTailTarget)
	b.WriteString("| store | p99 ÷ p50 | p99 ÷ SDK's p99 | its floor's p99 ÷ p50 |\n| --- | --: | --: | --: |\n")
	for _, e := range r.h.entrants {
		if e.kind != kindRecall || math.IsNaN(p50[e.name].value()) {
			continue
		}
		x := ratio(p99[e.name], p50[e.name])
		sdk := "—"
		if e.medium == mediumModernc {
			if y := ratio(p99[e.name], p99[sdkRow]); !math.IsNaN(y) {
				sdk = fmt.Sprintf("%s %s", times(y), mark(y <= sdkTailTarget))
			}
		}
		floor := r.floorOf(e.name)
		fmt.Fprintf(b, "| %s | %s %s | %s | %s |\n", e.name, times(x), mark(x <= tailTarget), sdk,
			times(ratio(p99[floor], p50[floor])))
	}
	b.WriteString("\n")
}

func (r *report) headTailTarget(w *workload, m metric) string {
	if w.id != "W3" {
		return "—"
	}
	return r.beat(m, headTailRow, headTailTarget)
}

func (r *report) floorTarget(w *workload, m metric) string {
	if w.id != "W1" && w.id != "W2" {
		return "—"
	}
	f := r.floorShare(m, recallRow)
	if math.IsNaN(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%% %s", f*100, mark(f >= floorTarget))
}

// beat formats how many times faster recall is than rival on m, marked
// against the factor it must reach.
func (r *report) beat(m metric, rival string, factor float64) string {
	x := r.speedup(m, rival)
	if math.IsNaN(x) {
		if c := r.h.results[m.id][rival]; c != nil && c.na != "" {
			return "n/a"
		}
		return "—"
	}
	ok := x > 1 // beating means faster, however slightly
	if factor > 1 {
		ok = x >= factor
	}
	return fmt.Sprintf("%s %s", times(x), mark(ok))
}

func mark(ok bool) string {
	if ok {
		return "✓"
	}
	return "**✗ missed**"
}

// speedup is contender's cost over recall's on m.
func (r *report) speedup(m metric, name string) float64 {
	row := r.h.results[m.id]
	return ratio(row[name], row[recallRow])
}

// floorShare is the cost of the floor of name's medium over name's cost.
func (r *report) floorShare(m metric, name string) float64 {
	floor := r.floorOf(name)
	if floor == "" {
		return math.NaN()
	}
	row := r.h.results[m.id]
	return ratio(row[floor], row[name])
}

// ratio is a's cost over b's: the median of the ratios of their runs taken
// in pairs, run i with run i. Within a run the contenders take turns op by
// op, so each pair saw the same machine load, and the load's drift from
// run to run cancels out. Cells whose runs do not pair up fall back to the
// ratio of the medians.
func ratio(a, b *cell) float64 {
	va, vb := a.value(), b.value()
	if math.IsNaN(va) || math.IsNaN(vb) {
		return math.NaN()
	}
	if len(a.runs) != len(b.runs) {
		return va / vb
	}
	rs := make([]float64, len(a.runs))
	for i := range rs {
		rs[i] = a.runs[i] / b.runs[i]
	}
	return median(rs)
}

// floorOf returns the name of the floor row of name's medium, or "".
func (r *report) floorOf(name string) string {
	var med medium
	for _, e := range r.h.entrants {
		if e.name == name {
			med = e.medium
		}
	}
	for _, e := range r.h.entrants {
		if e.kind == kindFloor && e.medium == med {
			return e.name
		}
	}
	return ""
}

// table writes one workload's table.
func (r *report) table(b *strings.Builder, w *workload) {
	fmt.Fprintf(b, "### %s · %s\n\n%s\n\n", w.id, w.title, w.what)
	b.WriteString("| contender |")
	for _, m := range w.metrics {
		fmt.Fprintf(b, " %s | × recall | floor |", m.label)
	}
	b.WriteString("\n| --- |")
	for range w.metrics {
		b.WriteString(" --: | --: | --: |")
	}
	b.WriteString("\n")
	for _, e := range r.h.entrants {
		if e.kind == kindFloor && r.allNA(w, e.name) {
			continue
		}
		name := e.name
		if e.kind == kindFloor {
			name = "*" + name + "*"
		}
		fmt.Fprintf(b, "| %s |", name)
		for _, m := range w.metrics {
			b.WriteString(r.cells(m, e))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

func (r *report) allNA(w *workload, name string) bool {
	for _, m := range w.metrics {
		if c := r.h.results[m.id][name]; c == nil || c.na == "" {
			return false
		}
	}
	return true
}

// cells formats the three cells of one metric of one row.
func (r *report) cells(m metric, e *entrant) string {
	c := r.h.results[m.id][e.name]
	v := c.value()
	if math.IsNaN(v) {
		return " " + cellText(c) + " | | |"
	}
	value := duration(v)
	if m.rate {
		value = rate(1 / v)
	}
	ratio := times(r.speedup(m, e.name))
	share := ""
	if e.kind != kindFloor {
		if f := r.floorShare(m, e.name); !math.IsNaN(f) {
			share = fmt.Sprintf("%.0f%%", f*100)
		}
	}
	return fmt.Sprintf(" %s | %s | %s |", value, ratio, share)
}

// contenders writes what each row is.
func (r *report) contenders(b *strings.Builder) {
	b.WriteString("### The contenders\n\n")
	for _, e := range r.h.entrants {
		fmt.Fprintf(b, "- **%s**: %s", e.name, e.note)
		if e.unavailable != "" {
			fmt.Fprintf(b, " *Not measured: %s.*", strings.Join(strings.Fields(e.unavailable), " "))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// duration formats seconds with three significant digits.
func duration(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return sig3(sec*1e6) + " µs"
	case d < time.Second:
		return sig3(sec*1e3) + " ms"
	}
	return sig3(sec) + " s"
}

// sig3 formats x (1 <= x < 1000) with three significant digits.
func sig3(x float64) string {
	switch {
	case x < 10:
		return fmt.Sprintf("%.2f", x)
	case x < 100:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.0f", x)
}

func rate(perSec float64) string { return thousands(int(math.Round(perSec))) + "/s" }

// times formats a ratio: 1.00×, 12.3×, 1,234×.
func times(x float64) string {
	switch {
	case math.IsNaN(x):
		return ""
	case x < 10:
		return fmt.Sprintf("%.2f×", x)
	case x < 100:
		return fmt.Sprintf("%.1f×", x)
	}
	return thousands(int(math.Round(x))) + "×"
}

// escape makes s fit in a table cell: one line, no bare '|'.
func escape(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

// firstLine shortens an error for a table cell.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = strings.ToValidUTF8(s[:160], "") + "…"
	}
	return s
}

// writeSection puts body between the markers of sec in the file at path.
// A file without the markers gets a section named sec.heading at its end
// holding them; a missing file is created.
func writeSection(path, body string, sec section) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	next, err := replaceSection(string(old), body, sec)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(next), 0o644)
}

// replaceSection returns doc with body between the markers of sec.
func replaceSection(doc, body string, sec section) (string, error) {
	section := sec.begin + "\n" + strings.TrimSpace(body) + "\n" + sec.end
	i := strings.Index(doc, sec.begin)
	j := strings.Index(doc, sec.end)
	switch {
	case i < 0 && j < 0:
		if doc == "" {
			doc = "# Benchmarks\n"
		}
		return strings.TrimRight(doc, "\n") + "\n\n## " + sec.heading + "\n\n" + section + "\n", nil
	case i < 0 || j < i:
		return "", fmt.Errorf("the markers of %q are damaged: fix them by hand", sec.heading)
	}
	return doc[:i] + section + doc[j+len(sec.end):], nil
}

// thousands formats n with comma separators: 10,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
