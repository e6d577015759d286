package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/report"
)

// observeFlags are the flags of server-side observation, shared by replay
// and observe.
type observeFlags struct {
	enabled        bool
	interval       time.Duration
	sampleInterval time.Duration
}

// addObserveFlags registers --observe, --observe-interval and
// --sample-interval.
func addObserveFlags(fs *pflag.FlagSet, f *observeFlags) {
	fs.BoolVar(&f.enabled, "observe", true, "collect server-side evidence on one extra connection to the target: pg_stat_statements deltas, wait events, TPS and connections (--observe=false to turn off)")
	addObserveIntervalFlags(fs, f)
}

func addObserveIntervalFlags(fs *pflag.FlagSet, f *observeFlags) {
	fs.DurationVar(&f.interval, "observe-interval", observe.DefaultInterval, "time between pg_stat_statements snapshots (besides those at the start and the end)")
	fs.DurationVar(&f.sampleInterval, "sample-interval", observe.DefaultSampleInterval, "time between pg_stat_activity samples (wait events, unless the target has pg_wait_sampling, which samples every 10 ms itself; and connections)")
}

func (f observeFlags) options() (observe.Options, error) {
	if f.interval < 100*time.Millisecond {
		return observe.Options{}, usageError("--observe-interval must be at least 100ms, got %s", f.interval)
	}
	if f.sampleInterval < 10*time.Millisecond {
		return observe.Options{}, usageError("--sample-interval must be at least 10ms, got %s", f.sampleInterval)
	}
	return observe.Options{Interval: f.interval, SampleInterval: f.sampleInterval}, nil
}

// observationOutput is what observe --json writes.
type observationOutput struct {
	Kind     string            `json:"kind"`
	Evidence *observe.Evidence `json:"evidence"`
}

type observeCmdFlags struct {
	target   string
	duration time.Duration
	jsonPath string
	htmlPath string
	top      int
	obs      observeFlags
}

func newObserveCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f observeCmdFlags
	cmd := &cobra.Command{
		Use:   "observe --target DSN [--duration D] [--json FILE] [--html FILE]",
		Short: "Collect server-side evidence from a server while a workload runs",
		Long: `observe watches a PostgreSQL server for --duration (or until Ctrl-C) while a
workload runs against it, from one extra connection (application_name
pgrehearse-observe, left out of what it measures), as replay does with
--observe:

  pg_stat_statements  snapshots at the start, the end and every
                      --observe-interval; per query fingerprint the deltas of
                      calls, execution and planning time, plans, rows, shared
                      blocks hit/read, temp blocks and WAL bytes, correct
                      across pg_stat_statements_reset() and entry eviction
                      (both detected and reported)
  wait events         a profile of wait_event_type/wait_event per query and
                      over time: from pg_wait_sampling when the target has
                      it preloaded and created (every 10 ms, in the
                      server), else from pg_stat_activity every
                      --sample-interval
  throughput          pg_stat_database transactions per second, connections

It only reads. It warns about what the server hides: pg_stat_statements not
installed, pg_stat_statements.track_planning off (planning time invisible),
a role without pg_read_all_stats. The summary goes to standard output;
--json writes the evidence ("-" for standard output), --html a page.
` + exitHelp(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runObserve(cmd.Context(), stdio, f)
		},
	}
	fl := cmd.Flags()
	dsnVar(fl, &f.target, "target", "connection string or URI of the server to observe (required)")
	fl.DurationVar(&f.duration, "duration", 0, "how long to observe (0: until Ctrl-C)")
	fl.StringVar(&f.jsonPath, "json", "", `write the evidence as JSON to `+"`FILE`"+` ("-" for standard output)`)
	fl.StringVar(&f.htmlPath, "html", "", "write the evidence as one self-contained HTML `FILE`")
	fl.IntVar(&f.top, "top", 10, "queries listed in the summary")
	addObserveIntervalFlags(fl, &f.obs)
	return cmd
}

func runObserve(ctx context.Context, stdio IO, f observeCmdFlags) error {
	if f.target == "" {
		return usageError("--target is required")
	}
	if f.duration < 0 {
		return usageError("--duration must not be negative, got %s", f.duration)
	}
	if f.jsonPath == "-" && f.htmlPath == "-" {
		return usageError(`--json and --html cannot both go to standard output`)
	}
	opts, err := f.obs.options()
	if err != nil {
		return err
	}
	// The server's own clients go on after the observation.
	opts.Live = true
	if err := checkOutputs("--json", f.jsonPath, "--html", f.htmlPath); err != nil {
		return err
	}
	summaryOut := summaryWriter(stdio, f.jsonPath, f.htmlPath)
	start, cancel := context.WithTimeout(ctx, 30*time.Second)
	o, err := observe.Start(start, f.target, opts)
	cancel()
	if err != nil {
		return err
	}
	for _, w := range o.StartWarnings() {
		fmt.Fprintf(stdio.Stderr, "pgrehearse: observe: %s\n", w)
	}
	until := "Ctrl-C"
	if f.duration > 0 {
		until = f.duration.String() + " or Ctrl-C"
	}
	fmt.Fprintf(stdio.Stderr, "observing %s until %s\n", o.Capabilities().Database, until)
	var timer <-chan time.Time
	if f.duration > 0 {
		t := time.NewTimer(f.duration)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
	case <-timer:
	}
	ev, stopErr := o.Stop()
	if err := report.WriteEvidence(summaryOut, ev, f.top); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if f.jsonPath != "" {
		if err := writeOutput(stdio.Stdout, f.jsonPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(observationOutput{Kind: "observation", Evidence: ev})
		}); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
	}
	if f.htmlPath != "" {
		page := report.EvidencePage(ev)
		if err := writeOutput(stdio.Stdout, f.htmlPath, func(w io.Writer) error { return htmlreport.Write(w, page) }); err != nil {
			return fmt.Errorf("write HTML: %w", err)
		}
		if f.htmlPath != "-" {
			fmt.Fprintf(summaryOut, "HTML report: %s\n", f.htmlPath)
		}
	}
	if stopErr != nil {
		return stopErr
	}
	if ctx.Err() != nil && f.duration > 0 {
		return errors.New("interrupted: the evidence above covers the time until Ctrl-C")
	}
	return nil
}
