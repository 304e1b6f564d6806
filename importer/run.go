package importer

import (
	"context"
	"os"
	"sort"

	"github.com/recallkit/recall"
)

// Options configure Run. The zero value imports every transcript into the
// project of its own working directory.
type Options struct {
	// Project, when set, is the project key every session is imported
	// into instead of the key of its working directory. Default: "".
	Project string
	// DryRun reads and counts what an import would write, and writes
	// nothing. Default: false.
	DryRun bool
	// Progress, when set, is called as the files are read (after each MB
	// or so, and after each file) with the bytes read so far and the
	// bytes of all the files, as they are on disk. Default: nil.
	Progress func(done, total int64)
}

// Counts counts recall records by what an import did to them.
type Counts struct {
	New       int `json:"new"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
}

func (c *Counts) add(o outcome) {
	switch o {
	case outcomeNew:
		c.New++
	case outcomeUpdated:
		c.Updated++
	case outcomeUnchanged:
		c.Unchanged++
	}
}

// Summary is what Run did, or in a dry run would do.
type Summary struct {
	Tool   string `json:"tool"`
	DryRun bool   `json:"dry_run,omitempty"`
	// Files counts the transcript files found; Read those read (Failures
	// lists the others), Empty those read that hold no conversation.
	Files int   `json:"files"`
	Read  int   `json:"read"`
	Empty int   `json:"empty,omitempty"`
	Bytes int64 `json:"bytes"`
	Lines int   `json:"lines"`
	// Sessions and Subagents count main sessions and subagent records.
	Sessions  Counts `json:"sessions"`
	Subagents Counts `json:"subagents"`
	// Entries and Items count what was written (or would be).
	Entries int `json:"entries"`
	Items   int `json:"items"`
	// Skipped counts the lines that gave nothing, by kind.
	Skipped  map[string]int `json:"skipped,omitempty"`
	Failures []Failure      `json:"failures,omitempty"`
}

// Failure is a file, or one record of it, that could not be imported.
type Failure struct {
	File string `json:"file"`
	// Key is the recall record that failed, or "" when the file could not
	// be read at all.
	Key string `json:"key,omitempty"`
	Err string `json:"error"`
}

// SkippedKinds returns the kinds of Skipped, sorted.
func (s Summary) SkippedKinds() []string {
	kinds := make([]string, 0, len(s.Skipped))
	for k := range s.Skipped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// Run imports files, in order, into st: each is read line by line, its
// lines are mapped by the Mapper that mapper returns for it, and the
// records they give are written as they come (see the package doc). A
// file or record that fails is listed in the summary's Failures and the
// rest go on; Run returns an error only when ctx ends.
func Run(ctx context.Context, st recall.Store, tool string, files []string, mapper func(path string) Mapper, opts Options) (Summary, error) {
	sum := Summary{Tool: tool, DryRun: opts.DryRun, Files: len(files)}
	sizes, total := fileSizes(files)
	var done int64
	for i, path := range files {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		f := &fileImport{ctx: ctx, st: st, tool: tool, path: path, opts: opts, newMapper: mapper}
		if opts.Progress != nil {
			f.progress = func(read int64) { opts.Progress(done+min(read, sizes[i]), total) }
		}
		if err := sum.file(ctx, f); err != nil {
			return sum, err
		}
		done += sizes[i]
		if opts.Progress != nil {
			opts.Progress(done, total)
		}
	}
	return sum, nil
}

// file imports one file into the summary; it returns only ctx's error.
func (s *Summary) file(ctx context.Context, f *fileImport) error {
	err := f.run()
	var targets []*Target
	if f.t != nil {
		targets = f.t.targets
	}
	results := make([]result, len(targets))
	for i, tg := range targets {
		results[i] = tg.w.res
		if p, ok := f.prior[tg.Agent]; ok {
			results[i].add(p)
		}
		s.Entries += results[i].Entries
		s.Items += results[i].Items
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.Failures = append(s.Failures, Failure{File: f.path, Err: err.Error()})
		return nil
	}
	s.Read++
	s.Bytes += f.d.n
	s.Lines += f.t.Lines
	for k, n := range f.t.Skipped {
		if s.Skipped == nil {
			s.Skipped = map[string]int{}
		}
		s.Skipped[k] += n
	}
	written := 0
	for i, tg := range targets {
		if results[i].Outcome == "" {
			continue // no conversation: not a record
		}
		written++
		switch {
		case tg.w.err != nil:
			s.Failures = append(s.Failures, Failure{File: f.path, Key: tg.w.key.String(), Err: tg.w.err.Error()})
		case tg.Agent == "":
			s.Sessions.add(results[i].Outcome)
		default:
			s.Subagents.add(results[i].Outcome)
		}
	}
	if written == 0 {
		s.Empty++
	}
	return nil
}

// fileSizes returns the size on disk of each file (0 when unknown) and
// their total.
func fileSizes(files []string) ([]int64, int64) {
	sizes := make([]int64, len(files))
	var total int64
	for i, f := range files {
		if fi, err := os.Stat(f); err == nil {
			sizes[i] = fi.Size()
			total += fi.Size()
		}
	}
	return sizes, total
}
