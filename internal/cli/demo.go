package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/pgrehearse/pgrehearse/internal/demo"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
)

type demoFlags struct {
	keep        bool
	duration    time.Duration
	change      string
	speed       float64
	rounds      int
	maxRounds   int
	out         string
	failOn      string
	minEffectMS float64
	rate        int
	capture     string
	// headroom searches each target's headroom instead of rehearsing.
	headroom bool
	// tries are rehearse's --try NAME:SQL, passed on.
	tries []string

	// controlBin and candidateBin are the binaries of production and
	// the control, and of the candidate: empty is the installed ones.
	controlBin, candidateBin string
}

func newDemoCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Rehearse a change end to end on throwaway servers",
		Long: `demo shows pgrehearse end to end without a server of your own. It starts three
throwaway PostgreSQL clusters with the same data: "production", a "control"
(production's setup as it is) and a "candidate" with one deliberate
difference (--change). It runs a shop's traffic on production for --duration
(pgbench at a steady rate with the prepared protocol: customers looked up by
email, their orders summed, the orders of a range of customers reported, and
pgbench's own transactions, which update and insert), with every statement
logged; then it rehearses that log:

  pgrehearse rehearse --reset datadir --control-cluster ... --candidate-cluster ...
      --control-log ... --candidate-log ... --rounds 3 LOG

which replays the log onto the control and the candidate in alternating
rounds (control, candidate, candidate, control, control, candidate),
restoring each cluster's data directory before each round, reads every
round's server-side durations from the target's own log, and compares the
candidate's rounds with the control's, beyond the control's own noise. The
comparison is printed, and written to report.html (one file, works offline)
and report.json in --out, with each round's result in --out/rounds.

The rehearsal keeps each query's slowest and median executions with their
values (--keep-samples: the shop's data is made up), and explains the
regressed queries and the top ones by time added on both targets. With
--change drop-index the lookup by email is the top regression, the p95
rule of --fail-on fails, and its plans read "plan changed: Index Scan
(customers_email_idx) -> Seq Scan (customers); cause: index missing on
candidate". With --change small-shared-buffers the plans stay the same, and
the range report reads from outside shared_buffers the blocks the control
finds in them (shared_buffers is named the cause when the comparison finds
it slower). With --change hot-index (every cluster's pgbench_accounts at
fillfactor 90, room for HOT updates) the accounts update keeps its plan and
its latency but dirties more blocks (its index pages) and writes more WAL
per call, a work rule of --fail-on fails, and its plans read "same plan,
more work; cause: index pgbench_accounts_abalance stops HOT updates". With
--change none nothing should regress beyond noise.

With --try 'NAME:SQL' (repeatable) the rehearsal also tries a change of
your own on the candidate, as rehearse --try does, and says which queries
it made faster or slower. With --change none and an index no query uses
(--try 'unused:CREATE INDEX ON customers (created_at)') that is the A/A of
a fix: nothing should be faster or slower (bench/aafix.sh).

With --change upgrade --candidate-bin DIR the candidate runs the server
binaries in DIR, another major version (say /usr/lib/postgresql/18/bin), and
production and the control those of --control-bin (the installed ones by
default): a major-version upgrade rehearsed with the same data, built on each
server by the same statements. The candidate starts with the control's
data-checksum setting, as pg_upgrade requires (18's initdb turns checksums
on by default, and with them reads write WAL). Plans are compared across the versions: what
only the format of one version's EXPLAIN adds (buffers by default, fractional
row counts, index searches on 18) is not a plan change, and a plan that did
change names the version as its cause.

With --capture proxy, production logs no statement: its traffic goes through
"pgrehearse capture" (a proxy that records each session, the server's
answers included), and the rehearsal replays that capture instead of the
log, with the same verdict. The demo takes two recordings from that one
proxy while the traffic runs, without a reconnect, as an operator would
through its admin interface: the first over the first half of the run (kept
in capture-first/), the second over the rest (capture/), whose sessions,
open when it started, are recorded from the middle; the rehearsal replays
the second.

It needs the PostgreSQL server binaries (initdb, pg_ctl, postgres, pgbench)
with pg_stat_statements: set PG_BIN to their directory, or install them with
  ` + pgcluster.InstallHint + `
When run as root, the servers run as the "postgres" user. The demo exits 0
when it ran, whatever the verdict, which it prints.
` + exitHelp(exitDoc{ExitNoInput, "the rehearsal found nothing to measure in production's log"},
			exitDoc{ExitIncomplete, "the rehearsal was interrupted, or a round's replay was incomplete"},
			exitDoc{ExitDiverged, "the candidate's rounds diverged from the control's"}),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkDemoFlags(f); err != nil {
				return err
			}
			return runDemo(cmd.Context(), stdio, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.keep, "keep", false, "keep the clusters' directories and logs")
	fl.DurationVar(&f.duration, "duration", 20*time.Second, "how long production traffic runs")
	fl.StringVar(&f.change, "change", "drop-index", "the candidate's difference: drop-index, small-shared-buffers, hot-index, upgrade or none")
	fl.StringVar(&f.controlBin, "control-bin", "", "directory of the server binaries of production and the control (default: the installed ones)")
	fl.StringVar(&f.candidateBin, "candidate-bin", "", "directory of the candidate's server binaries, another major version for --change upgrade (default: --control-bin's)")
	fl.Float64Var(&f.speed, "speed", 1, "replay speed (1: the original pace; 0: as fast as possible)")
	fl.IntVar(&f.rounds, "rounds", rehearse.DefaultRounds, "rounds per side")
	fl.IntVar(&f.maxRounds, "max-rounds", 0, "rounds per side at most: while a query's interval holds a ratio that breaks a rule, a round a side is added, up to this many (rehearse --max-rounds; 0: --rounds, none added)")
	fl.StringVar(&f.out, "out", "pgrehearse-demo", "directory for the rounds, the comparison and the report")
	fl.StringVar(&f.failOn, "fail-on", demo.FailOn, "rules that make the verdict fail")
	fl.Float64Var(&f.minEffectMS, "min-effect-ms", judge.DefaultComparisonMinEffectMS, "fewest ms a query must slow down by to count")
	fl.IntVar(&f.rate, "rate", 200, "production transactions per second")
	fl.StringVar(&f.capture, "capture", string(demo.CaptureLog), "how production's traffic is taken: log (every statement logged) or proxy (through pgrehearse capture, production logging nothing)")
	fl.StringArrayVar(&f.tries, "try", nil, "after the rehearsal's rounds, try your own `NAME:SQL` on the candidate as rehearse --try does (repeatable; with --change none, an index no query uses is the A/A of a fix: bench/aafix.sh)")
	fl.BoolVar(&f.headroom, "headroom", false, "instead of the rehearsal, find how many times production's load each target holds (pgrehearse headroom, up to 8x; --duration 8s keeps it to a few minutes)")
	return cmd
}

// checkDemoFlags refuses flags the demo cannot run with.
func checkDemoFlags(f demoFlags) error {
	if f.duration < time.Second {
		return usageError("--duration must be at least 1s, got %v", f.duration)
	}
	if _, ok := demo.Changes[demo.Change(f.change)]; !ok {
		return usageError("--change %q: use drop-index, small-shared-buffers, hot-index, upgrade or none", f.change)
	}
	if demo.Change(f.change) == demo.Upgrade && f.candidateBin == "" {
		return usageError("--change upgrade needs the candidate's server binaries: --candidate-bin DIR")
	}
	if f.speed < 0 || (f.headroom && f.speed == 0) {
		return usageError("--speed must be >= 0 (above 0 with --headroom, which multiplies it)")
	}
	if f.rounds < 1 {
		return usageError("--rounds must be at least 1")
	}
	if demo.Capture(f.capture) != demo.CaptureLog && demo.Capture(f.capture) != demo.CaptureProxy {
		return usageError("--capture %q: use log or proxy", f.capture)
	}
	if _, err := parseTries(f.tries); err != nil {
		return err
	}
	if len(f.tries) > 0 && f.headroom {
		return usageError("--try is tried by the rehearsal, which --headroom does not run")
	}
	return nil
}

func runDemo(ctx context.Context, stdio IO, f demoFlags) (err error) {
	// The clusters start and build their shops at once: say may be
	// called from several goroutines.
	var sayMu sync.Mutex
	say := func(format string, args ...any) {
		sayMu.Lock()
		defer sayMu.Unlock()
		fmt.Fprintf(stdio.Stderr, "demo: "+format+"\n", args...)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	out := func(name string) string { return filepath.Join(f.out, name) }
	// The rounds of an earlier demo in the same directory make way.
	if err := os.RemoveAll(out("rounds")); err != nil {
		return err
	}
	st, err := demo.Set(ctx, demo.Options{Change: demo.Change(f.change), ControlBin: f.controlBin, CandidateBin: f.candidateBin,
		Keep: f.keep, Duration: f.duration, Rate: f.rate, Capture: demo.Capture(f.capture),
		CaptureFirst: out("capture-first"), CaptureDir: out("capture"), Say: say})
	var ie *demo.IncompleteCaptureError
	if errors.As(err, &ie) {
		return &exitError{code: ExitIncomplete, err: err}
	}
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	ctl, cand, prodLog := st.Control, st.Candidate, st.Traffic
	if f.headroom {
		return demoHeadroom(ctx, stdio, say, f, ctl, cand, prodLog, out)
	}
	args := []string{"rehearse", "--reset", "datadir", "--control-cluster", ctl.Dir(), "--candidate-cluster", cand.Dir(),
		"--control-log", filepath.Join(ctl.LogDir(), "*.log"), "--candidate-log", filepath.Join(cand.LogDir(), "*.log"),
		"--rounds", strconv.Itoa(f.rounds), "--max-rounds", strconv.Itoa(max(f.maxRounds, f.rounds)), "--speed", strconv.FormatFloat(f.speed, 'g', -1, 64),
		"--target-log-prefix", demo.Prefix,
		"--out", out("rounds"), "--json", out("report.json"), "--html", out("report.html"), "--keep-samples",
		"--fail-on", f.failOn, "--min-effect-ms", strconv.FormatFloat(f.minEffectMS, 'g', -1, 64)}
	if demo.Capture(f.capture) == demo.CaptureLog {
		args = append(args, "--format", "stderr", "--prefix", demo.Prefix)
	}
	for _, t := range f.tries {
		args = append(args, "--try", t)
	}
	args = append(args, prodLog)
	say("pgrehearse %s", shellJoin(args))
	code := Run(ctx, stdio, args)
	// A verdict that judged no latency (fewer than 3 rounds, a round
	// behind its schedule) is a verdict the demo shows, as a FAIL is.
	if code == ExitIncomplete && demo.LatencyNotJudged(out("report.json")) {
		code = ExitOK
	}
	// An undecided verdict too: the demo keeps to its rounds unless
	// --max-rounds allows more, and shows what they could not tell.
	if code != ExitOK && code != ExitRegression && code != ExitUndecided {
		return &exitError{code: code, err: fmt.Errorf("demo: rehearse failed (exit code %d)", code)}
	}
	verdict, err := demo.Verdict(out("report.json"))
	if err != nil {
		return err
	}
	say("verdict: %s", verdict)
	say("report: %s", out("report.html"))
	return nil
}

// shellJoin quotes args for display as a command line.
func shellJoin(args []string) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		if a == "" || strings.ContainsAny(a, " '\"%$<>|&;()*?") {
			s += "'" + a + "'"
		} else {
			s += a
		}
	}
	return s
}
