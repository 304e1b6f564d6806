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
	// Progress, when set, is called after each file with the bytes of the
	// files done so far and of all of them (as they are on disk).
	// Default: nil.
	Progress func(done, total int64)
}

// ReadFunc reads one transcript file. project, when not empty, is the
// project key its records go to (Options.Project).
type ReadFunc func(path, project string) (*Transcript, error)

// Counts counts recall records by what an import did to them.
type Counts struct {
	New       int `json:"new"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
}

func (c *Counts) add(o Outcome) {
	switch o {
	case New:
		c.New++
	case Updated:
		c.Updated++
	case Unchanged:
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

// Run imports files, in order, into st: each is read with read and each of
// its targets written with Write. A file or record that fails is listed in
// the summary's Failures and the rest go on; Run returns an error only
// when ctx ends.
func Run(ctx context.Context, st recall.Store, tool string, files []string, read ReadFunc, opts Options) (Summary, error) {
	sum := Summary{Tool: tool, DryRun: opts.DryRun, Files: len(files)}
	sizes, total := fileSizes(files)
	var done int64
	for i, path := range files {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		if err := sum.file(ctx, st, path, read, opts); err != nil {
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
func (s *Summary) file(ctx context.Context, st recall.Store, path string, read ReadFunc, opts Options) error {
	t, err := read(path, opts.Project)
	if err != nil {
		s.Failures = append(s.Failures, Failure{File: path, Err: err.Error()})
		return nil
	}
	s.Read++
	s.Bytes += int64(len(t.Data))
	s.Lines += t.Lines
	for k, n := range t.Skipped {
		if s.Skipped == nil {
			s.Skipped = map[string]int{}
		}
		s.Skipped[k] += n
	}
	if len(t.Targets) == 0 {
		s.Empty++
		return nil
	}
	for _, tg := range t.Targets {
		res, err := Write(ctx, st, t, tg, opts.DryRun)
		s.Entries += res.Entries
		s.Items += res.Items
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.Failures = append(s.Failures, Failure{File: path, Key: tg.Key.String(), Err: err.Error()})
			continue
		}
		if tg.Key.IsMain() {
			s.Sessions.add(res.Outcome)
		} else {
			s.Subagents.add(res.Outcome)
		}
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
