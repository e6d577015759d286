package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/promsink"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

type replayFlags struct {
	findings    bool
	findingsDSN string
	target      string
	speed       float64
	jsonPath    string
	logFlags
	start, end                    string
	databases                     []string
	users                         []string
	applications                  []string
	dryRun, readOnly, pool        bool
	lockTimeout, statementTimeout time.Duration
	maxErrorRate                  float64
	errorWindow                   int
	userMap, dbMap                []string
	metricsAddr                   string
	grace                         time.Duration
	targetLogs                    []string
	targetLogPrefix               string
	sync                          string
	syncTimeout                   time.Duration
	observe                       observeFlags
	skipPreflight                 bool
	ignoreConnLimit               bool
	requireStart                  bool
	maxLost                       float64
	maxSkipped                    float64
	maxLag                        time.Duration
	connectTimeout                time.Duration
	ioTimeout                     time.Duration
	shards                        shardFlags
	keepSamples                   bool
	batchInserts                  int
	cleanup, keepAnswers          bool
}

// readAheadHelp is the paragraph of replay's and rehearse's help on the
// cap of the statements read ahead of their sessions.
func readAheadHelp() string {
	n := replayrun.DefaultBudget >> 20
	return fmt.Sprintf(`The statements read ahead of their sessions are held to %d MiB in all
(estimated): when the target cannot keep up with the schedule, the reader
waits there for it instead of reading on, so that a long log replayed faster
than the target runs keeps the replayer's memory flat; the summary then says
so ("read-ahead held at %d MiB: the dispatcher waited
X s for the target"), and the statements due meanwhile show as lag.`, n, n)
}

// targetDataHelp is the replay's help on answers that say the target's
// data differs from the start (issue 59 item 3).
const targetDataHelp = ` With a capture as input,
answers that differ from the recorded ones in statements that read rows no
concurrent transaction of the original touched, with nothing else to explain
them, mean the target's data differs from the start when the same rows read
differently more than once: the tables are named, exit code 6 (docs/sync.md).
Rows read differently once are counted as suspect and do not fail the replay.`

// replaySyncHelp is the replay's help on --sync (docs/sync.md).
const replaySyncHelp = `Sessions that depend on each other's writes stay in order (--sync, on by
default): a statement waits until the transactions of other sessions that
committed before it started in the log, and wrote a table it reads or writes
(foreign keys and views followed through the target's catalog; only the row,
where the statement names one by its primary key as a logged parameter), have
committed on the target; and, in the default mode --sync answers, a commit
waits until the statements of other sessions that ended before it was sent in
the log, and read what it wrote, have run: each statement at its original
point among the commits, so that only a statement whose run overlapped such a
commit can answer otherwise. --sync object leaves out that second direction,
--sync commit waits for every earlier commit, --sync load only where running
first would fail or lose a write (writes and locks as object, reads only for
changes of the schema: the load the application gave, rehearse's default),
--sync off for none. The summary's sync line names the mode the replay ran. A wait is given up after --sync-timeout with no progress from
the session or shard it waits on (and after many times it in all), and one
that would deadlock with a row lock ends at once; the summary counts both. Schedule lag
leaves sync waits out; they are reported on their own. See docs/sync.md for
what this guarantees and what it cannot.
`

func newReplayCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay --target DSN [flags] LOG|CAPTURE...",
		Short: "Replay the traffic of PostgreSQL server logs against a target server",
		Long: `replay plays the sessions of PostgreSQL server logs (as analyze reads them)
against a target server: each original session is its own connection, as its
logged user to its logged database (--user-map and --database-map rename
them), running its statements in log order at the original pace times
--speed. Sessions run concurrently and a statement that is slow on the
target delays only its own session. --speed 0 runs as fast as possible,
keeping each session's order.

` + replaySyncHelp + `
--target is a libpq connection string or URI; its user and database are
replaced per session, everything else (host, port, sslmode, password) and
the libpq environment (PGHOST, PGPASSWORD, PGPASSFILE...) apply to every
session, so a password file can serve several users.

Simple-protocol query strings are sent as they were, several statements
included; extended-protocol executions are sent with their logged parameters
in text form with types left to the server; named statements are prepared
once per session. Statements that cannot be replayed are skipped and counted
by reason: parameters not logged or truncated, COPY FROM STDIN (its data is
not in the log), and with --read-only those that can write (decided by
parsing; sessions also run with default_transaction_read_only).
--batch-inserts N sends each session's consecutive single-row INSERTs into
one table (the same columns, no other statement of the session between
them) as multi-row INSERTs of up to N rows, and says how many were merged,
those left as they were by reason, and their time and WAL per row
(docs/rehearse.md).

The result (per query calls, errors and latencies as analyze --json, plus
statement and session counts, schedule lag, errors by SQLSTATE and the
original's failures against the target's) is summarized on standard output
and written as JSON with --json FILE ("-" for standard output).

With --target-log PATH (the target's server log, as the target writes it
during the replay), the replay afterwards reads the part of it written since
the replay began, matches its statements to the replay's connections by
session (each connection's backend pid and start time, the %c session id)
and order, and reports server-side durations per query: queries then hold
the target's own durations (latency_source "server_log"), and the client's
round trips move to client_queries, so that the two are never compared with
each other. The target needs log_min_duration_statement = 0, a
log_line_prefix with %p and %c, and lc_messages = 'C'; the replay fails when
its log does not have them.

Before the schedule starts, a pre-flight connects as every user and database
the log will use (after the maps and filters; the logs' first seconds of
reading when they are large) and sends the empty query (which no
pg_stat_statements counts), and with --target-log or
--observe as the target DSN's own user; it fails within seconds, saying what
to do for each login refused (a wrong host or port, a password or pg_hba.conf,
a missing role or database). It also compares the logs' peak of sessions open
at once (of their first seconds of reading when they are large) with the
target's free connection slots (max_connections less the reserved slots and
the connections in use), and refuses a log that needs more (exit 1) unless
--ignore-connection-limit. --skip-preflight turns it off. A capture taken
with --monitor-dsn records its starting point: the pre-flight then compares
the target's tables with it (estimated rows, 10% and 1,000 rows apart at
least) and names those that differ or are missing; --require-start-state makes
that an error, exit 1 before anything is replayed (docs/start-state.md).

` + readAheadHelp() + `

The run fails loudly (exit 1) when sessions could not connect to the target,
and exits 3 when the target's error rate exceeds the original's by more than
--max-error-rate percentage points, not counting the failures only on the
target that are explained (an id the original's server assigned, named in a
statement; session state from before a recording): the summary says how
many it discounted. Ctrl-C stops issuing statements and lets
those in flight finish; a second Ctrl-C, --grace later, or a SIGTERM at any
time cancels them on the server (a cancel request each) and rolls back every
open transaction; the results of what ran are then written, marked partial,
and the exit code is 5. A replay whose fault recovery changed its timings
(sessions that reconnected after a restart, sync waits given up at their
timeout beyond 0.1% of the statements) is marked degraded and exits 5: report
will not judge it. A statement that gets no answer for --io-timeout (beyond
twice its logged duration) makes the replay ask the target on a new
connection: a target that does not answer is taken for frozen and the replay
stops early, exit 5, naming the silent connection.` + targetDataHelp + `
` + captureHelp + shardsHelp + exitHelp(exitDocErrorRate, exitDocNoInput, exitDocReplayIncomplete, exitDocTargetData),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A dry run measures the log, not a pace: it runs unpaced
			// unless --speed asks for the schedule's timing.
			if f.dryRun && !cmd.Flags().Changed("speed") {
				f.speed = 0
			}
			f.shards.syncGiven = cmd.Flags().Changed("sync")
			return runReplayCmd(cmd.Context(), stdio, f, args)
		},
	}
	fl := cmd.Flags()
	dsnVar(fl, &f.target, "target", "connection string or URI of the target server (required unless --dry-run)")
	fl.BoolVar(&f.findings, "findings", true, "name the known performance traps of the workload as the target ran it")
	dsnVar(fl, &f.findingsDSN, "findings-dsn", "the target's database with the workload's schema, for the findings that need its catalog, plans or pg_stat_statements (read-only; default: the target, in the database of most of the replay's logins)")
	fl.IntVar(&f.batchInserts, "batch-inserts", 0, "send each session's consecutive single-row INSERTs into one table (same columns, no other statement between) as multi-row INSERTs of up to `N` rows, and measure their time and WAL per row (1: measure without merging; see docs/rehearse.md)")
	fl.StringVar(&f.jsonPath, "json", "", `write the result as JSON to `+"`FILE`"+` ("-" for standard output)`)
	fl.BoolVar(&f.dryRun, "dry-run", false, "read and schedule without connecting; report what would be sent (as fast as the log reads, unless --speed is given)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (host:port; a bare :port listens on loopback)")
	fl.StringSliceVar(&f.targetLogs, "target-log", nil, "after the replay, read the target's own server log (a file or a quoted pattern such as 'dir/*.log'; repeatable) for server-side durations per query; the target needs "+replayrun.TargetLogSettings)
	fl.Float64Var(&f.maxErrorRate, "max-error-rate", 1, "fail (exit 3) when the target's error rate exceeds the original's by more than this many percentage points")
	fl.IntVar(&f.errorWindow, "error-window", replayrun.DefaultErrorWindow, "the start window of --max-error-rate: stop early (exit 3) when the first `N` statements all fail on the target and none of them in the original (no schema on the target: 42P01 everywhere); 0 never stops")
	addReplayOptionFlags(fl, &f, replayrun.SyncAnswers)
	addReplayOnlyFlags(fl, &f)
	return cmd
}

// addReplayOnlyFlags registers the flags of replay that rehearse does not
// share: sharding, and the cleanup of what the replay left.
func addReplayOnlyFlags(fl *pflag.FlagSet, f *replayFlags) {
	addShardFlags(fl, &f.shards)
	fl.BoolVar(&f.keepAnswers, "keep-answers", false, "keep each execution whose answer differed from the original's, with its session, its times in the capture and what explains it, in the JSON result (\"differing_answers\"; no parameter value)")
	fl.BoolVar(&f.cleanup, "cleanup", false, "at the end, roll back (ROLLBACK PREPARED) the transactions the replay prepared on the target and left prepared; named, with the advisory locks its sessions held as they ended, with or without this flag")
}

func runReplayCmd(ctx context.Context, stdio IO, f replayFlags, paths []string) error {
	cfg, err := replayConfig(stdio, f, paths)
	if err != nil {
		return err
	}
	// The result must have somewhere to go before the target is touched.
	if err := checkOutputs("--json", f.jsonPath); err != nil {
		return err
	}
	if f.metricsAddr != "" {
		sink, stopMetrics, err := startMetrics(stdio, f.metricsAddr, metricLabels(&cfg))
		if err != nil {
			return err
		}
		cfg.Replay.Sink = sink
		defer stopMetrics()
	}
	// ctx (Ctrl-C) stops issuing statements; a second Ctrl-C, or --grace
	// after the first, cancels those in flight.
	second, release := secondInterrupt(ctx)
	defer release()
	cfg.Hard = second
	var stopLine func()
	cfg.OnStart = func(r *replayrun.Replayer, set *source.Set) { stopLine = startProgressLine(stdio.Stderr, r, set) }
	cfg.OnEnd = func() { stopLine() }
	start := time.Now()
	cfg.OnPreflight = func(pf *replayrun.Preflight) { report.WritePreflight(stdio.Stderr, pf, start, newLoginHints(f)) }

	o, err := replayrun.Run(ctx, cfg)
	if err != nil {
		return replayRunError(stdio, err, start, newLoginHints(f))
	}
	if err := writeReplayOutputs(stdio, f, o); err != nil {
		return err
	}
	return replayExit(o, f.maxErrorRate, newLoginHints(f))
}

// replayConfig turns the flags into the run's configuration, or a usage
// error.
func replayConfig(stdio IO, f replayFlags, paths []string) (replayrun.Config, error) {
	var cfg replayrun.Config
	opts, err := replayOptions(f)
	if err != nil {
		return cfg, err
	}
	so, err := f.logFlags.sourceOptions(stdio, 1, nil)
	if err != nil {
		return cfg, err
	}
	sel := source.Selection{
		Databases:    splitList(f.databases),
		Users:        splitList(f.users),
		Applications: splitList(f.applications),
		// Events are in completion order, so one that started before
		// --end may still come a little later; past it by the
		// lookahead, nothing of the window is left.
		StopAfter: replayrun.DefaultLookahead.Microseconds(),
	}
	if sel.Start, sel.End, err = timeWindow(f.start, f.end); err != nil {
		return cfg, err
	}
	if f.keepSamples {
		opts.Samples = results.NewSampler(0)
	}
	cfg = replayrun.Config{
		Input: source.Paths(paths), Source: so, Selection: sel, Replay: opts, Grace: f.grace,
		SkipPreflight: f.skipPreflight, IgnoreConnectionLimit: f.ignoreConnLimit, TargetLogs: splitList(f.targetLogs), TargetLogPrefix: f.targetLogPrefix,
		Findings: f.findings, FindingsDSN: f.findingsDSN, BatchInserts: f.batchInserts,
		MaxSkipped: f.maxSkipped / 100, MaxErrorRate: f.maxErrorRate,
		Describe: report.NothingText,
		Warn:     func(w string) { fmt.Fprintf(stdio.Stderr, "pgrehearse: %s\n", w) },
	}
	if f.batchInserts < 0 {
		return cfg, usageError("--batch-inserts must be 1 or more rows (0: off), got %d", f.batchInserts)
	}
	if f.requireStart {
		if f.skipPreflight {
			return cfg, usageError("--require-start-state is checked by the pre-flight, which --skip-preflight turns off")
		}
		cfg.StartCheck = replayrun.StartCheckRequire
	}
	if err := f.shards.apply(&cfg); err != nil {
		return cfg, err
	}
	if f.observe.enabled && !f.dryRun {
		oo, err := f.observe.options()
		if err != nil {
			return cfg, err
		}
		cfg.Observe = &oo
	}
	return cfg, nil
}

// replayRunError renders the errors of a run that produced no result in
// the command's words.
func replayRunError(stdio IO, err error, start time.Time, h report.LoginHints) error {
	var oe *replayrun.OptionsError
	var pe *replayrun.PreflightError
	var se *replayrun.StartStateError
	var te *replayrun.TimelessError
	var ie *replayrun.InterruptedError
	var sse *replayrun.ShardSyncError
	switch {
	case errors.As(err, new(*replayrun.DataDiffersError)):
		return &exitError{code: ExitDiverged, err: fmt.Errorf("REPLAY FAILED: %v", err)}
	case errors.As(err, &sse):
		return usageError("--sync %s: %v (--sync %s, or --coord-dsn with --run-id)", sse.Mode, sse, sse.Instead)
	case errors.As(err, &ie):
		return &exitError{code: ExitIncomplete, err: errors.New("INTERRUPTED during the pre-flight: nothing was replayed")}
	case errors.As(err, &oe):
		return usageError("%v", oe.Err)
	case errors.As(err, &pe):
		return report.PreflightFailed(stdio.Stderr, pe.Preflight, h)
	case errors.As(err, &se):
		return report.StartStateFailed(stdio.Stderr, se)
	case errors.As(err, &te):
		return &exitError{code: ExitNoInput, err: fmt.Errorf("NOTHING MEASURED: %v", te)}
	}
	return openError(err)
}

// writeReplayOutputs writes the summary, the evidence and the findings of
// the replay (standard error when the JSON goes to standard output), and
// the JSON with --json, which findings that failed do not prevent.
func writeReplayOutputs(stdio IO, f replayFlags, o *replayrun.Outcome) error {
	summaryOut := summaryWriter(stdio, f.jsonPath)
	res := o.Result
	if err := report.WriteReplay(summaryOut, res, replayHints); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if ev := o.Evidence; ev != nil {
		fmt.Fprintln(summaryOut)
		if err := report.WriteEvidence(summaryOut, ev, 5); err != nil {
			return fmt.Errorf("write evidence: %w", err)
		}
	}
	if o.Findings != nil {
		fmt.Fprintln(summaryOut)
		if err := report.WriteFindings(summaryOut, o.Findings, replayHints); err != nil {
			return fmt.Errorf("write findings: %w", err)
		}
	}
	if f.jsonPath != "" {
		return writeJSON(stdio.Stdout, f.jsonPath, replayOutput{Result: res, Findings: o.Findings})
	}
	return nil
}

// replayExit maps the outcome's first reason to the exit: what stopped
// the replay, what the target's log could not give, a log not read whole,
// a fault that ended it early, an interruption, nothing measured, a
// failed verdict, an incomplete result. A divergence is a report's to
// judge, against the baseline: it does not fail the replay.
func replayExit(o *replayrun.Outcome, maxErrorRate float64, h report.LoginHints) error {
	res := o.Result
	for _, r := range o.Reasons {
		switch r {
		case replayrun.ReasonFindingsFailed:
			return o.FindingsErr
		case replayrun.ReasonStopped:
			return o.Err
		case replayrun.ReasonTargetLog:
			return targetLogError(o.TargetLogErr)
		case replayrun.ReasonInputCut:
			return cutError(o.Cut)
		case replayrun.ReasonTargetGone:
			return replayIncomplete(res)
		case replayrun.ReasonErrorStart:
			return &exitError{code: ExitRegression, err: fmt.Errorf("REPLAY STOPPED EARLY: %s (--error-window; the result is marked incomplete)",
				report.IncompleteText(res, results.IncompleteErrorStart))}
		case replayrun.ReasonInterrupted:
			if len(res.Incomplete) > 0 {
				return replayIncomplete(res)
			}
			return &exitError{code: ExitIncomplete, err: errors.New("INTERRUPTED: the results above are partial; report will not judge them")}
		case replayrun.ReasonNothingMeasured:
			return nothingError(o.Nothing)
		case replayrun.ReasonDegraded:
			// Before the error rate: errors around a fault are the
			// fault's.
			if len(res.Incomplete) > 0 {
				return replayIncomplete(res)
			}
			return &exitError{code: ExitIncomplete, err: fmt.Errorf("REPLAY DEGRADED: %s; the result is marked degraded and report will not judge it",
				strings.Join(res.Degraded, "; "))}
		case replayrun.ReasonConnectFailures:
			return errors.New(report.ConnectFailedText(res, h))
		case replayrun.ReasonErrorRate:
			return &exitError{code: ExitRegression, err: errors.New(report.ErrorRateText(res.Outcomes, maxErrorRate))}
		case replayrun.ReasonIncomplete:
			return replayIncomplete(res)
		case replayrun.ReasonTargetData:
			return &exitError{code: ExitDiverged, err: errors.New(report.TargetDataText(res.Outcomes))}
		}
	}
	return nil
}

// replayIncomplete fails a replay whose result is marked incomplete.
func replayIncomplete(res *results.Result) error {
	return &exitError{code: ExitIncomplete, err: errors.New(report.ReplayIncompleteText(res))}
}

func replayOptions(f replayFlags) (replayrun.Options, error) {
	opts := replayrun.Options{
		Target:           f.target,
		Speed:            f.speed,
		DryRun:           f.dryRun,
		ReadOnly:         f.readOnly,
		LockTimeout:      f.lockTimeout,
		StatementTimeout: f.statementTimeout,
		MaxLost:          f.maxLost / 100,
		ConnectTimeout:   f.connectTimeout,
		IOTimeout:        f.ioTimeout,
		MaxLag:           f.maxLag,
		ErrorWindow:      f.errorWindow,
		Cleanup:          f.cleanup,
		KeepAnswers:      f.keepAnswers,
		Pool:             f.pool,
	}
	if err := opts.Validate(); err != nil {
		return opts, usageError("%v", err)
	}
	if len(f.targetLogs) > 0 && f.dryRun {
		return opts, usageError("--target-log needs a replay that runs: not with --dry-run")
	}
	if f.maxErrorRate < 0 {
		return opts, usageError("--max-error-rate must not be negative")
	}
	if f.maxSkipped < 0 || f.maxSkipped > 100 {
		return opts, usageError("--max-skipped is a percentage between 0 and 100, got %v", f.maxSkipped)
	}
	if f.maxLost < 0 || f.maxLost > 100 {
		return opts, usageError("--max-lost is a percentage between 0 and 100, got %v", f.maxLost)
	}
	var err error
	if opts.Sync, err = replayrun.ParseSyncMode(f.sync); err != nil {
		return opts, usageError("--sync: %v", err)
	}
	if f.ioTimeout <= 0 {
		return opts, usageError("--io-timeout must be positive, got %v", f.ioTimeout)
	}
	if f.syncTimeout <= 0 {
		return opts, usageError("--sync-timeout must be positive, got %v", f.syncTimeout)
	}
	opts.SyncTimeout = f.syncTimeout
	if opts.UserMap, err = replayrun.ParseMap(f.userMap); err != nil {
		return opts, usageError("--user-map: %v", err)
	}
	if opts.DatabaseMap, err = replayrun.ParseMap(f.dbMap); err != nil {
		return opts, usageError("--database-map: %v", err)
	}
	return opts, nil
}

// splitList accepts both repeated flags and comma lists (pflag's string
// slices already split on commas; this drops empty entries).
func splitList(in []string) []string {
	var out []string
	for _, s := range in {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// startProgressLine redraws one status line on standard error twice a
// second, when it is a terminal; the returned function erases it.
func startProgressLine(stderr io.Writer, r *replayrun.Replayer, set *source.Set) func() {
	f, ok := stderr.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		var lastDone int64
		last := time.Now()
		for {
			select {
			case <-done:
				fmt.Fprint(f, "\r\x1b[K")
				return
			case now := <-t.C:
				p := r.Progress()
				rate := float64(p.Done-lastDone) / now.Sub(last).Seconds()
				lastDone, last = p.Done, now
				read, total := set.Progress()
				fmt.Fprint(f, "\r\x1b[K"+report.ReplayProgress(p, read, total, rate))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// replayOutput is what replay --json writes: the result, and its findings
// under "findings".
type replayOutput = report.ResultJSON

// targetLogError says which option named the target's log file that
// failed, and how to give a prefix it could not detect.
func targetLogError(err error) error {
	var te *replayrun.TargetLogError
	switch {
	case err == nil || !errors.As(err, &te):
		return err
	case errors.Is(err, logread.ErrUnknownPrefix):
		return fmt.Errorf("--target-log %w; or give it with --target-log-prefix", err)
	case te.Path != "":
		return fmt.Errorf("--target-log %w", err)
	default:
		return fmt.Errorf("--target-log: %w", err)
	}
}

// startMetrics serves the replay's Prometheus metrics on addr (loopback
// unless addr names a host) and says where on standard error.
func startMetrics(stdio IO, addr string, labels prometheus.Labels) (replayrun.SampleSink, func(), error) {
	m, bound, stop, err := promsink.ServeLabeled(addr, labels)
	if err != nil {
		return nil, nil, fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	fmt.Fprintf(stdio.Stderr, "replay: metrics on http://%s/metrics\n", bound)
	return m, stop, nil
}
