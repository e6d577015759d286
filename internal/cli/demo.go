package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/cobra"

	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

func init() { commands = append(commands, newDemoCmd) }

// demoPrefix is the log_line_prefix of the demo's servers, passed on so
// that the demo does not depend on prefix detection.
const demoPrefix = workload.LogLinePrefix

// Deliberate differences the candidate server can have.
var demoChanges = map[string]string{
	"drop-index":           "the candidate lacks the index the lookup of customers by email uses",
	"small-shared-buffers": "the candidate runs with shared_buffers = 128kB",
	"hot-index":            "the candidate has an index on pgbench_accounts (abalance), a column pgbench's updates set, so they are no longer HOT",
	"upgrade":              "the candidate runs another major version (--candidate-bin), with the same data",
	"none":                 "the candidate is identical: the verdict should pass",
}

// demoFailOn is the demo's verdict rule: a query slower at p95 by half,
// or writing half as much WAL again per call, or dirtying half as many
// blocks again per call. An update no longer HOT dirties its index pages
// too: in a 4-second demo its blocks dirtied per call doubled while its
// WAL per call grew by less than the work floor (1 kB).
const demoFailOn = "p95>+50%,wal>+50%,dirtied>+50%"

// demoHotIndex is the index the hot-index change adds on the candidate.
const demoHotIndex = "pgbench_accounts_abalance"

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
	fl.StringVar(&f.failOn, "fail-on", demoFailOn, "rules that make the verdict fail")
	fl.Float64Var(&f.minEffectMS, "min-effect-ms", judge.DefaultComparisonMinEffectMS, "fewest ms a query must slow down by to count")
	fl.IntVar(&f.rate, "rate", 200, "production transactions per second")
	fl.StringVar(&f.capture, "capture", demoCaptureLog, "how production's traffic is taken: log (every statement logged) or proxy (through pgrehearse capture, production logging nothing)")
	fl.StringArrayVar(&f.tries, "try", nil, "after the rehearsal's rounds, try your own `NAME:SQL` on the candidate as rehearse --try does (repeatable; with --change none, an index no query uses is the A/A of a fix: bench/aafix.sh)")
	fl.BoolVar(&f.headroom, "headroom", false, "instead of the rehearsal, find how many times production's load each target holds (pgrehearse headroom, up to 8x; --duration 8s keeps it to a few minutes)")
	return cmd
}

// checkDemoFlags refuses flags the demo cannot run with.
func checkDemoFlags(f demoFlags) error {
	if f.duration < time.Second {
		return usageError("--duration must be at least 1s, got %v", f.duration)
	}
	if _, ok := demoChanges[f.change]; !ok {
		return usageError("--change %q: use drop-index, small-shared-buffers, hot-index, upgrade or none", f.change)
	}
	if f.change == "upgrade" && f.candidateBin == "" {
		return usageError("--change upgrade needs the candidate's server binaries: --candidate-bin DIR")
	}
	if f.speed < 0 || (f.headroom && f.speed == 0) {
		return usageError("--speed must be >= 0 (above 0 with --headroom, which multiplies it)")
	}
	if f.rounds < 1 {
		return usageError("--rounds must be at least 1")
	}
	if f.capture != demoCaptureLog && f.capture != demoCaptureProxy {
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

	settings, candSettings := demoSettings(f.change)
	bins, majors, err := demoVersions(f, say)
	if err != nil {
		return err
	}
	checksums := demoChecksums(majors, say)
	say("starting three throwaway clusters: production, a control and a candidate (%s)", demoChanges[f.change])
	names := []string{"production", "control", "candidate"}
	clusters := make([]*pgcluster.Cluster, len(names))
	startErr := eachAtOnce(len(names), func(i int) (err error) {
		s := settings
		if names[i] == "candidate" {
			s = candSettings
		}
		s = versionSettings(s, majors[names[i]])
		clusters[i], err = pgcluster.Start(ctx, pgcluster.Options{Settings: s, Keep: f.keep, BinDir: bins[names[i]], Checksums: checksums[names[i]]})
		return err
	})
	for _, c := range clusters {
		if c != nil {
			defer stopCluster(c, &err, say, f.keep)
		}
	}
	if startErr != nil {
		return startErr
	}
	prod, ctl, cand := clusters[0], clusters[1], clusters[2]
	if err := setupDemoShops(ctx, say, f.change, prod, ctl, cand); err != nil {
		return err
	}
	var prodLog string
	if f.capture == demoCaptureProxy {
		if prodLog, err = captureShop(ctx, stdio, say, prod, f, out("capture-first"), out("capture")); err != nil {
			return err
		}
	} else {
		if err := enableStatementLog(ctx, prod); err != nil {
			return err
		}
		say("production traffic: pgbench -M prepared, %d transactions/s for %v", f.rate, f.duration)
		run, err := workload.RunShop(ctx, prod, f.duration, f.rate)
		if err != nil {
			return err
		}
		say("production ran %d transactions", run.Transactions)
		if prodLog, err = stoppedLog(prod); err != nil {
			return err
		}
	}
	// The targets log every statement from now on: each round's
	// server-side durations come from there.
	for _, c := range []*pgcluster.Cluster{ctl, cand} {
		if err := enableStatementLog(ctx, c); err != nil {
			return err
		}
	}

	if f.headroom {
		return demoHeadroom(ctx, stdio, say, f, ctl, cand, prodLog, out)
	}
	args := []string{"rehearse", "--reset", "datadir", "--control-cluster", ctl.Dir(), "--candidate-cluster", cand.Dir(),
		"--control-log", filepath.Join(ctl.LogDir(), "*.log"), "--candidate-log", filepath.Join(cand.LogDir(), "*.log"),
		"--rounds", strconv.Itoa(f.rounds), "--max-rounds", strconv.Itoa(max(f.maxRounds, f.rounds)), "--speed", strconv.FormatFloat(f.speed, 'g', -1, 64),
		"--target-log-prefix", demoPrefix,
		"--out", out("rounds"), "--json", out("report.json"), "--html", out("report.html"), "--keep-samples",
		"--fail-on", f.failOn, "--min-effect-ms", strconv.FormatFloat(f.minEffectMS, 'g', -1, 64)}
	if f.capture == demoCaptureLog {
		args = append(args, "--format", "stderr", "--prefix", demoPrefix)
	}
	for _, t := range f.tries {
		args = append(args, "--try", t)
	}
	args = append(args, prodLog)
	say("pgrehearse %s", shellJoin(args))
	code := Run(ctx, stdio, args)
	// A verdict that judged no latency (fewer than 3 rounds, a round
	// behind its schedule) is a verdict the demo shows, as a FAIL is.
	if code == ExitIncomplete && latencyNotJudged(out("report.json")) {
		code = ExitOK
	}
	// An undecided verdict too: the demo keeps to its rounds unless
	// --max-rounds allows more, and shows what they could not tell.
	if code != ExitOK && code != ExitRegression && code != ExitUndecided {
		return &exitError{code: code, err: fmt.Errorf("demo: rehearse failed (exit code %d)", code)}
	}
	verdict, err := reportVerdict(out("report.json"))
	if err != nil {
		return err
	}
	say("verdict: %s", verdict)
	say("report: %s", out("report.html"))
	return nil
}

// demoVersions returns each cluster's bin directory and major version:
// production's and the control's from --control-bin, the candidate's
// from --candidate-bin (--control-bin's when not given). It says which
// versions run when they differ, and once what a version lacks that the
// demo's settings ask for.
func demoVersions(f demoFlags, say func(string, ...any)) (bins map[string]string, majors map[string]int, err error) {
	candBin := f.candidateBin
	if candBin == "" {
		candBin = f.controlBin
	}
	bins = map[string]string{"production": f.controlBin, "control": f.controlBin, "candidate": candBin}
	majors = map[string]int{}
	for _, name := range []string{"control", "candidate"} {
		if majors[name], err = pgcluster.MajorOf(bins[name]); err != nil {
			flag := map[string]string{"control": "--control-bin", "candidate": "--candidate-bin"}[name]
			return nil, nil, fmt.Errorf("%s: %w", flag, err)
		}
	}
	majors["production"] = majors["control"]
	ctl, cand := majors["control"], majors["candidate"]
	switch {
	case f.change == "upgrade" && ctl == cand:
		say("--change upgrade: the candidate's binaries are PostgreSQL %d, as the control's: the rehearsal compares the same version", cand)
	case ctl != cand:
		say("production and the control run PostgreSQL %d, the candidate PostgreSQL %d", ctl, cand)
	}
	if m := min(ctl, cand); m < 15 {
		// Said once: the demo reads the stderr log, and jsonlog is only
		// one of the formats written beside it.
		say("PostgreSQL %d has no jsonlog (from 15): its servers log stderr and csvlog", m)
	}
	return bins, majors, nil
}

// demoChecksums returns each cluster's data-checksum setting: initdb's
// default, except for a candidate of another major version than the
// control's, which gets the control's, as pg_upgrade requires (the old and
// new clusters must agree). PostgreSQL 18's initdb turns checksums on by
// default; left so, an 18 candidate of a 13 control WAL-logs the hint bits
// its reads set, and SELECTs write WAL on the candidate only: a difference
// that no upgrade makes. It says so when it chooses.
func demoChecksums(majors map[string]int, say func(string, ...any)) map[string]pgcluster.Checksums {
	ctl, cand := majors["control"], majors["candidate"]
	want := pgcluster.InitdbChecksums(ctl)
	if ctl == cand || pgcluster.InitdbChecksums(cand) == want {
		return map[string]pgcluster.Checksums{}
	}
	say("the candidate starts with data checksums %s, as the control's (PostgreSQL %d's default): pg_upgrade keeps the old cluster's setting", want, ctl)
	return map[string]pgcluster.Checksums{"candidate": want}
}

// versionSettings returns settings as PostgreSQL major takes them:
// log_destination without jsonlog before 15.
func versionSettings(settings map[string]string, major int) map[string]string {
	s := maps.Clone(settings)
	if major < 15 {
		var dests []string
		for _, d := range strings.Split(s["log_destination"], ",") {
			if d != "jsonlog" {
				dests = append(dests, d)
			}
		}
		s["log_destination"] = strings.Join(dests, ",")
	}
	return s
}

// demoSettings returns the production cluster's settings and the
// candidate's, which differ by change.
func demoSettings(change string) (prod, cand map[string]string) {
	// Logging is off while the data is built, then turned on: the setup
	// is not traffic to rehearse, and both servers get it anyway.
	prod = workload.LogSettings()
	prod["log_line_prefix"] = demoPrefix
	prod["log_min_duration_statement"] = "-1"
	prod["log_connections"] = "off"
	prod["log_disconnections"] = "off"
	// Planning time is half of what a query costs the server; the
	// evidence shows it only when it is tracked.
	prod["pg_stat_statements.track_planning"] = "on"
	cand = maps.Clone(prod)
	if change == "small-shared-buffers" {
		cand["shared_buffers"] = "128kB"
	}
	return prod, cand
}

// setupDemoShops builds the shop's data on every cluster, all at once
// (each build is one server's work, and the machine may have cores to
// spare), then makes the candidate's change (the last cluster's) when it
// is to the schema.
func setupDemoShops(ctx context.Context, say func(string, ...any), change string, clusters ...*pgcluster.Cluster) error {
	err := eachAtOnce(len(clusters), func(i int) error {
		c := clusters[i]
		say("building the shop's data in %s", c.Dir())
		if err := workload.SetupShop(ctx, c); err != nil {
			return fmt.Errorf("shop data: %w", err)
		}
		// The replay's observer reads per-query server figures from it.
		if err := c.Exec(ctx, workload.ShopDatabase, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
			return err
		}
		if change == "hot-index" {
			// Room in each page for an updated row's new version, as
			// a table updated in place should have: at pgbench's
			// fillfactor of 100 its updates are rarely HOT anyway,
			// and an index on abalance would change little.
			for _, sql := range []string{"ALTER TABLE pgbench_accounts SET (fillfactor = 90)", "VACUUM FULL pgbench_accounts", "ANALYZE pgbench_accounts"} {
				if err := c.Exec(ctx, workload.ShopDatabase, sql); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	cand := clusters[len(clusters)-1]
	switch change {
	case "drop-index":
		return cand.Exec(ctx, workload.ShopDatabase, "DROP INDEX "+workload.ShopEmailIndex)
	case "hot-index":
		return cand.Exec(ctx, workload.ShopDatabase, "CREATE INDEX "+demoHotIndex+" ON pgbench_accounts (abalance)")
	}
	return nil
}

// eachAtOnce calls f(0) to f(n-1) each in its own goroutine and returns
// their errors joined once all have returned.
func eachAtOnce(n int, f func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// enableStatementLog turns on the logging of every statement and session
// and waits until new sessions see it: the postmaster reloads its
// configuration on its own time, and a session forked before that would
// go unlogged.
func enableStatementLog(ctx context.Context, c *pgcluster.Cluster) error {
	// ALTER SYSTEM cannot share a query string with other statements.
	for _, sql := range []string{"ALTER SYSTEM SET log_min_duration_statement = 0",
		"ALTER SYSTEM SET log_connections = on", "ALTER SYSTEM SET log_disconnections = on",
		"SELECT pg_reload_conf()"} {
		if err := c.Exec(ctx, "postgres", sql); err != nil {
			return err
		}
	}
	cfg, err := pgconn.ParseConfig(c.DSN("postgres"))
	if err != nil {
		return err
	}
	// The demo's own polls are not the workload (see
	// event.OwnApplicationPrefix): however many it takes, the analyses
	// leave them out.
	cfg.RuntimeParams["application_name"] = event.OwnApplicationPrefix + "demo"
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := pgconn.ConnectConfig(ctx, cfg)
		if err != nil {
			return err
		}
		res, err := conn.Exec(ctx, "SHOW log_min_duration_statement").ReadAll()
		conn.Close(ctx)
		if err != nil {
			return err
		}
		if len(res) == 1 && len(res[0].Rows) == 1 && string(res[0].Rows[0][0]) == "0" {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the server did not reload its configuration in 10 s")
		}
	}
}

// stoppedLog stops c's server, so that its log is complete, and returns
// its stderr log.
func stoppedLog(c *pgcluster.Cluster) (string, error) {
	// Connections closed just before (the replay's last sessions) may
	// still be ending in the server: a fast shutdown would make their
	// backends log FATAL 57P01, an error of the demo, not of the
	// candidate.
	if err := c.StopServerSmart(10 * time.Second); err != nil {
		return "", err
	}
	files, err := c.LogFiles("*.log")
	if err != nil {
		return "", err
	}
	if len(files) != 1 {
		return "", fmt.Errorf("want one stderr log in %s, found %d", c.LogDir(), len(files))
	}
	return files[0], nil
}

func stopCluster(c *pgcluster.Cluster, err *error, say func(string, ...any), keep bool) {
	if keep {
		say("kept %s", c.Dir())
	}
	if stopErr := c.Stop(); stopErr != nil {
		*err = errors.Join(*err, fmt.Errorf("stop the cluster: %w", stopErr))
	}
}

// reportVerdict reads the verdict line of a report's JSON.
func reportVerdict(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	var r struct {
		Verdict struct {
			Line string `json:"line"`
		} `json:"verdict"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return r.Verdict.Line, nil
}

// latencyNotJudged says whether the report at path judged no latency
// because a replay fell behind its schedule (and nothing else decided
// its verdict); false when it cannot be read.
func latencyNotJudged(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var r struct {
		Verdict struct {
			Status           judge.VerdictStatus     `json:"status"`
			LatencyNotJudged *judge.LatencyNotJudged `json:"latency_not_judged"`
		} `json:"verdict"`
	}
	if json.Unmarshal(b, &r) != nil {
		return false
	}
	return r.Verdict.Status == judge.VerdictIncomplete && r.Verdict.LatencyNotJudged != nil &&
		r.Verdict.LatencyNotJudged.Reason == judge.NotJudgedReplayLagged
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
