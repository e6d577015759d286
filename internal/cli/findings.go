package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pgrehearse/pgrehearse/internal/analyze"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

type findingsFlags struct {
	dsn        string
	serverCPUs int
	jsonPath   string
	htmlPath   string
	baseline   string
	logFlags
	jobs           int
	explainAnalyze bool
	thresholds     judge.Thresholds
}

func newFindingsCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f findingsFlags
	cmd := &cobra.Command{
		Use:   "findings [flags] ANALYSIS.json | LOG|CAPTURE...",
		Short: "Name the known performance traps of a workload, with evidence and a fix",
		Long: `findings looks for the known traps of a workload and says what to fix:

  batch-inserts              many single-row INSERTs per second into one table
  missing-index              top queries whose plan scans a big table behind a filter
  planning-heavy             planning a large share of a query's time (or invisible)
  hot-queryid                one query id contending on pg_stat_statements' spinlock
  random-keys                random (UUIDv4, hash) keys on large insert-heavy tables
  queue-without-skip-locked  job-queue polls that lock without SKIP LOCKED
  no-statistics              big tables without planner statistics (before ANALYZE)
  errors                     error rate by SQLSTATE; with --baseline, statements
                             that failed only in this workload

The input is the JSON of "analyze --json" or "replay --json", or server logs,
which are analyzed first; logs also give the logged parameter values that
random-keys and missing-index use. --dsn connects to the server (read-only:
catalog, pg_stat_statements, EXPLAIN without ANALYZE unless
--explain-analyze, and then only for plain SELECTs); findings that need it
are otherwise listed as not evaluated. hot-queryid needs the server's CPU
count: --server-cpus, or this machine's when --dsn points to a local server.

The findings go to standard output; --json writes them as JSON ("-" for
standard output, the text then goes to standard error), --html as a page.
` + captureHelp + exitHelp(exitDocNoInput),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFindings(cmd.Context(), stdio, f, args)
		},
	}
	fl := cmd.Flags()
	dsnVar(fl, &f.dsn, "dsn", "connection string of the server the workload ran on (read-only use)")
	fl.IntVar(&f.serverCPUs, "server-cpus", 0, "CPU count of the server, for hot-queryid (default: detected for a local server)")
	fl.StringVar(&f.jsonPath, "json", "", `write the findings as JSON to `+"`FILE`"+` ("-" for standard output)`)
	fl.StringVar(&f.htmlPath, "html", "", "write the findings as one self-contained HTML `FILE`")
	fl.StringVar(&f.baseline, "baseline", "", "an analysis or replay JSON to compare errors with")
	addLogFlags(fl, &f.logFlags)
	fl.IntVarP(&f.jobs, "jobs", "j", defaultJobs(), "workers that fingerprint and aggregate statements")
	fl.BoolVar(&f.explainAnalyze, "explain-analyze", false, "allow EXPLAIN ANALYZE (runs the statement) for plain SELECTs")
	fl.Float64Var(&f.thresholds.IndexMinRows, "index-min-rows", 0, "rows from which a table is big for missing-index (default 100000)")
	fl.Float64Var(&f.thresholds.KeyMinRows, "key-min-rows", 0, "rows from which a table is large for random-keys (default 1000000)")
	fl.Float64Var(&f.thresholds.HotCallsPerCore, "hot-calls-per-core", 0, "K of hot-queryid's model, calls/s per CPU core (default 10000)")
	return cmd
}

func runFindings(ctx context.Context, stdio IO, f findingsFlags, args []string) error {
	if f.serverCPUs < 0 {
		return usageError("--server-cpus must not be negative, got %d", f.serverCPUs)
	}
	if f.jobs < 1 {
		return usageError("-j must be at least 1, got %d", f.jobs)
	}
	if f.jsonPath == "-" && f.htmlPath == "-" {
		return usageError(`--json and --html cannot both go to standard output`)
	}
	if err := checkOutputs("--json", f.jsonPath, "--html", f.htmlPath); err != nil {
		return err
	}
	in := judge.FindingsInput{ServerCPUs: f.serverCPUs}
	if f.serverCPUs > 0 {
		in.CPUSource = "--server-cpus"
	}
	var err error
	if len(args) == 1 {
		in.Result, err = results.ReadIfResult(args[0])
		if err != nil {
			return err
		}
	}
	if in.Result == nil {
		if in.Result, in.Sampler, err = analyzeLogs(ctx, stdio, f, args); err != nil {
			return err
		}
	}
	if f.baseline != "" {
		if in.Baseline, err = results.ReadIfResult(f.baseline); err != nil {
			return err
		}
		if in.Baseline == nil {
			return usageError("--baseline %s is not an analysis or replay JSON", f.baseline)
		}
	}
	rep, _, err := judge.WorkloadFindings(ctx, in, judge.FindingsOptions{
		Catalog: judge.Catalog{DSN: f.dsn, ExplainAnalyze: f.explainAnalyze, Required: true}, Thresholds: f.thresholds})
	if err != nil {
		return err
	}

	out := stdio.Stdout
	if f.jsonPath == "-" || f.htmlPath == "-" {
		out = stdio.Stderr
	}
	if err := report.WriteFindings(out, rep, findingsHints); err != nil {
		return fmt.Errorf("write findings: %w", err)
	}
	if f.jsonPath != "" {
		if err := writeOutput(stdio.Stdout, f.jsonPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		}); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
	}
	if f.htmlPath != "" {
		page := report.FindingsPage(rep, findingsHints)
		if err := writeOutput(stdio.Stdout, f.htmlPath, func(w io.Writer) error { return htmlreport.Write(w, page) }); err != nil {
			return fmt.Errorf("write HTML: %w", err)
		}
	}
	return nil
}

// analyzeLogs analyzes logs as the analyze command does, observing their
// events on the way.
func analyzeLogs(ctx context.Context, stdio IO, f findingsFlags, paths []string) (*results.Result, *judge.Sampler, error) {
	set, err := openLogs(stdio, paths, f.logFlags, f.jobs, &source.Selection{})
	if err != nil {
		return nil, nil, err
	}
	defer set.Close()
	cache := fingerprint.NewCache(0)
	obs := judge.NewSampler(cache)
	res, err := readLogs(ctx, stdio, set, obs, analyze.Options{Jobs: f.jobs, Cache: cache})
	if err != nil {
		return nil, nil, err
	}
	if res.Partial {
		return nil, nil, errors.New("interrupted: no findings from a partial analysis")
	}
	res.Source = strings.Join(res.Files, ", ")
	return res, obs, nil
}
