package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/pgrehearse/pgrehearse/internal/analyze"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

type analyzeFlags struct {
	logFlags
	jsonPath string
	jobs     int
	top      int
	hist     bool
	// maxSkipped is --max-skipped, a percentage.
	maxSkipped float64
	start, end string
	// findings
	findings   bool
	dsn        string
	serverCPUs int
	// keepSamples is --keep-samples.
	keepSamples bool
}

func newAnalyzeCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f analyzeFlags
	cmd := &cobra.Command{
		Use:   "analyze [flags] LOG|CAPTURE...",
		Short: "Summarize the workload in PostgreSQL server logs",
		Long: `analyze reads PostgreSQL server logs (stderr, csvlog, jsonlog, syslog and the
exports of managed services, optionally compressed; "-" is standard input) and summarizes the workload: how every
line was used, statements and failures, sessions, errors by SQLSTATE, and per
query fingerprint the calls, errors and latencies, with the top queries by
total time, by calls and by errors.

The summary goes to standard output. --json writes the full result as JSON
to a file, or to standard output with "--json -", in which case the summary
goes to standard error. A string of several statements counts one call per
statement, its logged duration divided equally among them.

Ctrl-C stops reading; what was read so far is still summarized, marked as
partial, and the exit code is 1.

` + captureHelp[1:] + "\n" + keepSamplesHelp + exitHelp(exitDocNoInput, exitDocInputCut),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAnalyzeCmd(cmd.Context(), stdio, f, args)
		},
	}
	fl := cmd.Flags()
	addLogFlags(fl, &f.logFlags)
	fl.BoolVar(&f.findings, "findings", true, "name the known performance traps the workload falls into")
	dsnVar(fl, &f.dsn, "dsn", "a server with the workload's schema, for the findings that need its catalog, plans or pg_stat_statements (read-only)")
	fl.IntVar(&f.serverCPUs, "server-cpus", 0, "CPU count of the production server, for the hot-queryid finding")
	fl.StringVar(&f.jsonPath, "json", "", `write the result as JSON to `+"`FILE`"+` ("-" for standard output)`)
	fl.BoolVar(&f.keepSamples, "keep-samples", false, keepSamplesUsage)
	fl.IntVarP(&f.jobs, "jobs", "j", defaultJobs(), "workers that fingerprint and aggregate statements")
	fl.IntVar(&f.top, "top", 10, "queries shown in each top list (0 for none)")
	addMaxSkipped(fl, &f.maxSkipped)
	fl.StringVar(&f.start, "start", "", `analyze events from this log time on (RFC 3339 or "2006-01-02 15:04:05", local time without a zone)`)
	fl.StringVar(&f.end, "end", "", "analyze events before this log time")
	// Histograms are always written now (results version 2); --hist is
	// accepted so that scripts written for earlier releases still run.
	fl.BoolVar(&f.hist, "hist", true, "include each query's latency histogram in the JSON (always on)")
	_ = fl.MarkHidden("hist")
	return cmd
}

// defaultJobs leaves a CPU to the goroutine that reads and parses the logs,
// which is the other half of the work.
func defaultJobs() int {
	return min(max(runtime.GOMAXPROCS(0)-1, 1), 8)
}

func runAnalyzeCmd(ctx context.Context, stdio IO, f analyzeFlags, paths []string) (err error) {
	start, end, err := f.check()
	if err != nil {
		return err
	}
	if err := checkOutputs("--json", f.jsonPath); err != nil {
		return err
	}
	summaryOut := summaryWriter(stdio, f.jsonPath)

	// With several jobs, a large plain file is read in parts at once.
	set, err := openLogs(stdio, paths, f.logFlags, f.jobs, &source.Selection{Start: start, End: end})
	if err != nil {
		return err
	}
	defer set.Close()
	cache := fingerprint.NewCache(0)
	// Findings that need a server also need what only the events show
	// (logged parameter values, a sample execution to explain): they are
	// observed on the way, which costs reading speed, so only then.
	var obs *judge.Sampler
	if f.findings && f.dsn != "" {
		obs = judge.NewSampler(cache)
	}
	res, err := readLogs(ctx, stdio, set, obs, analyze.Options{Jobs: f.jobs, Cache: cache, KeepSamples: f.keepSamples})
	if err != nil {
		return err
	}
	reportLogWarnings(stdio, set.Warnings())

	// A log that yields nothing is said loudly, and its result marked so
	// that report will not judge it; so is a log cut short.
	nothing := set.Measured(res.Statements.Total, f.maxSkipped/100)
	if nothing == nil {
		nothing = set.OnlyErrors(res.Statements.Total, res.Statements.Failed)
	}
	if nothing != nil && !res.Partial {
		res.MarkIncomplete(results.IncompleteNothingMeasured, report.NothingText(nothing))
	}
	cut := set.Partial()
	if cut != nil {
		res.Partial = true
		res.MarkIncomplete(results.IncompleteInputCut, cut.Error())
	}
	if err := report.WriteAnalysis(summaryOut, res, f.top); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	out := analysisOutput{Result: res}
	var findingsErr error
	// A log of errors alone has no error rate to judge: the server did
	// not log what succeeded.
	onlyErrors := nothing != nil && nothing.Reason == source.NothingOnlyErrors
	if f.findings && !res.Partial && !onlyErrors {
		// Findings that fail (their server unreachable) lose only
		// themselves: the analysis is still written.
		if findingsErr = analysisFindings(ctx, f, &out, obs); findingsErr == nil {
			fmt.Fprintln(summaryOut)
			if err := report.WriteFindings(summaryOut, out.Findings, findingsHints); err != nil {
				return fmt.Errorf("write findings: %w", err)
			}
		}
	}
	if f.jsonPath != "" {
		if err := writeJSON(stdio.Stdout, f.jsonPath, out); err != nil {
			return err
		}
	}
	switch {
	case findingsErr != nil:
		return findingsErr
	case cut != nil:
		return cutError(cut)
	case res.Partial:
		return errors.New("interrupted: the results above are partial")
	case nothing != nil:
		return nothingError(nothing)
	}
	return nil
}

// check validates the flags and returns the time window.
func (f analyzeFlags) check() (start, end int64, err error) {
	switch {
	case f.serverCPUs < 0:
		return 0, 0, usageError("--server-cpus must not be negative, got %d", f.serverCPUs)
	case f.jobs < 1:
		return 0, 0, usageError("-j must be at least 1, got %d", f.jobs)
	case f.top < 0:
		return 0, 0, usageError("--top must not be negative, got %d", f.top)
	case f.maxSkipped < 0 || f.maxSkipped > 100:
		return 0, 0, usageError("--max-skipped is a percentage between 0 and 100, got %v", f.maxSkipped)
	}
	return timeWindow(f.start, f.end)
}

// readLogs analyzes the set's events with a progress bar, showing them
// to obs on the way when it is not nil. The result names its input.
func readLogs(ctx context.Context, stdio IO, set *source.Set, obs *judge.Sampler, opts analyze.Options) (*results.Result, error) {
	prog := newProgress(stdio.Stderr, set)
	sources := set.Sources()
	if obs != nil {
		sources = make([]event.Source, len(set.Sources()))
		for i, s := range set.Sources() {
			sources[i] = source.Tap(s, obs.Add)
		}
	}
	res, err := analyze.Analyze(ctx, sources, opts)
	prog.done(err == nil && !res.Partial)
	if res != nil {
		res.Input = set.Input()
	}
	return res, err
}

// analysisFindings names the traps of an analyzed workload, with the
// server's catalog when --dsn is given.
func analysisFindings(ctx context.Context, f analyzeFlags, out *analysisOutput, obs *judge.Sampler) error {
	out.Source = strings.Join(out.Files, ", ")
	in := judge.FindingsInput{Result: out.Result, Sampler: obs, ServerCPUs: f.serverCPUs}
	if f.serverCPUs > 0 {
		in.CPUSource = "--server-cpus"
	}
	rep, _, err := judge.WorkloadFindings(ctx, in, judge.FindingsOptions{Catalog: judge.Catalog{DSN: f.dsn, Required: true}})
	if err != nil {
		return err
	}
	out.Findings = rep
	return nil
}

// analysisOutput is what analyze --json writes: the analysis, and its
// findings under "findings" (the analyze package cannot hold them: the
// findings are computed from an analysis).
type analysisOutput = report.ResultJSON

// progress is the bar on standard error, or nothing at all when standard
// error is not a terminal (a file, a pipe, a test) or a size is unknown.
type progress struct {
	p   *mpb.Progress
	bar *mpb.Bar
}

func newProgress(stderr io.Writer, set *source.Set) *progress {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &progress{}
	}
	_, total := set.Progress()
	if total < 0 {
		return &progress{}
	}
	p := mpb.New(mpb.WithOutput(stderr), mpb.WithWidth(40))
	bar := p.AddBar(total,
		mpb.PrependDecorators(decor.Name("analyze "), decor.CountersKibiByte("% .1f / % .1f")),
		mpb.AppendDecorators(decor.Percentage(decor.WC{W: 5}), decor.Name(" "), decor.AverageETA(decor.ET_STYLE_GO)),
	)
	set.OnProgress(func(read, _ int64) { bar.SetCurrent(read) })
	return &progress{p: p, bar: bar}
}

// done completes or abandons the bar and waits for it to be drawn, so that
// the summary does not interleave with it.
func (pr *progress) done(complete bool) {
	if pr.p == nil {
		return
	}
	if complete {
		pr.bar.SetTotal(-1, true)
	} else {
		pr.bar.Abort(false)
	}
	pr.p.Wait()
}

// timeWindow reads --start and --end, in local time when they have no
// zone, as µs since the epoch; zero for an empty one.
func timeWindow(startFlag, endFlag string) (start, end int64, err error) {
	if startFlag != "" {
		if start, err = source.ParseTime(startFlag, time.Local); err != nil {
			return 0, 0, usageError("--start: %v", err)
		}
	}
	if endFlag != "" {
		if end, err = source.ParseTime(endFlag, time.Local); err != nil {
			return 0, 0, usageError("--end: %v", err)
		}
		if start != 0 && end <= start {
			return 0, 0, usageError("--end must be after --start")
		}
	}
	return start, end, nil
}
