package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/report/rehearsal"
	"github.com/pgrehearse/pgrehearse/internal/reset"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/source"
)

type rehearseFlags struct {
	// replayFlags hold the options every round's replay shares; their
	// target, logs and findings server are each side's.
	replayFlags
	control, candidate         string
	controlLogs, candidateLogs []string
	rounds                     int
	// maxRounds and maxTime: the budget of the rounds added while a
	// query is undecided on a --fail-on rule.
	maxRounds                        int
	maxTime                          time.Duration
	maxWidth                         float64
	resetMode, resetCmd              string
	controlCluster, candidateCluster string
	out                              string
	htmlPath                         string
	failOn                           []string
	top                              int
	minCalls                         int64
	minEffectMS                      float64
	judgeLevel                       string
	// explain is --plans; plans how, on the two targets.
	explain bool
	plans   planFlags
	// fixes, fixRounds, maxFixes: the fix rounds after the comparison.
	fixes bool
	// fixFindings: the indexes missing-index findings suggest are tried
	// too (--fix-findings).
	fixFindings bool
	fixRounds   int
	maxFixes    int
	// tries are --try's NAME:SQL, the user's own fixes.
	tries []string
}

func newRehearseCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f rehearseFlags
	cmd := &cobra.Command{
		Use:   "rehearse --control DSN --candidate DSN [flags] LOG|CAPTURE...",
		Short: "Replay a log onto a control and a candidate in alternating rounds, and compare like with like",
		Long:  rehearseHelp(),
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRehearseCmd(cmd.Context(), stdio, f, cmd.Flags().Changed("reset"), args)
		},
	}
	addRehearseFlags(cmd.Flags(), &f)
	return cmd
}

// fixesHelp is the part of rehearse --help on fix rounds.
const fixesHelp = `Then (--fixes, on by default) each regression whose plans name a cause that
a reset copy can undo has its fix tried (an index the control has and the
candidate lacks: the control's CREATE INDEX; a planner setting a session may
change: the control's value by ALTER DATABASE ... SET; one a reload applies:
ALTER SYSTEM SET and a reload for the round, put back after it; a table never
analyzed: ANALYZE; an index on the candidate only that stops HOT updates:
DROP INDEX, the change reverted, "confirms the cause" when that brings the
update's work back within noise; extended statistics on the control only:
its CREATE STATISTICS, then ANALYZE; ones on the candidate only: DROP
STATISTICS, the change reverted; a column's statistics target that
differs: the control's, then ANALYZE): --fix-rounds (3) more candidate rounds from the reset state (not
with --reset none), with the fix's SQL applied to the round's copies
and the whole traffic replayed (round-NN-candidate-fix-NAME.json), at most
--max-fixes of them, those adding the most time first, in turn with
--fix-rounds control rounds run beside them (round-NN-control-beside-fixes.json,
shared by all the fixes), which each fix is judged against, so that the
machine's noise during the fix rounds is in its comparison: "fix verified" (the regression is within the
control's noise), "fix partial" (the share of its time recovered) or "no
effect", with every other query that regressed with the fix only, and the
writes of its table against the candidate without it; "fixes" in the JSON
(docs/fix-rounds.md). A fix the server refuses is not tried, with its error;
fixes never change the exit code.

--fix-findings tries the index each missing-index finding suggests (a
sequential scan behind a frequent filter) too, after the plans' fixes, judged
by what it made faster or slower. It is off by default: a finding is of the
traffic, on both sides alike, so an identical candidate would try it too.

--try 'NAME:SQL' (repeatable) tries your own change the same way, whatever
the plans found (an index you mean to add, a setting): its SQL is run as
given in the round's copy of the workload's database, in --fix-rounds
rounds of its own (round-NN-candidate-fix-try-NAME.json), and its verdict
names every query faster or slower beyond noise than on the candidate
without it, each also against the control, with the verdict on the
rehearsal's regressions when there are some. A --try whose SQL fails is
"not tried", with the server's error. Not with --reset none.

`

// decideHelp is the part of rehearse --help on rounds until decided.
const decideHelp = `With --fail-on, a query whose interval holds both a ratio under a rule's
threshold and one beyond it (1.4x and 2x under p95>+50%, or a 1.9x hidden by
the control's noise floor of 2x) is undecided: the rounds cannot tell whether
it breaks the rule, and rehearse adds rounds, a pair at a time in the
alternating order, while one is, up to --max-rounds a side (8 by default)
and --max-time. A rule on the mean or the p95 counts however little a query
adds: under --min-effect-ms (and, for a mean, 1% of the run's time) a query
breaks it when its whole interval, and its calls' at the level of every
figure judged (without histograms, its rounds' at that level), lie beyond
the threshold; it is then "regressed", its line saying how little it adds
(p50 and p99 rules keep the floors); its interval holding the threshold
leaves it undecided, on the level its mean is judged on. A rule is clear of a
query whose interval at the comparison's level ends at or under the threshold,
at every look. Rounds are added the same way while a query that regressed has
a mean whose interval's high is more than --max-width times its low (2 by
default): its size is the forecast. Adding rounds until a change is
significant would inflate false alarms: every look after the first judges the rules at the
level shared out over the looks the budget allows (Bonferroni), and a rule
broken there stands only where the figure's interval at that level excludes
1. Where the budget ends with a query undecided, the verdict is UNDECIDED,
with the query, the rule, its ratio and interval, and the exit code is 7;
never "~" for an interval that holds a rule-breaking ratio (docs/rehearse.md).
`

// rehearseHelp is rehearse --help's long text.
func rehearseHelp() string {
	return `rehearse answers "what would get slower if production traffic hit the
changed server?" by comparing replay with replay: it replays the logs onto a
control target (a copy of production as it is today) and onto a candidate
target (the same with the change), in alternating rounds, --rounds of each
(3 by default), in the order control, candidate, candidate, control, control,
candidate ... so that a drift of the machine over the rehearsal falls on both
sides alike. The comparison is then across all rounds (as report --baseline
A1 A2 A3 --candidate B1 B2 B3): each query's effect is the candidate's median
over the control's with an interval from the run-to-run spread, and a
regression must exceed the control's own noise between its rounds, the
effect floor and --min-effect-ms.

Before anything runs, each target is asked what it is: a control and a
candidate that are one server under two spellings (the same port, postmaster
start time and system identifier; host=127.0.0.1 and host=localhost) are
refused (exit 2). Both targets' free connection slots are compared with the
logs' peak of sessions open at once before the control's first round
(--ignore-connection-limit replays anyway).

A replay writes, so before every round each target is reset to its starting
state (--reset):
  template  (default) each database the logs' sessions use (read from the
            logs first) is copied from a pristine copy made at the start
            (CREATE DATABASE ... TEMPLATE, STRATEGY FILE_COPY on PostgreSQL
            15+), the round replays onto the copies, which are dropped after
            it; the login needs CREATEDB. Needs free disk for two copies of
            those databases on each target.
  none      nothing is reset, for read-only workloads; every round after the
            first is marked as drifted.
  datadir   throwaway clusters only (pgrehearse demo --keep leaves them):
            the data directory of --control-cluster and --candidate-cluster
            is copied at the start and restored before each round.
--reset-cmd COMMAND runs your own reset instead (a ZFS, LVM or EBS snapshot
rolled back, a Database Lab clone reset), by /bin/sh before each round, with
the target in PGHOST, PGPORT, PGUSER, PGDATABASE and PGREHEARSE_DSN (no
password), its name (control or candidate) in PGREHEARSE_TARGET and its round
in PGREHEARSE_ROUND; the round starts once the target accepts connections. A
reset command that fails stops the rehearsal (exit 1).

Every round is a replay as "pgrehearse replay" does it, with the same options
(speed, synchronization, filters, maps, timeouts, evidence), except that its
sessions are synchronized for load by default (--sync load): only what would
fail or lose a write without its order waits (writes and locks, as --sync
object), reads never wait for other sessions' data, so each target gets the
load the application gave. --sync answers (replay's default) orders reads too,
and each commit after the reads that ended before it, for answers as the
original's (--sync object: reads only). The rounds say which mode they used, each round's stretch (its
wall time over the log's span at its speed) and sync waits, and the verdict
says when the candidate's rounds were throttled by the replay itself
(stretched, or waiting, beyond the control's): the forecast then under-states
the slowdown.
With --control-log and --candidate-log (each target's own server log) every
round also reads its server-side durations: the percentiles are then the
server's, not the round trips'. They need every statement logged on the
targets, and that write adds to every call's round trip (about 0.04 ms on a
quiet 2-core host, docs/forecast.md): the application level carries it on
both sides, which compresses a short query's ratio there. Without them the
mean is judged on pg_stat_statements' time all the same (--observe, where
the targets have it) and the percentiles are the round trips'.
replay's --target, --target-log, --max-error-rate, --dry-run and
--metrics-addr are not rehearse's: each side has its own DSN and log, the
comparison judges the candidate's errors against the control's (an errors
rule of --fail-on), and a rehearsal is never dry. A round that replay
would fail (a failed pre-flight, sessions that could not connect, a target
log without durations, statements lost beyond --max-lost, a degraded
replay) stops the rehearsal with replay's exit code.

` + readAheadHelp() + ` In a rehearsal, a
round whose reader was held there says so in a note under it.

Each round's result goes to --out DIR as it ends (round-01-control.json ...),
with the index of the rounds (rehearsal.json): "pgrehearse report --baseline
DIR/round-*-control.json --candidate DIR/round-*-candidate.json" makes the
comparison again. A progress line on standard error says, per round, where
the rehearsal is and about how long is left. Ctrl-C stops the round under way
(a second Ctrl-C, or --grace later, cancels its statements); the rounds
finished are kept, the comparison of what finished is shown marked partial,
never a pass, and the exit code is 5.

Every round is observed (--observe, on by default): besides latency, each
query's server work per call from pg_stat_statements (WAL bytes, full-page
images, shared blocks dirtied) is compared across the rounds, and a query
whose latency did not regress but that writes 1.5x the WAL or dirties 1.5x
the blocks per call beyond noise (an update that lost HOT) is a regression
of its own kind, "more work" (docs/rehearse.md). A target without
pg_stat_statements is rehearsed all the same, and the report says server work
was not compared and why; --observe=false leaves it out.

The comparison goes to standard output (the verdict first, then the rounds),
--json FILE writes it (report --json's schema with the rehearsal's index
under "rehearsal"), --html FILE as report's page with every round's evidence.
The findings are the candidate's first round's, against the control's first,
with the candidate's catalog (--findings-dsn, else the candidate target).

After the rounds (--plans, on by default), rehearse explains on both targets
the queries that regressed or diverged and the top --plans-top by time added,
and says per query "plan changed" (the first nodes that differ) or "same
plan, slower" (the nodes whose time or reads grew), with the setting, index
or statistic behind it: one line each in the summary, "plans" in the JSON
(docs/plans-json.md), both trees side by side on the page. The targets are
the rehearsal's own, so it needs no other connection: explain runs
read-only, under statement_timeout and lock_timeout, never runs a write, and
writes the plans without their constants. With --keep-samples, the rounds
keep each query's slowest and median executions with their parameter values
(personal data) and the queries are explained with them (custom plans, and
EXPLAIN ANALYZE of plain SELECTs unless --explain-analyze=false); without,
generic plans, said so; a statement whose normalized text the servers cannot
plan ("interval $2") is explained with one execution read again from the
logs, whose values are used, never run and not kept.

` + fixesHelp + `` + rulesHelp + `
` + decideHelp + `
` + captureHelp + exitHelp(exitDocFailOn, exitDocDiverged, exitDocNoInput, exitDocUndecided,
		exitDoc{ExitFailure, "a reset (or --reset-cmd) failed, or a round's replay failed as replay would (its logins refused, its target log unread); the rounds finished are kept and compared, marked partial"},
		exitDoc{ExitIncomplete, "incomplete: Ctrl-C or SIGTERM stopped the rehearsal, or a round lost more than --max-lost of its statements, was degraded, or its target went away or froze; the rounds finished are kept and compared, marked partial, never a pass; " +
			"or, with fewer than 3 rounds a side (noise not measured), a round's replay fell behind its schedule (lag p99 above --max-lag): " +
			"the latency is not judged, errors and divergence are"})
}

// addRehearseFlags adds rehearse's flags, into f, to fl.
func addRehearseFlags(fl *pflag.FlagSet, f *rehearseFlags) {
	dsnVar(fl, &f.control, "control", "connection string or URI of the control target: production's setup as it is today")
	dsnVar(fl, &f.candidate, "candidate", "connection string or URI of the candidate target: the same with the change")
	fl.StringSliceVar(&f.controlLogs, "control-log", nil, "the control's own server log (path or glob, repeatable), read after each round for server-side durations; the target needs "+replayrun.TargetLogSettings)
	fl.StringSliceVar(&f.candidateLogs, "candidate-log", nil, "the candidate's own server log (path or glob, repeatable), as --control-log")
	fl.IntVar(&f.rounds, "rounds", rehearse.DefaultRounds, "rounds per side (at least 3 to measure the run-to-run noise)")
	fl.IntVar(&f.maxRounds, "max-rounds", 0, "with --fail-on, add rounds, one a side at a time, while a query's interval holds both a ratio under a rule's threshold and one beyond it, up to `N` rounds a side (0: 8, or --rounds when more); where they end undecided, exit 7")
	fl.Float64Var(&f.maxWidth, "max-width", judge.DefaultWidth, "with --fail-on, add rounds as for an undecided query while a query that regressed has a mean whose interval's high is more than `F` times its low (1: never), within --max-rounds and --max-time")
	fl.DurationVar(&f.maxTime, "max-time", 0, "add no round once the rehearsal has run this long, or would with the next pair of rounds (0: no limit but --max-rounds)")
	fl.StringVar(&f.resetMode, "reset", string(reset.ModeTemplate), "how each target returns to its starting state before each round: template, none or datadir")
	fl.StringVar(&f.resetCmd, "reset-cmd", "", "your own reset `COMMAND`, run by /bin/sh before each round of each target (see above)")
	fl.StringVar(&f.controlCluster, "control-cluster", "", "with --reset datadir: the control's throwaway cluster directory")
	fl.StringVar(&f.candidateCluster, "candidate-cluster", "", "with --reset datadir: the candidate's throwaway cluster directory")
	fl.StringVar(&f.out, "out", "", "directory for each round's result and the index (default: pgrehearse-rehearsal-TIME in the current directory); it must not hold another rehearsal")
	fl.StringVar(&f.jsonPath, "json", "", `write the comparison as JSON to `+"`FILE`"+` ("-" for standard output)`)
	fl.StringVar(&f.htmlPath, "html", "", "write the comparison as one self-contained HTML `FILE`")
	fl.StringArrayVar(&f.failOn, "fail-on", nil, "exit 3 when a `RULE` is broken, e.g. 'p95>+20%,errors>+1pp' (repeatable)")
	fl.IntVar(&f.top, "top", 10, "entries shown in each list of the summary")
	fl.Int64Var(&f.minCalls, "min-calls", 10, "fewest timed calls in every round for a query to be judged")
	fl.Float64Var(&f.minEffectMS, "min-effect-ms", judge.DefaultComparisonMinEffectMS, "fewest milliseconds a query's mean (or p95, for its tail) must grow by to be called a regression (0: none); a slower mean that adds 1% of the run's time is not spared by it")
	judgeLevelFlag(fl, &f.judgeLevel)
	fl.BoolVar(&f.findings, "findings", true, "name the known performance traps of the workload as the candidate ran it")
	dsnVar(fl, &f.findingsDSN, "findings-dsn", "the candidate's database with the workload's schema, for the findings that need its catalog, plans or pg_stat_statements (read-only)")
	fl.BoolVar(&f.explain, "plans", true, "after the rounds, explain the regressed queries and the top by time added on both targets, and say why they got slower (read-only)")
	fl.BoolVar(&f.fixes, "fixes", true, "after the plans, try each fix of a named cause (the control's index, a planner setting's value, ANALYZE, the control's statistics) on the candidate in rounds of its own, and say whether it brings the regression back within noise and what it costs elsewhere")
	fl.IntVar(&f.fixRounds, "fix-rounds", fixes.DefaultRounds, "rounds per fix tried, and as many control rounds run in turn with them")
	fl.BoolVar(&f.fixFindings, "fix-findings", false, "with --fixes, also try the index each missing-index finding suggests, judged by what it made faster or slower (off by default: findings are of the traffic, alike on both sides)")
	fl.IntVar(&f.maxFixes, "max-fixes", 0, "try at most `N` fixes, the plans' and --fix-findings' together, those of the regressions adding the most time first (0: all; --try not counted)")
	fl.IntVar(&f.batchInserts, "batch-inserts", 0, "after the rounds, replay onto the candidate in --fix-rounds rounds of its own with each session's consecutive single-row INSERTs into one table sent as multi-row INSERTs of up to `N` rows, and say what that saves per row in time and WAL, with its interval (docs/rehearse.md)")
	fl.StringArrayVar(&f.tries, "try", nil, "after the rounds, apply your own `NAME:SQL` to the candidate's reset copy of the workload's database in --fix-rounds rounds of its own, and say which queries it made faster or slower (repeatable)")
	addPlanOptionFlags(fl, &f.plans)
	// The rounds give the target the load the application gave: only
	// what would otherwise fail waits (issue 58).
	addReplayOptionFlags(fl, &f.replayFlags, replayrun.SyncLoad)
}

// rehearseRun is a rehearsal as the command sets it up.
type rehearseRun struct {
	stdio IO
	f     rehearseFlags
	cfg   rehearse.Config
	// replay is every round's replay; each round sets its target,
	// database map, target logs and part.
	replay replayrun.Config
	// notes are what each round's replay found that does not stop the
	// rehearsal (a divergence from the original), by round.
	notes map[int][]string
	// database is the workload's database on the targets, as the first
	// round's pre-flight found it: where the plans are explained.
	database string
}

func runRehearseCmd(ctx context.Context, stdio IO, f rehearseFlags, resetGiven bool, paths []string) error {
	rules, err := rehearseChecks(f, resetGiven)
	if err != nil {
		return err
	}
	// The targets and every round's replay are checked before anything
	// is written or touched.
	clusters, err := attachClusters(&f)
	if err != nil {
		return err
	}
	rf := f.replayFlags
	rf.target = f.control
	cfg, err := replayConfig(stdio, rf, paths)
	if err != nil {
		return err
	}
	if f.out == "" {
		f.out = "pgrehearse-rehearsal-" + time.Now().UTC().Format("20060102T150405Z")
	}
	if err := checkOutputs("--json", f.jsonPath, "--html", f.htmlPath); err != nil {
		return err
	}
	if err := rehearse.CheckDir(f.out, false); err != nil {
		return fmt.Errorf("--out: %w; nothing was done", err)
	}
	r, err := setUpRehearsal(ctx, stdio, f, cfg, clusters)
	if err != nil {
		return err
	}
	second, release := secondInterrupt(ctx)
	defer release()
	r.replay.Hard = second
	r.decideRounds(rules)

	fmt.Fprintf(stdio.Stderr, "rehearse: %d rounds per side, in the order %s; each round's result goes to %s\n",
		r.cfg.Rounds, rehearsal.OrderText(rehearse.Order(r.cfg.Rounds)), f.out)
	out, runErr := rehearse.Run(ctx, r.cfg)
	if out == nil {
		return runErr
	}
	// The last rounds' copies were kept for the plans and the findings:
	// dropped once they are done, also after Ctrl-C, then the resets
	// closed, each in its own time.
	defer func() {
		for _, clean := range []func(context.Context) error{func(c context.Context) error { return out.ReleaseKept(c, r.cfg) }, out.CloseResets} {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rehearse.DefaultCleanupTimeout)
			if err := clean(cctx); err != nil {
				fmt.Fprintf(stdio.Stderr, "pgrehearse: %v\n", err)
			}
			cancel()
		}
	}()
	// What ran is shown whatever stopped the rehearsal: the rounds, then
	// the comparison of those finished.
	summaryOut := summaryWriter(stdio, f.jsonPath)
	// The rounds are details: the verdict comes first (writeVerdictFirst).
	var details bytes.Buffer
	// A candidate throttled by the replay itself is said with the
	// verdict, which details follow.
	rehearsal.WriteThrottled(&details, out)
	rehearsal.WriteRounds(&details, out, r.notes)
	v, cmpErr := r.compare(ctx, summaryOut, &details, out, rules)
	switch {
	case runErr != nil:
		return rehearsalStopped(out, f.out, runErr)
	case out.Interrupted:
		return &exitError{code: ExitIncomplete, err: fmt.Errorf("INTERRUPTED: %s; %d of %d control and %d of %d candidate rounds finished, kept in %s; "+
			"the comparison above is partial and is not a verdict", out.Stopped, len(out.Control), out.Rounds, len(out.Candidate), out.Rounds, f.out)}
	case cmpErr != nil:
		return cmpErr
	}
	switch {
	case v.Diverged():
		return &exitError{code: ExitDiverged, err: errors.New("the candidate's rounds diverged from the control's: they did different work, so the candidate is not judged")}
	case v.Failed():
		return &exitError{code: ExitRegression, err: errors.New("a --fail-on rule is broken")}
	case v.Undecided():
		return &exitError{code: ExitUndecided, err: fmt.Errorf("UNDECIDED: a query may break a --fail-on rule, and %d rounds a side could not tell (%s)",
			len(out.Control), rehearsal.BudgetText(out.BudgetEnded))}
	case v.LatencyNotJudged():
		return errLatencyNotJudged
	case v.NotJudged(): // a candidate throttled by the replay's own waits
		return &exitError{code: ExitIncomplete, err: errors.New("NOT JUDGED: no --fail-on rule is broken, but the candidate's rounds cannot pass (see the verdict)")}
	}
	return nil
}

// decideRounds has the rehearsal add rounds, a pair at a time, while a
// query is undecided on a --fail-on rule, up to --max-rounds a side and
// --max-time (rehearse.Config.Decide); nothing without a rule.
func (r *rehearseRun) decideRounds(rules judge.PairRules) {
	f := r.f
	if len(rules) == 0 {
		return
	}
	r.cfg.MaxRounds, r.cfg.MaxTime = maxRounds(f), f.maxTime
	opts := r.judgeOptions(rules)
	r.cfg.Decide = func(out *rehearse.Outcome, look int) rehearse.Need {
		more := opts.MoreRuns(out, look)
		if more.Any() && len(out.Control) < r.cfg.MaxRounds {
			rehearsal.WriteAdding(r.stdio.Stderr, len(out.Control), r.cfg.MaxRounds, more)
		}
		return rehearse.NeedOf(more)
	}
}

// maxRounds is --max-rounds: DefaultMaxRounds when not given, and never
// fewer than --rounds.
func maxRounds(f rehearseFlags) int {
	if f.maxRounds == 0 {
		return max(DefaultMaxRounds, f.rounds)
	}
	return f.maxRounds
}

// DefaultMaxRounds is --max-rounds' default.
const DefaultMaxRounds = 8

// rehearseChecks checks the flags against each other and parses
// --fail-on.
func rehearseChecks(f rehearseFlags, resetGiven bool) (judge.PairRules, error) {
	switch {
	case f.control == "" && f.controlCluster == "":
		return nil, usageError("rehearse needs the control target: --control DSN")
	case f.candidate == "" && f.candidateCluster == "":
		return nil, usageError("rehearse needs the candidate target: --candidate DSN")
	case f.control != "" && f.control == f.candidate:
		return nil, usageError("--control and --candidate are the same server: the candidate must be another target, with the change")
	case f.rounds < 1:
		return nil, usageError("--rounds must be at least 1, got %d (3 or more measure the noise)", f.rounds)
	case f.fixRounds < 1:
		return nil, usageError("--fix-rounds must be at least 1, got %d", f.fixRounds)
	case f.maxRounds != 0 && f.maxRounds < f.rounds:
		return nil, usageError("--max-rounds must be at least --rounds (%d), got %d", f.rounds, f.maxRounds)
	case f.maxWidth < 1:
		return nil, usageError("--max-width must be 1 (never) or more, got %g", f.maxWidth)
	case f.maxTime < 0:
		return nil, usageError("--max-time must not be negative, got %s", f.maxTime)
	case f.maxFixes < 0:
		return nil, usageError("--max-fixes must be 0 (all) or more, got %d", f.maxFixes)
	case f.resetCmd != "" && resetGiven:
		return nil, usageError("--reset-cmd is a reset of its own: give it or --reset, not both")
	}
	mode, err := reset.ParseMode(f.resetMode)
	if err != nil {
		return nil, usageError("--reset: %v", err)
	}
	if _, err := parseTries(f.tries); err != nil {
		return nil, err
	}
	if len(f.tries) > 0 && mode == reset.ModeNone && f.resetCmd == "" {
		return nil, usageError("--try needs a reset that undoes it: not --reset none")
	}
	if f.batchInserts != 0 && (f.batchInserts < 2 || mode == reset.ModeNone && f.resetCmd == "") {
		return nil, usageError("--batch-inserts needs batches of 2 rows or more and a reset that empties the tables again (not --reset none), got %d", f.batchInserts)
	}
	datadir := mode == reset.ModeDataDir && f.resetCmd == ""
	switch {
	case datadir && (f.controlCluster == "" || f.candidateCluster == ""):
		return nil, usageError("--reset datadir needs each target's throwaway cluster directory: --control-cluster DIR --candidate-cluster DIR")
	case !datadir && (f.controlCluster != "" || f.candidateCluster != ""):
		return nil, usageError("--control-cluster and --candidate-cluster go with --reset datadir")
	case len(f.targetLogs) > 0:
		return nil, usageError("rehearse reads each target's log: --control-log and --candidate-log")
	case len(f.controlLogs) > 0 != (len(f.candidateLogs) > 0):
		return nil, usageError("--control-log and --candidate-log go together: the comparison needs the same source of durations on both sides")
	}
	return reportRules(reportFlags{failOn: f.failOn, top: f.top, minEffectMS: f.minEffectMS, minCalls: f.minCalls, judgeLevel: f.judgeLevel,
		jsonPath: f.jsonPath, htmlPath: f.htmlPath}, true)
}

// attachClusters finds the throwaway clusters of --reset datadir, whose
// DSNs stand for --control and --candidate when those are not given.
func attachClusters(f *rehearseFlags) (map[rehearse.Side]*pgcluster.Cluster, error) {
	if f.resetCmd != "" || f.resetMode != string(reset.ModeDataDir) {
		return nil, nil
	}
	out := map[rehearse.Side]*pgcluster.Cluster{}
	for side, dir := range map[rehearse.Side]string{rehearse.Control: f.controlCluster, rehearse.Candidate: f.candidateCluster} {
		c, err := pgcluster.Attach(dir)
		if err != nil {
			return nil, fmt.Errorf("--%s-cluster: %w", side, err)
		}
		out[side] = c
	}
	if f.control == "" {
		f.control = out[rehearse.Control].DSN("postgres")
	}
	if f.candidate == "" {
		f.candidate = out[rehearse.Candidate].DSN("postgres")
	}
	if f.control == f.candidate {
		return nil, usageError("--control-cluster and --candidate-cluster are the same cluster")
	}
	return out, nil
}

// setUpRehearsal builds the rehearsal: the replay of every round (cfg,
// the options shared) and each target's reset.
func setUpRehearsal(ctx context.Context, stdio IO, f rehearseFlags, cfg replayrun.Config, attached map[rehearse.Side]*pgcluster.Cluster) (*rehearseRun, error) {
	r := &rehearseRun{stdio: stdio, f: f, notes: map[int][]string{}}
	targets := map[rehearse.Side]*rehearse.Target{rehearse.Control: &r.cfg.Control, rehearse.Candidate: &r.cfg.Candidate}
	dsn := map[rehearse.Side]string{rehearse.Control: f.control, rehearse.Candidate: f.candidate}
	logs := map[rehearse.Side][]string{rehearse.Control: splitList(f.controlLogs), rehearse.Candidate: splitList(f.candidateLogs)}
	mode, _ := reset.ParseMode(f.resetMode)
	if f.resetCmd != "" {
		mode = reset.ModeCommand
	}
	// Each side's error rate against the original is the comparison's
	// to judge (errors rules), and the findings are the rehearsal's.
	cfg.MaxErrorRate, cfg.Findings = 100, false
	if cfg.BatchInserts > 0 {
		// The rounds count the INSERTs that could be batched, and
		// their time and WAL, for the batched rounds to be judged
		// against; only --batch-inserts' own rounds merge them.
		cfg.BatchInserts = 1
	}
	cfg.Replay.Cache = fingerprint.NewCache(0)
	// Every round's replay warns alike (an observer that lacks
	// pg_stat_statements): once is enough.
	warned := map[string]bool{}
	cfg.Warn = func(w string) {
		if !warned[w] {
			warned[w] = true
			fmt.Fprintf(stdio.Stderr, "pgrehearse: %s\n", w)
		}
	}
	r.replay = cfg

	// One server under two spellings is refused before anything runs.
	servers := askServers(ctx, dsn)
	if err := sameServerError(dsn, servers); err != nil {
		return nil, err
	}
	var sc *replayrun.Scanned
	var dbs []string
	var logins []replayrun.Login
	if mode == reset.ModeTemplate {
		var err error
		if sc, err = r.scan(ctx); err != nil {
			return nil, err
		}
		dbs, logins = sc.Databases(), sc.Logins
	} else if !cfg.SkipPreflight && !cfg.IgnoreConnectionLimit {
		sc = r.scanPeak(ctx)
	}
	if !cfg.SkipPreflight {
		need := rehearse.Needs{Template: mode == reset.ModeTemplate, Databases: dbs, Observe: cfg.Observe != nil,
			Logins: logins, Replay: cfg, Peak: sc, Servers: servers, Logs: logs}
		if err := checkTargets(ctx, stdio, need, dsn, newLoginHints(f.replayFlags)); err != nil {
			return nil, err
		}
		if sc == nil && cfg.StartCheck == replayrun.StartCheckRequire {
			// The databases to compare are those the sessions use.
			sc = r.scanPeak(ctx)
		}
		checked, err := checkStartFirst(ctx, stdio, cfg, mode, sc, dsn)
		if err != nil {
			return nil, err
		}
		if checked {
			// Both were compared before the first round: the rounds
			// need not again.
			r.replay.StartCheck = replayrun.StartCheckSkip
		}
	}
	// Both targets' connection slots were checked above, before the first round: a round's
	// pre-flight, which could count the previous round's connections still closing, only says
	// what it found. The rounds' schedule window is known from the scan, before they start.
	r.replay.IgnoreConnectionLimit, r.replay.Replay.WindowLast = true, sc.Last()
	for side, t := range targets {
		t.DSN, t.Logs = dsn[side], logs[side]
		t.Reset = reset.For(mode, reset.Target{DSN: t.DSN, Databases: dbs, Command: f.resetCmd, Name: string(side), Output: stdio.Stderr, Cluster: attached[side]})
	}
	r.cfg.Rounds, r.cfg.Dir, r.cfg.DatabaseMap = f.rounds, f.out, cfg.Replay.DatabaseMap
	r.cfg.Progress = func(p rehearse.Progress) { rehearsal.WriteProgress(stdio.Stderr, p) }
	r.cfg.Replay = r.round
	// The plans and the findings read the state the replay left: the
	// tables the log creates exist only there.
	r.cfg.KeepLast = f.explain || f.findings
	// The fix rounds start from the rounds' starting state.
	// A target that is not reset would keep the fix.
	r.cfg.KeepResets = (f.explain && f.fixes || len(f.tries) > 0 || f.batchInserts > 1) && mode != reset.ModeNone
	return r, nil
}

// scan reads the logs for the databases their sessions use, which the
// template reset copies, for how long a round will take and for their
// sessions open at once.
func (r *rehearseRun) scan(ctx context.Context) (*replayrun.Scanned, error) {
	start := time.Now()
	fmt.Fprintf(r.stdio.Stderr, "rehearse: reading the logs for the databases their sessions use (--reset template copies them)\n")
	sc, err := replayrun.Scan(ctx, r.replay)
	if err != nil {
		return nil, replayRunError(r.stdio, err, start, newLoginHints(r.f.replayFlags))
	}
	dbs := sc.Databases()
	if len(dbs) == 0 {
		return nil, &exitError{code: ExitNoInput, err: errors.New("NOTHING MEASURED: the logs (as selected) hold no session that runs a statement")}
	}
	if speed := r.replay.Replay.Speed; speed > 0 && sc.Span > 0 {
		r.cfg.RoundEstimate = time.Duration(float64(sc.Span) / speed)
	}
	fmt.Fprintf(r.stdio.Stderr, "rehearse: the sessions use %s; each round replays onto fresh copies (read in %v)\n",
		rehearsal.DatabasesText(dbs), time.Since(start).Round(time.Millisecond))
	return sc, nil
}

// round replays the logs once for a round of the rehearsal, onto target,
// with the round's database map and target logs. A round whose replay
// would fail the replay command stops the rehearsal with that error (and
// its exit code); an interrupted one returns its partial result.
func (r *rehearseRun) round(ctx context.Context, round rehearse.Round, target rehearse.Target) (*results.Result, error) {
	cfg := r.replay.Round(rehearse.RoundOf(round, target))
	start := time.Now()
	if round.N == 1 {
		// Each target's logins are shown once, its lines named.
		cfg.OnPreflight = func(pf *replayrun.Preflight) {
			report.WriteTargetPreflight(r.stdio.Stderr, string(round.Side), pf, start, newLoginHints(r.f.replayFlags))
		}
	} else {
		// The reset returns the target to what the first round's
		// check compared.
		cfg.StartCheck = replayrun.StartCheckSkip
	}
	var stopLine func()
	cfg.OnStart = func(rp *replayrun.Replayer, set *source.Set) { stopLine = startProgressLine(r.stdio.Stderr, rp, set) }
	cfg.OnEnd = func() {
		if stopLine != nil {
			stopLine()
		}
	}
	h := newLoginHints(r.f.replayFlags)
	h.TargetLog = "--" + string(round.Side) + "-log"
	// What stops the rehearsal is what would fail the replay command,
	// except what the comparison judges between the two sides: the
	// error rate and a divergence.
	o, err := replayRound(ctx, r.stdio, cfg, round.Side, false, start, h)
	if o == nil {
		return nil, err
	}
	if r.database == "" && o.Preflight != nil {
		r.database = loggedDatabase(replayrun.WorkloadDatabase(o.Preflight), round.DatabaseMap, r.cfg.DatabaseMap)
	}
	if err != nil || (o.Has(replayrun.ReasonInterrupted) && ctx.Err() != nil) {
		return o.Result, err
	}
	if n := report.OnlyOnTargetNote(o.Result.Outcomes, o.Has(replayrun.ReasonDiverged)); n != "" {
		r.notes[round.Seq] = append(r.notes[round.Seq], n)
	}
	if n := report.ReadAheadHeld(o.Result.Reader); n != "" {
		r.notes[round.Seq] = append(r.notes[round.Seq], n)
	}
	return o.Result, nil
}

// replayRound replays one round of rehearse or of headroom
// (replayrun.RunRound) and is the error that stops the command: replay's
// own (its exit code) for what would fail the replay command, but what
// the command judges itself (RoundStop; overloaded: a headroom step
// above 1x), with the side's own option for its target log. An
// interrupted replay returns its partial result and no error. o is nil
// only when the replay did not run.
func replayRound(ctx context.Context, stdio IO, cfg replayrun.Config, side results.Side, overloaded bool, start time.Time, h report.LoginHints) (*replayrun.Outcome, error) {
	o, stop, err := replayrun.RunRound(ctx, cfg, overloaded)
	if err != nil {
		return nil, replayRunError(stdio, err, start, h)
	}
	if stop.First() == replayrun.ReasonTargetLog {
		// replay's words name its --target-log; here each side has its own.
		return o, fmt.Errorf("--%s-log: %w", side, o.TargetLogErr)
	}
	return o, replayExit(stop, 100, h)
}

// compare judges the rounds finished (rehearse.Judge) and writes the
// comparison, its findings, the fixes tried, JSON and page. A rehearsal
// that stopped early is compared all the same, when each side finished a
// round, and the comparison is then marked partial, never a pass. The
// verdict is written first, then details (which hold the rounds already)
// with the comparison's details, the plans and the findings added;
// details are written on every path.
func (r *rehearseRun) compare(ctx context.Context, w io.Writer, details *bytes.Buffer, out *rehearse.Outcome, rules judge.PairRules) (*judge.Verdict, error) {
	defer details.WriteTo(w) // what is left when a path returned early
	f := r.f
	opts := r.judgeOptions(rules)
	opts.Database = r.database
	if f.explain {
		opts.Plans = &rehearse.PlansOptions{Top: planTop(f.plans.top), Analyze: f.plans.analyze}
	}
	opts.Findings, opts.FindingsDSN = f.findings, f.findingsDSN
	// Statements whose normalized text does not plan are explained,
	// by the plans and the findings, with an execution read from
	// the logs.
	opts.Examples = func(fps []string) func(string) *results.Sample { return r.examples(ctx, fps) }
	opts.Fixes, opts.FixFindings, opts.MaxFixes, opts.FixRounds = f.fixes, f.fixFindings, f.maxFixes, f.fixRounds
	opts.Tries, _ = parseTries(f.tries)
	opts.BatchInserts = f.batchInserts
	opts.OnVerdict = func(st judge.Stage, v *judge.Verdict) error { return r.verdictStage(details, st, v) }
	opts.OnStage = func(st rehearse.Stage, j *rehearse.Judgement) error { return r.judgeStage(w, details, st, j) }
	j, err := rehearse.Judge(ctx, r.cfg, out, opts)
	if err != nil {
		switch {
		case errors.Is(err, judge.ErrIncomplete):
			return nil, refused(err)
		case errors.Is(err, context.Canceled) && j.Verdict != nil:
			return nil, &exitError{code: ExitFailure, err: errors.New("interrupted while explaining plans")}
		}
		return nil, err
	}
	if j.NoComparison() {
		details.WriteTo(w)
		fmt.Fprintf(w, "NO COMPARISON: %d control and %d candidate rounds finished; each side needs one at least\n", len(out.Control), len(out.Candidate))
	}
	if f.jsonPath != "" {
		if err := writeJSON(r.stdio.Stdout, f.jsonPath, report.RehearsalDocument(j)); err != nil {
			return nil, err
		}
	}
	v := j.Verdict
	if f.htmlPath != "" && v != nil {
		if err := writeComparisonHTML(r.stdio.Stdout, f.htmlPath, f.top, [2]string{"control", "candidate"}, v, j.Control, j.Candidate, nil, j.Fixes); err != nil {
			return nil, err
		}
		fmt.Fprintf(w, "HTML report: %s\n", f.htmlPath)
	}
	if v == nil {
		return nil, &exitError{code: ExitIncomplete, err: errors.New("nothing to compare: a side finished no round")}
	}
	return v, nil
}

// judgeOptions are the rehearsal's judging options that its flags give,
// for the rounds until decided and the verdict alike. Every round was
// observed (pg_stat_statements deltas, server work per call): a round
// without them is said to leave server work uncompared.
func (r *rehearseRun) judgeOptions(rules judge.PairRules) rehearse.JudgeOptions {
	return rehearse.JudgeOptions{MinCalls: r.f.minCalls, MinEffectMS: minEffectMS(r.f.minEffectMS), Rules: rules, ExpectWork: r.replay.Observe != nil,
		JudgeLevel: meanLevel(r.f.judgeLevel), Width: r.f.maxWidth}
}

// verdictStage writes each part of the verdict into details as soon as
// it is known, and says on standard error what the judge is doing.
func (r *rehearseRun) verdictStage(details *bytes.Buffer, st judge.Stage, v *judge.Verdict) error {
	switch st {
	case judge.StageCompared:
		if err := report.WriteComparisonDetails(details, v.Comparison, r.f.top); err != nil {
			return fmt.Errorf("write summary: %w", err)
		}
	case judge.StageExplaining:
		fmt.Fprintf(r.stdio.Stderr, "pgrehearse: explaining the plans of the regressed queries and of those that add the most time, on both servers\n")
	case judge.StageExplained:
		if err := report.WritePlans(details, v.Plans.Report, v.Plans.Flagged, planHints); err != nil {
			return fmt.Errorf("write plans: %w", err)
		}
	case judge.StageFindings:
		switch {
		case errors.Is(v.CatalogErr, context.Canceled):
			// Ctrl-C, not the catalog's server: say so, not
			// pgx's "operation was canceled" as if it failed.
			fmt.Fprintf(r.stdio.Stderr, "pgrehearse: findings: interrupted before the catalog was read; the findings that need it are left out\n")
		case v.CatalogErr != nil:
			fmt.Fprintf(r.stdio.Stderr, "pgrehearse: findings: %v; the findings that need the catalog are left out\n", v.CatalogErr)
		}
		// Interrupted, the findings are left out; the rounds
		// and the comparison are still written.
		if v.Findings != nil {
			fmt.Fprintln(details)
			// Its shares of time are of one round: say which.
			fmt.Fprintln(details, "Findings of the candidate's first round; a share of time is of that round, slowed by any regression above")
			if err := report.WriteFindings(details, v.Findings, replayHints); err != nil {
				return fmt.Errorf("write findings: %w", err)
			}
		}
	}
	return nil
}

// judgeStage writes the verdict once it is whole (the details held
// until then follow it), and says what the fix and batch rounds try and
// what they found. Fixes never change the exit code: a fix round that
// fails is said and leaves the verdict as it is.
func (r *rehearseRun) judgeStage(w io.Writer, details *bytes.Buffer, st rehearse.Stage, j *rehearse.Judgement) error {
	stderr, f := r.stdio.Stderr, r.f
	switch st {
	case rehearse.StageJudged:
		return writeVerdictFirst(w, j.Verdict, details)
	case rehearse.StageFixesUnresettable:
		fmt.Fprintf(stderr, "pgrehearse: %d fix(es) not tried: --reset none would leave them on the candidate\n", j.Triable)
	case rehearse.StageFixing:
		fmt.Fprintf(stderr, "rehearse: trying %d fix(es) on the candidate, %d rounds each, in turn with %d control rounds they are judged against\n",
			j.Triable, f.fixRounds, f.fixRounds)
	case rehearse.StageFixed:
		if j.FixesErr != nil {
			fmt.Fprintf(stderr, "pgrehearse: the fix rounds stopped: %v; the verdict above stands\n", j.FixesErr)
		}
		if j.FixesJudgeErr != nil {
			fmt.Fprintf(stderr, "pgrehearse: judging the fixes: %v\n", j.FixesJudgeErr)
		}
		if err := report.WriteFixes(w, j.Fixes); err != nil {
			fmt.Fprintf(stderr, "pgrehearse: write fixes: %v\n", err)
		}
	case rehearse.StageBatching:
		fmt.Fprintf(stderr, "rehearse: replaying onto the candidate with INSERTs in batches of %d, %d rounds, in turn with %d candidate rounds without\n",
			f.batchInserts, f.fixRounds, f.fixRounds)
	case rehearse.StageBatched:
		var be *rehearse.BatchError
		switch {
		case errors.As(j.BatchErr, &be) && be.Rounds:
			fmt.Fprintf(stderr, "pgrehearse: %v; the verdict above stands\n", be)
		case j.BatchErr != nil:
			fmt.Fprintf(stderr, "pgrehearse: %v\n", j.BatchErr)
		default:
			if err := report.WriteBatchMeasure(w, j.Verdict.Batched); err != nil {
				fmt.Fprintf(stderr, "pgrehearse: write batched INSERTs: %v\n", err)
			}
		}
	}
	return nil
}

// examples gives, for a statement whose normalized text cannot be
// explained, one execution of it from the logs. The logs are read once,
// at the first statement that needs it, for every query of rep; the
// values stay in memory (the plans are redacted).
func (r *rehearseRun) examples(ctx context.Context, fps []string) func(string) *results.Sample {
	var found map[string]results.Sample
	return func(fp string) *results.Sample {
		if found == nil {
			var err error
			if found, err = replayrun.Examples(ctx, r.replay, fps); err != nil {
				fmt.Fprintf(r.stdio.Stderr, "pgrehearse: reading the logs for examples of the statements to explain: %v\n", err)
			}
			if found == nil {
				found = map[string]results.Sample{}
			}
		}
		if s, ok := found[fp]; ok {
			return &s
		}
		return nil
	}
}

// loggedDatabase is the database a target's round used (round's map
// applied), as the workload names it on the targets outside the rounds:
// the logged name with the user's map; db itself when no map names it.
func loggedDatabase(db string, round, user map[string]string) string {
	for logged, name := range round {
		if name == db {
			if to, ok := user[logged]; ok {
				return to
			}
			return logged
		}
	}
	return db
}

// parseTries reads --try's NAME:SQL, each name once.
func parseTries(specs []string) ([]fixes.Fix, error) {
	var out []fixes.Fix
	for _, s := range specs {
		f, err := fixes.ParseTry(s)
		if err != nil {
			return nil, usageError("--try: %v", err)
		}
		if slices.ContainsFunc(out, func(g fixes.Fix) bool { return g.Name == f.Name }) {
			return nil, usageError("--try: the name %q is given twice: it names the rounds' files", strings.TrimPrefix(f.Name, fixes.TryPrefix))
		}
		out = append(out, f)
	}
	return out, nil
}

// rehearsalStopped is the error of a rehearsal that a failed reset or
// round stopped: the round's own exit code when it has one (replay's),
// else a failure; the rounds finished are kept.
func rehearsalStopped(out *rehearse.Outcome, dir string, err error) error {
	kept := fmt.Sprintf("the %d control and %d candidate rounds finished are kept in %s", len(out.Control), len(out.Candidate), dir)
	if abs, aerr := filepath.Abs(dir); aerr == nil {
		kept = strings.Replace(kept, dir, abs, 1)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return &exitError{code: ee.code, err: fmt.Errorf("REHEARSAL STOPPED: %w\n%s", err, kept)}
	}
	return fmt.Errorf("REHEARSAL STOPPED: %w\n%s", err, kept)
}
