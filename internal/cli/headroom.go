package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
	"github.com/pgrehearse/pgrehearse/internal/sweep"
)

type headroomFlags struct {
	replayFlags
	control, candidate               string
	controlLogs, candidateLogs       []string
	resetMode, resetCmd              string
	controlCluster, candidateCluster string
	slo                              string
	by                               string
	maxK                             float64
	budget                           time.Duration
	baseRounds, boundaryRounds       int
	require                          float64
	out                              string
	htmlPath                         string
	// shards splits every step's replay by session into this many
	// replays at once, meeting in the coordination database coordDSN.
	shards   int
	coordDSN string
	// forward are the replay options given, as a shard process is
	// started with them (forwardedFlags).
	forward []string
	// tries are --try's NAME:SQL, the user's own changes.
	tries []string
}

// headroomTryHelp is headroom --help's paragraph on --try.
const headroomTryHelp = `--try 'NAME:SQL' (repeatable), after the search, searches the candidate (the
one target) again for each, its SQL run after every reset in the reset's copy
of the workload's databases: "k held: 1.5x without, 4x with NAME". It needs a
reset that undoes it (not --reset none). A try whose SQL fails is "not tried",
with the server's error, and leaves the exit code as it is. The time left on
each step's line counts the tries' searches still to come. Ctrl-C during a
try keeps the searches and tries finished, marks the one under way partial
and names those not run ("tries not run"). --require judges the searches of
the targets as they are, never a try's k (a change the target does not
have); the line "--require Kx: met (...)" says so when there are tries.`

func newHeadroomCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f headroomFlags
	cmd := &cobra.Command{
		Use:   "headroom --control DSN [--candidate DSN] [flags] LOG...",
		Short: "Find how many times the log's load each target holds within an SLO",
		Long: `headroom answers "how much room is left?": it replays the log (or a capture
directory) at growing load factors k on each target and finds the largest k
at which the target still meets the SLO (--slo), relative to the same target
at k = 1 measured in the same run: "control holds 3.1x (2.8-3.4) the log's
load, candidate 2.2x (2.0-2.5); first to break on the candidate: SELECT ...
p95 +50% (1.2 ms -> 1.8 ms) at 2.4x, its sessions waiting on LWLock:BufferIO".
One target alone (--control) is searched the same way.

How k times the load is made (--by):
  speed  (default) the same sessions at k times the log's pace (--speed k
         times). It keeps the log's keys and its commit order, so it adds
         no new data and no new sessions: a session is a closed loop, and
         at k times its pace its think time may vanish, its own round
         trips then bound it. The answer says so when they do (the target
         answered as fast as at 1x while the load fell short of k), and
         does not call that a break of the target.
  fold   k consecutive slices of the log, each 1/k of it, overlaid on one
         window: one replay of the k slices at once, each at the log's pace,
         so the extra load is real, different traffic (other keys, other
         sessions), as Oracle's consolidated replay scales up. Commit order
         is kept inside each slice, not across them: a statement may meet
         a row that a later slice's traffic made or changed, and sessions
         cut by a slice's edge start or end in their middle. k is whole
         (2, 3, 4, 6, 8 ...); every step runs every statement of the log
         once, so a 60 s log folded 3 times runs in 20 s. The targets'
         logs (--control-log) cannot time the slices apart: steps are timed
         by the replayer.

The search, per target: --base-rounds rounds at 1x (their median is what
every step is judged against); then 1.5, 2, 3, 4, 6, 8, 12, 16 ... up to
--max-k until a step breaks the SLO; then bisection between the last k that
held and the first that broke; then --boundary-rounds rounds at both ends,
each moved outward until every round at the lower end held and every round
at the upper end broke. The interval widens the bracket by the noise the
repeated rounds measured (and the 1x rounds' own error, which moves every
step alike). k is what was achieved (statements per second over 1x's), not
what was asked. A step breaks the SLO when one of the queries that take 5%
of the time at 1x (with 50 timed calls; BEGIN and savepoints left out)
breaks a latency rule beyond the spread of its own 1x rounds (scaled to
three rounds, as report's noise floor) and by more than 0.2 ms, when the error rate grows beyond an errors rule, when the replay
could not run whole (statements lost, connections refused), when it fell
behind its schedule by --max-lag more than at 1x (lag p99) while the target
answered slower, or when it fell short of its k waiting on the target (the
query the sessions waited on is named).
When the replayer's own CPU is saturated, or the lag is its own, the search
stops there and names the replayer, not the target.

Each step starts from the reset state, as rehearse's rounds do (--reset
template, none, datadir or --reset-cmd; see rehearse --help), and the two
targets alternate (control, candidate, then candidate, control ...). A line
per step on standard error says where the search is and about how long is
left; --max-k and --budget bound it. Each step's replay result goes to --out
as it ends. Ctrl-C stops the step under way and answers from the steps
finished, marked partial (exit 5).

--shards N --coord-dsn DSN replays every step (and every slice of a fold)
split by session into N shards at once, as replay --shard K/N --coord-dsn
does across processes: they start together at a rendezvous in the
coordination database (a PostgreSQL database that is not a target), and
with --sync a statement waits there for the commits it depends on in other
shards. Their results are merged, as pgrehearse merge merges shards, into
the step's. Each shard is a process of this pgrehearse's binary
(pgrehearse replay --shard K/N --coord-dsn ... --run-id ..., with the
step's target, speed, database map, window and target logs as flags, and
the replay options given here), so their CPU adds up beyond one process's;
a line on standard error names each step's shard processes. Ctrl-C is
passed on to them. A shard process that cannot start, or ends without its
result (killed, crashed), fails its step, naming it; the other shards are
then stopped, and none is left running. The step's replayer CPU is the
shards' added up, judged against this machine's cores (the shards share
them): a step whose shards saturate them needs shards on other machines
(docs/sharding.md). Only when the binary cannot be found do the shards
run inside this process, as the start line says.

` + headroomTryHelp + `

Every step shows its throughput, errors, lag, the replayer's CPU, the rule
nearest to its limit and the top wait event (with --observe, on by
default). The Universal Scalability Law fitted to the steps' throughput
stands beside the measurement, with its predicted peak. --json writes the
whole run (docs/headroom-json.md).
` + exitHelp(exitDocNoInput,
			exitDoc{ExitRegression, "a target holds less than --require"},
			exitDoc{ExitIncomplete, "interrupted (Ctrl-C, SIGTERM) or stopped by --budget before a search finished: the answer is of the steps finished, marked partial; or --require held only in steps shorter than 20 s"}),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.forward = forwardedFlags(cmd)
			return runHeadroomCmd(cmd.Context(), stdio, f, cmd.Flags().Changed("reset"), args)
		},
	}
	fl := cmd.Flags()
	dsnVar(fl, &f.control, "control", "connection string or URI of the control target (or the one target)")
	dsnVar(fl, &f.candidate, "candidate", "connection string or URI of the candidate target, searched the same way, in alternation")
	fl.StringSliceVar(&f.controlLogs, "control-log", nil, "the control's own server log (path or glob), read after each step for server-side durations; the target needs "+replayrun.TargetLogSettings)
	fl.StringSliceVar(&f.candidateLogs, "candidate-log", nil, "the candidate's own server log, as --control-log")
	fl.StringVar(&f.resetMode, "reset", string(reset.ModeTemplate), "how each target returns to its starting state before each step: template, none or datadir")
	fl.StringVar(&f.resetCmd, "reset-cmd", "", "your own reset `COMMAND`, run by /bin/sh before each step (see rehearse --help)")
	fl.StringVar(&f.controlCluster, "control-cluster", "", "with --reset datadir: the control's throwaway cluster directory")
	fl.StringVar(&f.candidateCluster, "candidate-cluster", "", "with --reset datadir: the candidate's throwaway cluster directory")
	fl.StringVar(&f.slo, "slo", judge.DefaultSLO, "what a target must keep, relative to itself at 1x: p50, p95, p99 or mean as <+N% or <Nx, errors as <+Npp")
	fl.StringVar(&f.by, "by", string(headroom.BySpeed), "how k times the load is made: speed (the same sessions at k times their pace) or fold (k slices of the log at once)")
	fl.Float64Var(&f.maxK, "max-k", headroom.DefaultMaxK, "the largest load factor tried")
	fl.DurationVar(&f.budget, "budget", 0, "stop before a step that would end past this much time (0: no bound); the answer is then partial")
	fl.IntVar(&f.baseRounds, "base-rounds", headroom.DefaultBaseRounds, "rounds at 1x per target, whose median every step is judged against")
	fl.IntVar(&f.boundaryRounds, "boundary-rounds", headroom.DefaultBoundaryRounds, "rounds at each end of the final interval")
	fl.Float64Var(&f.require, "require", 0, "exit 3 when a target's estimate is below this load factor (0: never); judged on the searches without the tries")
	addHeadroomMoreFlags(fl, &f)
	addReplayOptionFlags(fl, &f.replayFlags, replayrun.SyncLoad)
	return cmd
}

// addHeadroomMoreFlags adds the flags of the outputs, the shards and
// the tries.
func addHeadroomMoreFlags(fl *pflag.FlagSet, f *headroomFlags) {
	fl.StringVar(&f.out, "out", "", "directory for each step's replay result (default: none)")
	fl.StringVar(&f.jsonPath, "json", "", `write the run as JSON to `+"`FILE`"+` ("-" for standard output)`)
	fl.StringVar(&f.htmlPath, "html", "", "write a page with throughput and p95 against k to `FILE`")
	fl.IntVar(&f.shards, "shards", 1, "replay every step split by session into `N` shards at once, which meet in the coordination database (--coord-dsn): for loads one replayer cannot send")
	dsnVar(fl, &f.coordDSN, "coord-dsn", "with --shards: the coordination database of the shards (a PostgreSQL database that is not a target): one start, clock offsets, and commits waited for across shards")
	fl.StringArrayVar(&f.tries, "try", nil, "after the search, search the candidate (the one target) again with your own `NAME:SQL` applied to its reset copy of the workload's databases after every reset, and say the k it holds with it beside the k without it (repeatable)")
}

// headroomChecks checks the flags against each other and parses the SLO.
func headroomChecks(f headroomFlags, resetGiven bool) (judge.SLO, error) {
	var slo judge.SLO
	switch {
	case f.control == "" && f.controlCluster == "":
		return slo, usageError("headroom needs a target: --control DSN (and --candidate DSN to compare two)")
	case f.control != "" && f.control == f.candidate:
		return slo, usageError("--control and --candidate are the same server")
	case f.by != string(headroom.BySpeed) && f.by != string(headroom.ByFold):
		return slo, usageError("--by %q: speed or fold", f.by)
	case f.maxK <= 1 || (f.by == string(headroom.ByFold) && f.maxK < 2):
		return slo, usageError("--max-k must be above 1 (at least 2 by fold), got %g", f.maxK)
	case f.baseRounds < 1 || f.boundaryRounds < 1:
		return slo, usageError("--base-rounds and --boundary-rounds must be at least 1")
	case f.speed <= 0:
		return slo, usageError("headroom multiplies the log's pace: --speed must be above 0 (1: as logged)")
	case f.resetCmd != "" && resetGiven:
		return slo, usageError("--reset-cmd is a reset of its own: give it or --reset, not both")
	case len(f.targetLogs) > 0:
		return slo, usageError("headroom reads each target's log: --control-log and --candidate-log")
	case f.dryRun:
		return slo, usageError("headroom replays: no --dry-run")
	case f.by == string(headroom.ByFold) && (len(f.controlLogs) > 0 || len(f.candidateLogs) > 0):
		return slo, usageError("--by fold times each step by the replayer: the targets' logs cannot be split between the slices replayed at once")
	case f.shards < 1:
		return slo, usageError("--shards must be at least 1, got %d", f.shards)
	case f.shards > 1 && f.coordDSN == "":
		return slo, usageError("--shards %d needs the shards' coordination database, for their one start and the commits they wait for in each other: --coord-dsn DSN (not a target)", f.shards)
	case f.shards == 1 && f.coordDSN != "":
		return slo, usageError("--coord-dsn is for a step split in shards: --shards N, N > 1")
	case f.coordDSN != "" && (f.coordDSN == f.control || f.coordDSN == f.candidate):
		return slo, usageError("--coord-dsn is a target: the shards' coordination database must be another, so that it does not disturb what is measured")
	case len(f.tries) > 0 && f.resetCmd == "" && f.resetMode == string(reset.ModeNone):
		return slo, usageError("--try needs a reset that undoes it: not --reset none")
	case len(f.candidateLogs) > 0 && f.candidate == "" && f.candidateCluster == "":
		return slo, usageError("--candidate-log without --candidate")
	case f.candidate != "" && len(f.controlLogs) > 0 != (len(f.candidateLogs) > 0):
		return slo, usageError("--control-log and --candidate-log go together: both sides need the same source of durations")
	}
	if _, err := reset.ParseMode(f.resetMode); err != nil {
		return slo, usageError("--reset: %v", err)
	}
	if _, err := parseTries(f.tries); err != nil {
		return slo, err
	}
	slo, err := judge.ParseSLO(f.slo)
	if err != nil {
		return slo, usageError("--slo: %v", err)
	}
	slo.MaxLag = f.maxLag
	return slo, nil
}

// headroomRun is a headroom run as the command sets it up.
type headroomRun struct {
	stdio  IO
	f      headroomFlags
	replay replayrun.Config
	cfg    headroom.Config
	shown  *sidesShown
	// first and span are the log's first event time (µs since the
	// epoch) and its length in log time, for --by fold's slices.
	first int64
	span  time.Duration
	// runID names the run's sharded replays in the coordination
	// database, each step's with its step and slice after it.
	runID string
	// paths are the logs as given, for the shard processes.
	paths []string
	// shards replays a step split in shards (--shards N, N > 1).
	shards *replayrun.ShardReplay
}

func runHeadroomCmd(ctx context.Context, stdio IO, f headroomFlags, resetGiven bool, paths []string) error {
	slo, err := headroomChecks(f, resetGiven)
	if err != nil {
		return err
	}
	clusters, err := headroomClusters(&f)
	if err != nil {
		return err
	}
	if f.candidate != "" {
		// One server under two spellings is refused before any step.
		dsn := map[rehearse.Side]string{rehearse.Control: f.control, rehearse.Candidate: f.candidate}
		if err := sameServerError(dsn, askServers(ctx, dsn)); err != nil {
			return err
		}
	}
	rf := f.replayFlags
	rf.target = f.control
	cfg, err := replayConfig(stdio, rf, paths)
	if err != nil {
		return err
	}
	if err := checkOutputs("--json", f.jsonPath, "--html", f.htmlPath); err != nil {
		return err
	}
	if f.out != "" {
		if err := rehearse.CheckDir(f.out, true); err != nil {
			return fmt.Errorf("--out: %w; nothing was done", err)
		}
	}
	if f.shards > 1 {
		if err := replayrun.CheckCoord(ctx, f.coordDSN); err != nil {
			return fmt.Errorf("--coord-dsn: the shards' coordination database cannot be reached: %w; nothing was done", err)
		}
	}
	h := &headroomRun{stdio: stdio, f: f, shown: &sidesShown{}, paths: paths}
	// Each step's errors are the SLO's to judge; findings are not a
	// headroom's.
	cfg.MaxErrorRate, cfg.Findings = 100, false
	cfg.Replay.Cache = fingerprint.NewCache(0)
	cfg.Warn = warnOnce(stdio.Stderr)
	h.replay = cfg
	span, dbs, think, err := h.scan(ctx)
	if err != nil {
		return err
	}
	targets, err := h.targets(ctx, dbs, clusters)
	if err != nil {
		return err
	}
	tries, _ := parseTries(f.tries)
	h.cfg = headroom.Config{
		Targets: targets, SLO: slo, By: headroom.By(f.by), Speed: f.speed, DatabaseMap: cfg.Replay.DatabaseMap,
		Search: headroom.Search{MaxK: f.maxK, BaseRounds: f.baseRounds, BoundaryRounds: f.boundaryRounds},
		Budget: f.budget, Span: span, Think: think, Cores: runtime.GOMAXPROCS(0), Dir: f.out, Shards: f.shards,
		Replay: h.step, Progress: func(p headroom.Progress) { report.WriteHeadroomProgress(stdio.Stderr, p) }, Tries: headroomTries(tries), Databases: dbs,
		ServerCPU: func(ctx context.Context, dsn string) (func() (float64, error), error) {
			s, err := sweep.LocalServerCPU(ctx, dsn)
			if err != nil {
				return nil, err
			}
			return s.Seconds, nil
		},
	}
	second, release := secondInterrupt(ctx)
	defer release()
	h.replay.Hard = second

	names := make([]string, len(targets))
	for i, t := range targets {
		names[i] = string(t.Side)
	}
	shards := ""
	if f.shards > 1 {
		shards = h.setShards()
	}
	fmt.Fprintf(stdio.Stderr, "headroom: %s by %s, the log %v long at 1x; steps up to %gx, SLO %s%s\n",
		strings.Join(names, " and "), f.by, span.Round(100*time.Millisecond), f.maxK, slo, shards)
	out, runErr := headroom.Run(ctx, h.cfg)
	if out == nil {
		return runErr
	}
	return h.outcome(out, runErr)
}

// headroomTries are --try's fixes as headroom's tries, named as given
// (their steps' files and lines name them so).
func headroomTries(tries []fixes.Fix) []fixes.Fix {
	var out []fixes.Fix
	for _, t := range tries {
		t.Name = strings.TrimPrefix(t.Name, fixes.TryPrefix)
		out = append(out, t)
	}
	return out
}

// warnOnce writes each warning once to stderr: the slices of a fold
// replay at once, each warning alike.
func warnOnce(stderr io.Writer) func(string) {
	var mu sync.Mutex
	warned := map[string]bool{}
	return func(w string) {
		mu.Lock()
		defer mu.Unlock()
		if !warned[w] {
			warned[w] = true
			fmt.Fprintf(stderr, "pgrehearse: %s\n", w)
		}
	}
}

// setShards sets up --shards' steps (shardReplay). It returns what the
// opening line says of them.
func (h *headroomRun) setShards() string {
	h.runID = fmt.Sprintf("headroom-%d-%d", os.Getpid(), time.Now().UnixNano())
	var shards string
	h.shards, shards = h.shardReplay()
	h.cfg.ShardsRun = replayrun.ShardsInProcess
	if h.shards.Procs != nil {
		// The shard processes share this machine's CPUs, whatever
		// this process's GOMAXPROCS: the replayer's CPU, theirs
		// added up, is judged against them (and against the
		// shards' own cores, added up, when fewer).
		h.cfg.Cores = runtime.NumCPU()
		h.cfg.ShardsRun = replayrun.ShardsProcesses
	}
	return shards
}

// outcome writes the headroom search's summary, JSON and page, and is
// the command's error: the search's when it stopped, ExitIncomplete
// when partial, ExitRegression when a side holds less than --require.
func (h *headroomRun) outcome(out *headroom.Outcome, runErr error) error {
	f, stdio := h.f, h.stdio
	summaryOut := summaryWriter(stdio, f.jsonPath)
	if err := report.WriteHeadroom(summaryOut, out); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if f.jsonPath != "" {
		if err := writeJSON(stdio.Stdout, f.jsonPath, out); err != nil {
			return err
		}
	}
	if f.htmlPath != "" {
		if err := writeOutput(stdio.Stdout, f.htmlPath, func(w io.Writer) error { return report.WriteHeadroomHTML(w, out) }); err != nil {
			return err
		}
		fmt.Fprintf(summaryOut, "HTML report: %s\n", f.htmlPath)
	}
	switch {
	case runErr != nil:
		var ee *exitError
		if errors.As(runErr, &ee) {
			return &exitError{code: ee.code, err: fmt.Errorf("HEADROOM STOPPED: %w", runErr)}
		}
		return fmt.Errorf("HEADROOM STOPPED: %w", runErr)
	case out.Partial:
		return &exitError{code: ExitIncomplete, err: fmt.Errorf("PARTIAL: %s; the answer above rests on the steps finished", out.Stopped)}
	}
	if f.require > 0 {
		// The searches of the targets as they are, never a try's.
		line, v := report.HeadroomRequire(out, f.require)
		fmt.Fprintln(summaryOut, line)
		if v != report.RequireMet {
			return &exitError{code: map[report.RequireVerdict]int{report.RequireNotMet: ExitRegression, report.RequireNotJudged: ExitIncomplete}[v], err: errors.New(line)}
		}
	}
	return nil
}

// headroomClusters finds the throwaway clusters of --reset datadir, whose
// DSNs stand for the targets when those are not given.
func headroomClusters(f *headroomFlags) (map[headroom.Side]*pgcluster.Cluster, error) {
	if f.resetCmd != "" || f.resetMode != string(reset.ModeDataDir) {
		if f.controlCluster != "" || f.candidateCluster != "" {
			return nil, usageError("--control-cluster and --candidate-cluster go with --reset datadir")
		}
		return nil, nil
	}
	out := map[headroom.Side]*pgcluster.Cluster{}
	for side, dir := range map[headroom.Side]*string{headroom.Control: &f.controlCluster, headroom.Candidate: &f.candidateCluster} {
		if *dir == "" {
			continue
		}
		c, err := pgcluster.Attach(*dir)
		if err != nil {
			return nil, fmt.Errorf("--%s-cluster: %w", side, err)
		}
		out[side] = c
	}
	if c := out[headroom.Control]; c == nil {
		return nil, usageError("--reset datadir needs each target's throwaway cluster directory: --control-cluster DIR")
	} else if f.control == "" {
		f.control = c.DSN("postgres")
	}
	if c := out[headroom.Candidate]; c != nil && f.candidate == "" {
		f.candidate = c.DSN("postgres")
	}
	if f.candidate != "" && out[headroom.Candidate] == nil {
		return nil, usageError("--reset datadir needs the candidate's cluster too: --candidate-cluster DIR")
	}
	return out, nil
}

// scan reads the logs once for how long they last at 1x, their think
// time inside transactions and, for the template reset, their databases.
func (h *headroomRun) scan(ctx context.Context) (time.Duration, []string, *results.ThinkTime, error) {
	start := time.Now()
	fmt.Fprintf(h.stdio.Stderr, "headroom: reading the logs for their span and the databases their sessions use\n")
	sc, err := replayrun.Scan(ctx, h.replay)
	if err != nil {
		return 0, nil, nil, replayRunError(h.stdio, err, start, newLoginHints(h.f.replayFlags))
	}
	dbs := sc.Databases()
	if len(dbs) == 0 {
		return 0, nil, nil, &exitError{code: ExitNoInput, err: errors.New("NOTHING MEASURED: the logs (as selected) hold no session that runs a statement")}
	}
	h.first, h.span = sc.First, sc.Span
	return replayrun.Load{K: 1, Speed: h.f.speed}.Duration(sc.Span), dbs, &sc.Think, nil
}

// targets are the sides with their resets, control first.
func (h *headroomRun) targets(ctx context.Context, dbs []string, clusters map[headroom.Side]*pgcluster.Cluster) ([]headroom.Target, error) {
	f := h.f
	mode, _ := reset.ParseMode(f.resetMode)
	if f.resetCmd != "" {
		mode = reset.ModeCommand
	}
	var out []headroom.Target
	for _, side := range []headroom.Side{headroom.Control, headroom.Candidate} {
		dsn, logs := f.control, splitList(f.controlLogs)
		if side == headroom.Candidate {
			dsn, logs = f.candidate, splitList(f.candidateLogs)
		}
		if dsn == "" {
			continue
		}
		if mode == reset.ModeTemplate {
			ok, err := reset.CanCreateDatabases(ctx, dsn)
			if err != nil {
				return nil, fmt.Errorf("the %s target: %w", side, err)
			}
			if !ok {
				return nil, fmt.Errorf("the %s target: --reset template needs a login that may create databases (CREATEDB); "+
					"give one, or reset with your own command (--reset-cmd), or --reset none for a read-only workload", side)
			}
		}
		out = append(out, headroom.Target{Side: side, DSN: dsn, Logs: logs, Reset: reset.For(mode, reset.Target{
			DSN: dsn, Databases: dbs, Command: f.resetCmd, Name: string(side), Output: h.stdio.Stderr, Cluster: clusters[side]})})
	}
	return out, nil
}

// sidesShown are the sides whose pre-flight was shown. A fold's slices
// split in shards replay at once, and each asks and sets it.
type sidesShown struct {
	mu sync.Mutex
	m  map[headroom.Side]bool
}

func (s *sidesShown) has(side headroom.Side) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[side]
}

func (s *sidesShown) set(side headroom.Side) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[headroom.Side]bool{}
	}
	s.m[side] = true
}

// step replays the log once at the step's load factor onto target. At 1x
// (the baseline) a replay that the replay command would fail stops the
// run, as a rehearsal's round does; above, what the load did to the
// target (statements lost, connections refused, a degraded replay) is the
// step's result, which its verdict judges. The replays that make the
// step's load are its load level's (replayrun.Load.Rounds): one, or a
// fold's slices apart when split in shards (Load.ReplaySlices).
func (h *headroomRun) step(ctx context.Context, st headroom.StepRun, target headroom.Target) (*results.Result, error) {
	load := h.load(st)
	rs := load.Rounds(replayrun.Round{Target: target.DSN, DatabaseMap: st.DatabaseMap, TargetLogs: st.Logs, CatalogFrom: st.CatalogFrom,
		CatalogDatabaseMap: st.CatalogDatabaseMap, Part: &results.Part{Round: st.N, Side: st.Side}}, h.first, h.span)
	if len(rs) == 1 {
		return h.replayOnce(ctx, st, rs[0])
	}
	return load.ReplaySlices(ctx, rs, func(ctx context.Context, r replayrun.Round) (*results.Result, error) { return h.replayOnce(ctx, st, r) })
}

// load is step st's load level, as the flags make it.
func (h *headroomRun) load(st headroom.StepRun) replayrun.Load {
	return replayrun.Load{By: h.cfg.By, K: st.K, Speed: h.cfg.Speed, Shards: h.cfg.Shards}
}

// replayOnce replays round r (the log, or the part its window selects)
// onto its target for step st.
func (h *headroomRun) replayOnce(ctx context.Context, st headroom.StepRun, r replayrun.Round) (*results.Result, error) {
	cfg := h.replay.Round(r)
	sel := r.Window
	if sel.Start != 0 {
		// Every slice after the first starts in the middle of the
		// log's sessions, and the pre-flight was made.
		cfg.SkipPreflight = true
		if sel.Start != h.first {
			// One observer sees the whole server: the first slice's.
			cfg.Observe = nil
		}
	}
	start := time.Now()
	if cfg.SkipPreflight {
		// Decided above.
	} else if !h.shown.has(st.Side) {
		cfg.OnPreflight = func(pf *replayrun.Preflight) {
			h.shown.set(st.Side)
			report.WritePreflight(h.stdio.Stderr, pf, start, newLoginHints(h.f.replayFlags))
		}
	} else {
		// Checked once per target.
		cfg.SkipPreflight = true
	}
	if sel.Start == 0 {
		var stopLine func()
		cfg.OnStart = func(rp *replayrun.Replayer, set *source.Set) { stopLine = startProgressLine(h.stdio.Stderr, rp, set) }
		cfg.OnEnd = func() {
			if stopLine != nil {
				stopLine()
			}
		}
	}
	if h.f.shards > 1 {
		return h.replayShards(ctx, st, cfg, start, sel)
	}
	return h.runReplay(ctx, st, cfg, start)
}

// runReplay runs one replay of a step (replayRound) and says whether
// its result counts: at 1x what the replay command would fail stops the
// run; above, what the load did to the target is the step's result.
func (h *headroomRun) runReplay(ctx context.Context, st headroom.StepRun, cfg replayrun.Config, start time.Time) (*results.Result, error) {
	o, err := replayRound(ctx, h.stdio, cfg, st.Side, st.K > 1, start, newLoginHints(h.f.replayFlags))
	if o == nil {
		return nil, err
	}
	return o.Result, err
}
