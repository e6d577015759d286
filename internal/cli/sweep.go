package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/outfile"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"github.com/pgrehearse/pgrehearse/internal/sweep"
	"github.com/pgrehearse/pgrehearse/internal/sweep/logdriver"
)

type sweepFlags struct {
	maxSkipped float64
	target     string
	builtin    string
	script     string
	mode       string
	clients    string
	maxClients int
	repeat     int
	warmup     time.Duration
	duration   time.Duration
	scale      int
	cliff      float64
	compare    []string
	jsonPath   string
	htmlPath   string
	init       bool
	logPath    string
	format     string
	prefix     string
	timezone   string
	setup      string
}

func newSweepCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep [flags]",
		Short: "Find where a workload's throughput peaks and falls off as clients grow",
		Long: `sweep runs a pgbench workload at increasing client counts (--clients 1,2,4,8,
or 1, 2, 4, ... doubling up to --max-clients), each step for --warmup and then
--duration without reconnecting, and measures the window after warm-up: TPS,
latency percentiles (from pgbench's per-transaction log), the CPU time of the
server processes (from /proc, when the server runs on this machine), the top
wait events (pg_stat_activity sampled every 100 ms) and the hottest query ids
(pg_stat_statements, when installed). It reports the peak (clients, TPS) and
the cliff: the first client count after the peak whose TPS falls below
--cliff times the peak's.

--repeat N runs every client count N times (A B, B A, ... across the
repeats too); the spread of the repeats is the noise that the peak, the
knee, the cliff and the ratios between configurations are judged against,
with the step-curve finder that headroom's break uses. The peak is the
highest median TPS, with the client counts that cannot be told from it;
the knee the client count of the highest TPS over latency, called only when
a later one is lower beyond the noise; the cliff is called only when a
client count's TPS is below --cliff times the peak's beyond the noise, with
an interval for where it crosses. A ratio between configurations within the
noise is printed "~", as benchstat does. With one step per client count
(the default without --compare) a step is assumed within 15% of another:
--repeat 3 measures the noise instead, at three times the time. With
--compare the default is --repeat 3; an explicit --repeat 1 prints the
ratios without interval or "~" and calls no knee and no cliff, since one
step each measures no noise.

--compare 'NAME:setting=value[,setting=value]', given twice or more, runs
every configuration in the same sweep, alternating them at every client count
(A B, then B A, ...) so that drift on a shared machine falls on all of them,
for example:
  pgrehearse sweep -b select-only --max-clients 64 \
    --compare 'on:pg_stat_statements.track_planning=on' \
    --compare 'off:pg_stat_statements.track_planning=off'

Without --target, every configuration gets a throwaway cluster with
pg_stat_statements preloaded and its settings in postgresql.conf, initialized
with pgbench -i --scale. With --target, configurations are applied with
ALTER SYSTEM SET and pg_reload_conf(), settings needing a restart are refused,
and all of them are put back at the end; --init runs pgbench -i there first.

The tables go to standard output, progress lines to standard error; --json
writes the result (see docs/sweep-json.md) to a file, or with "--json -" to
standard output, the tables then going to standard error; --html writes a
single-file report that works offline, with every configuration's TPS and
p95 latency against clients on one chart. Ctrl-C stops the
sweep; the steps done so far are still reported, marked partial, with exit
code 1.

--log FILE sweeps a captured server log instead (as replay reads it, with
--format and --prefix): every step replays it at speed 0, again and again
until the step is over, every pass reading the file anew, its sessions
multiplied so that about as many run at once as the step has clients (a
step of c clients replays ceil(c/m) of the log's concurrent sessions m times
each, m = ceil(c / the most sessions the log has open at once); the
sessions actually open are reported). TPS is then transactions per second
(COMMIT, ROLLBACK and statements outside a transaction block), with
statements per second beside it, and latencies are per statement. Every
session runs as the user and in the database of --target (or of the
throwaway cluster). The log's schema must exist there: --setup FILE.sql
runs an SQL file once on every throwaway cluster (or on --target), and
--init runs pgbench -i --scale for a log captured from pgbench; without
either, on a throwaway cluster every statement of the log fails. Repeated
writes fail with unique violations and the like: they are counted as
failures, not retried. For example:
  pgrehearse sweep --log pgbench.csv --init --scale 1 --clients 1,2,4,8

It needs pgbench (and for throwaway clusters initdb, pg_ctl and postgres):
set PG_BIN to their directory, or install them with
  ` + pgcluster.InstallHint + `
` + exitHelp(exitDocNoInput),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSweepCmd(cmd.Context(), stdio, cmd, f)
		},
	}
	fl := cmd.Flags()
	dsnVar(fl, &f.target, "target", "connection string of the server to sweep (default: throwaway clusters)")
	fl.StringVarP(&f.builtin, "builtin", "b", "", "built-in pgbench script: select-only, tpcb-like or simple-update (default select-only)")
	fl.StringVarP(&f.script, "file", "f", "", "pgbench script file to run instead of a built-in one")
	fl.StringVarP(&f.mode, "protocol", "M", "simple", "query mode: simple, extended or prepared")
	fl.StringVar(&f.clients, "clients", "", "comma-separated client counts, such as 1,2,4,8")
	fl.IntVar(&f.maxClients, "max-clients", 32, "sweep 1, 2, 4, ... clients up to this many (when --clients is not given)")
	fl.IntVar(&f.repeat, "repeat", 0, "run every client count this many times (default 1, 3 with --compare); their spread is the noise peak, knee, cliff and ratios are judged against (3 measures it)")
	fl.DurationVar(&f.warmup, "warmup", 5*time.Second, "warm-up of every step before measuring (whole seconds)")
	fl.DurationVar(&f.duration, "duration", 10*time.Second, "measured time of every step (whole seconds)")
	fl.IntVar(&f.scale, "scale", 10, "pgbench -i scale factor of throwaway clusters (and of --init)")
	fl.Float64Var(&f.cliff, "cliff", 0.8, "the cliff is the first step after the peak below this fraction of its TPS")
	fl.StringArrayVar(&f.compare, "compare", nil, "configuration `NAME:setting=value[,setting=value]`; repeat to compare")
	fl.StringVar(&f.jsonPath, "json", "", `write the result as JSON to `+"`FILE`"+` ("-" for standard output)`)
	fl.StringVar(&f.htmlPath, "html", "", "write a self-contained HTML report with the TPS and p95 chart to `FILE`")
	fl.BoolVar(&f.init, "init", false, "with --target, run pgbench -i --scale on it first; with --log, also on throwaway clusters (for a pgbench capture)")
	fl.StringVar(&f.logPath, "log", "", "sweep a captured server log `FILE` (or a capture directory of pgrehearse capture), replayed at speed 0 with its sessions multiplied")
	addMaxSkipped(fl, &f.maxSkipped)
	fl.StringVar(&f.format, "format", "auto", "with --log: log format, auto, stderr, csvlog or jsonlog")
	fl.StringVar(&f.prefix, "prefix", "", "with --log: log_line_prefix of a stderr log (default: detected)")
	fl.StringVar(&f.timezone, "timezone", "", "with --log: the server's log_timezone as an IANA name (Asia/Shanghai), for times the log writes without a zone (syslog) or with an abbreviation that is unknown or ambiguous (CST, IST)")
	fl.StringVar(&f.setup, "setup", "", "with --log: SQL `FILE` creating the log's schema, run once on every throwaway cluster (or on --target)")
	return cmd
}

func runSweepCmd(ctx context.Context, stdio IO, cmd *cobra.Command, f sweepFlags) error {
	if err := checkOutputs("--json", f.jsonPath, "--html", f.htmlPath); err != nil {
		return err
	}
	opts, err := sweepOptions(stdio, cmd, f)
	if err != nil {
		return err
	}
	res, err := sweep.Run(ctx, opts)
	var refused *sweep.RefusedSettingsError
	if errors.As(err, &refused) && refused.NeedsRestart() {
		err = fmt.Errorf("%w\n(without --target, every configuration gets a throwaway cluster started with its settings)", err)
	}
	if res == nil {
		return err
	}
	if werr := writeSweep(stdio, f, res); werr != nil {
		return errors.Join(err, werr)
	}
	if err != nil && ctx.Err() != nil {
		return errors.New("interrupted: the results above are partial")
	}
	return err
}

// sweepOptions turns the flags into sweep.Options, or a usage error.
func sweepOptions(stdio IO, cmd *cobra.Command, f sweepFlags) (sweep.Options, error) {
	drv, init, err := sweepDriver(stdio, cmd, f)
	if err != nil {
		return sweep.Options{}, err
	}
	var list []int
	if f.clients != "" {
		if cmd.Flags().Changed("max-clients") {
			return sweep.Options{}, usageError("give --clients or --max-clients, not both")
		}
		for _, s := range strings.Split(f.clients, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || n < 1 {
				return sweep.Options{}, usageError("--clients: %q is not a positive number", s)
			}
			list = append(list, n)
		}
	} else if f.maxClients < 1 {
		return sweep.Options{}, usageError("--max-clients must be at least 1, got %d", f.maxClients)
	}
	if cmd.Flags().Changed("repeat") && f.repeat < 1 {
		return sweep.Options{}, usageError("--repeat must be at least 1, got %d", f.repeat)
	}
	if len(f.compare) == 1 {
		return sweep.Options{}, usageError("--compare needs two configurations or more, got one")
	}
	var configs []sweep.Config
	for _, s := range f.compare {
		c, err := sweep.ParseConfig(s)
		if err != nil {
			return sweep.Options{}, usageError("--compare: %v", err)
		}
		configs = append(configs, c)
	}
	opts := sweep.Options{
		Driver:     drv,
		Clients:    sweep.ClientCounts(list, f.maxClients),
		Warmup:     f.warmup,
		Duration:   f.duration,
		Repeat:     f.repeat,
		CliffRatio: f.cliff,
		Configs:    configs,
		Target:     f.target,
		Init:       init,
		Scale:      f.scale,
		Progress: func(format string, args ...any) {
			fmt.Fprintf(stdio.Stderr, "sweep: "+format+"\n", args...)
		},
	}
	if err := opts.Validate(); err != nil {
		return opts, usageError("%v", err)
	}
	return opts, nil
}

// sweepDriver returns the workload the flags ask for, and whether the
// target is to be initialized for it.
func sweepDriver(stdio IO, cmd *cobra.Command, f sweepFlags) (sweep.Driver, bool, error) {
	if f.logPath == "" {
		if f.setup != "" || cmd.Flags().Changed("format") || f.prefix != "" || f.timezone != "" {
			return nil, false, usageError("--setup, --format, --prefix and --timezone go with --log")
		}
		if f.builtin != "" && f.script != "" {
			return nil, false, usageError("give -b or -f, not both")
		}
		if f.builtin == "" && f.script == "" {
			f.builtin = "select-only"
		}
		pb := &sweep.Pgbench{Builtin: f.builtin, Script: f.script, Mode: f.mode}
		if err := pb.Check(); err != nil {
			return nil, false, usageError("%v", err)
		}
		if f.init && f.target == "" {
			return nil, false, usageError("--init needs --target: throwaway clusters are always initialized")
		}
		return pb, f.init, nil
	}
	if f.builtin != "" || f.script != "" || cmd.Flags().Changed("protocol") {
		return nil, false, usageError("give --log or a pgbench script (-b, -f, -M), not both")
	}
	// Read as analyze and replay read logs.
	opts, err := logFlags{format: f.format, prefix: f.prefix, timezone: f.timezone}.options(stdio)
	if err != nil {
		return nil, false, err
	}
	ld := &logdriver.Log{Path: f.logPath, Format: opts.Format, Prefix: opts.Prefix, TimeZone: opts.TimeZone,
		Setup: f.setup, PgbenchInit: f.init, Scale: f.scale}
	err = ld.Prepare()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, usageError("%v", err)
	}
	if err == nil || errors.Is(err, logdriver.ErrNoStatements) {
		// Nothing to measure, or mostly lines that could not be read:
		// said as analyze and replay say it.
		if n := source.Check(ld.Lines(), ld.Messages(), ld.Statements(), f.maxSkipped/100, source.Dropped{}, nil); n != nil {
			return nil, false, nothingError(n)
		}
	}
	if err != nil {
		return nil, false, openError(err)
	}
	if f.target == "" && !f.init && f.setup == "" {
		fmt.Fprintln(stdio.Stderr, "sweep: warning: the throwaway clusters will have no schema for the log: its statements will fail; give --setup FILE.sql (or --init for a pgbench capture)")
	}
	// On a target, the setup file runs as Init does.
	return ld, f.init || f.setup != "", nil
}

// writeSweep writes the tables, then the JSON and HTML files asked for.
func writeSweep(stdio IO, f sweepFlags, res *sweep.Result) error {
	tableOut := summaryWriter(stdio, f.jsonPath)
	if err := report.WriteSweep(tableOut, res); err != nil {
		return fmt.Errorf("write tables: %w", err)
	}
	if f.jsonPath != "" {
		if err := writeJSON(stdio.Stdout, f.jsonPath, res); err != nil {
			return err
		}
	}
	if f.htmlPath != "" {
		return writeSweepHTML(f.htmlPath, res)
	}
	return nil
}

func writeSweepHTML(path string, res *sweep.Result) error {
	if err := outfile.Write(path, func(w io.Writer) error { return htmlreport.Write(w, report.SweepPage(res)) }); err != nil {
		return fmt.Errorf("write HTML: %w", err)
	}
	return nil
}
