// Command forecast checks the rehearsal's forecast against the
// application itself (issue 58): a small application (pgbench scripts
// over customers and orders) is run directly on a control and on a
// candidate with one change, in alternating rounds from restored data
// directories (the truth), and a production log of the same application
// is rehearsed with pgrehearse rehearse (the forecast); it prints per
// change and per query the true ratio beside the forecast with its
// interval. bench/forecast.sh builds pgrehearse and runs it;
// docs/forecast.md keeps its latest tables.
//
// Usage: forecast [-changes LIST] [-duration D] [-rounds N] [-rate TPS]
// [-rehearse-args ARGS] [-out DIR]; forecast -render DIR prints the
// tables of an earlier run again from what it kept.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

type options struct {
	changes          []change
	duration         time.Duration
	capacityDuration time.Duration
	rounds           int
	clients          int
	threads          int
	rate             float64
	pgrehearse       string
	rehearseArgs     []string
	pg18Bin          string
	out              string
	keep             bool
	bracket          bool
	targetLogs       bool
	// serverCPUs and clientCPUs pin the servers and the clients
	// (taskset lists; empty: not pinned); binDir is the servers'
	// binaries, pinned ones with serverCPUs (empty: pgcluster's choice).
	serverCPUs, clientCPUs string
	binDir                 string
}

// defaultRehearseArgs are rehearse's flags beyond the targets, the log
// and the output: its defaults, with a rule (a true 1.5x must make it exit
// non-zero) and without fix rounds (they do not change the forecast and
// would double a rehearsal's time).
const defaultRehearseArgs = "--fail-on mean>+50% --fixes=false"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var o options
	changeList := flag.String("changes", strings.Join(changeNames(), ","), "the changes to try, comma-separated: "+strings.Join(changeNames(), ", "))
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "how long the application runs, in each truth round and on production")
	flag.DurationVar(&o.capacityDuration, "capacity-duration", 10*time.Second, "how long the capacity run lasts (without -rate)")
	flag.IntVar(&o.rounds, "rounds", 5, "truth rounds a side (3 leave a perfect forecast inside its interval in about 70% of rows: docs/forecast.md)")
	flag.BoolVar(&o.bracket, "bracket", true, "run half the truth's rounds before the rehearsal and half after it, so that the host's drift over the minutes between them moves the truth and the forecast alike (false: all before, as in the tables of docs/forecast.md before it)")
	flag.BoolVar(&o.targetLogs, "target-logs", false, "the rehearsal's targets log every statement and rehearse reads their logs (--control-log, --candidate-log: the tables of docs/forecast.md before 2026-11-27 20:00); false, rehearse's default: the targets log no statement, so that the application level carries no logging's cost")
	flag.IntVar(&o.clients, "clients", 8, "the application's clients")
	flag.IntVar(&o.threads, "threads", 2, "the application's threads (pgbench -j), each serving its share of the clients")
	flag.Float64Var(&o.rate, "rate", 0, "the application's transactions per second (0: half of the control's capacity, measured once)")
	flag.StringVar(&o.pgrehearse, "pgrehearse", "bin/pgrehearse", "the pgrehearse binary whose forecast is checked")
	rehearseArgs := flag.String("rehearse-args", defaultRehearseArgs, "rehearse's other flags, split at spaces (no quoting)")
	flag.StringVar(&o.pg18Bin, "pg18-bin", ".cache/pg/18/bin", "PostgreSQL 18's server binaries, for the pg18 change (make pg-versions)")
	flag.StringVar(&o.out, "out", "", "directory for everything kept (default: a new temporary directory)")
	flag.BoolVar(&o.keep, "keep", false, "keep the clusters' directories")
	flag.StringVar(&o.serverCPUs, "server-cpus", "", "run every server on these CPUs (taskset's list, such as 0), and -client-cpus the clients: as in production, where the application and the replayer run on other machines than the database (empty: the kernel shares every core)")
	flag.StringVar(&o.clientCPUs, "client-cpus", "", "run the bench and every client it starts (pgbench, rehearse and its replayer) on these CPUs (taskset's list, such as 1)")
	render := flag.String("render", "", "print the tables of the run kept in `DIR` again, and run nothing")
	flag.Parse()
	if *render != "" {
		if err := renderDir(os.Stdout, *render); err != nil {
			fail(err)
		}
		return
	}
	// Moved onto the client CPUs first, so that parse's work (a new
	// output directory, the pinned binaries) is done once.
	if err := reexecPinned(o.clientCPUs); err != nil {
		fail(err)
	}
	if err := o.parse(*changeList, *rehearseArgs); err != nil {
		fmt.Fprintln(os.Stderr, "forecast:", err)
		os.Exit(2)
	}
	if err := run(ctx, o); err != nil {
		fail(err)
	}
}

func (o *options) parse(changeList, rehearseArgs string) error {
	for _, name := range strings.Split(changeList, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, c := range changes {
			if c.name == name {
				o.changes = append(o.changes, c)
				found = true
			}
		}
		if !found {
			return fmt.Errorf("-changes: unknown change %q: use %s", name, strings.Join(changeNames(), ", "))
		}
	}
	if o.duration < time.Second || o.rounds < 1 || o.clients < 1 || o.threads < 1 || o.rate < 0 {
		return errors.New("-duration must be at least 1s, -rounds, -clients and -threads at least 1, -rate at least 0")
	}
	o.rehearseArgs = strings.Fields(rehearseArgs)
	var err error
	if o.pgrehearse, err = filepath.Abs(o.pgrehearse); err != nil {
		return err
	}
	if _, err := os.Stat(o.pgrehearse); err != nil {
		return fmt.Errorf("-pgrehearse: %w (make build)", err)
	}
	if o.out == "" {
		if o.out, err = os.MkdirTemp("", "pgrehearse-forecast-"); err != nil {
			return err
		}
	}
	if o.out, err = filepath.Abs(o.out); err != nil {
		return err
	}
	if (o.serverCPUs == "") != (o.clientCPUs == "") {
		return errors.New("-server-cpus and -client-cpus go together: the servers' cores and the clients' are both needed to keep them apart")
	}
	if o.serverCPUs != "" {
		if o.binDir, err = pinnedBinaries("", filepath.Join(o.out, "bin", "default"), o.serverCPUs); err != nil {
			return fmt.Errorf("-server-cpus: %w", err)
		}
		for _, c := range o.changes {
			if !c.pg18 {
				continue
			}
			if o.pg18Bin, err = pinnedBinaries(o.pg18Bin, filepath.Join(o.out, "bin", "18"), o.serverCPUs); err != nil {
				return fmt.Errorf("-server-cpus, PostgreSQL 18: %w", err)
			}
		}
	}
	return nil
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "forecast %s: "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func run(ctx context.Context, o options) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	start := loadavg()
	say("load average at start: %s; kept in %s", start, o.out)
	prodLog, rate, err := production(ctx, o)
	if err != nil {
		return fmt.Errorf("production: %w", err)
	}
	o.rate = rate
	// A change that fails is said, and the others are measured all
	// the same: the run fails at its end.
	var failed []error
	for _, c := range o.changes {
		if err := runChange(ctx, o, c, prodLog); err != nil {
			say("%s: FAILED: %v", c.name, err)
			failed = append(failed, fmt.Errorf("%s: %w", c.name, err))
		}
		if ctx.Err() != nil {
			return errors.Join(append(failed, ctx.Err())...)
		}
	}
	end := loadavg()
	say("load average at end: %s", end)
	note := fmt.Sprintf("load average (1, 5, 15 min) at start %s, at end %s\n", start, end)
	if err := os.WriteFile(filepath.Join(o.out, "load.txt"), []byte(note), 0o644); err != nil {
		return err
	}
	return errors.Join(append(failed, renderDir(os.Stdout, o.out))...)
}

// clusterSettings are every cluster's: the statements are not logged
// while the data is built and the truth runs; the rehearsal's targets
// and production turn the log on (statementLog).
func clusterSettings(extra map[string]string) map[string]string {
	s := map[string]string{
		"logging_collector":                 "on",
		"log_destination":                   "stderr",
		"log_line_prefix":                   logPrefix,
		"log_min_duration_statement":        "-1",
		"lc_messages":                       "C",
		"log_rotation_size":                 "0",
		"shared_preload_libraries":          "pg_stat_statements",
		"pg_stat_statements.track_planning": "on",
	}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

// logPrefix is the servers' log_line_prefix (the demo's).
const logPrefix = "%m [%p] %q%u@%d/%a %c %e "

// setup builds the application's data on c.
func setup(ctx context.Context, c *pgcluster.Cluster, sql string) error {
	if err := c.Exec(ctx, "postgres", "CREATE DATABASE "+shopDB); err != nil {
		return err
	}
	for _, s := range []string{"SET synchronous_commit = on;" + schema, "VACUUM ANALYZE", "CREATE EXTENSION pg_stat_statements", sql} {
		if s == "" {
			continue
		}
		if err := c.Exec(ctx, shopDB, s); err != nil {
			return err
		}
	}
	return nil
}

// production runs the application on a production server logging every
// statement, and returns the log (copied into the output directory) and
// the rate it ran at: o.rate, or half the capacity measured there first.
func production(ctx context.Context, o options) (string, float64, error) {
	say("production: building the data")
	c, err := pgcluster.Start(ctx, pgcluster.Options{Settings: clusterSettings(nil), BinDir: o.binDir})
	if err != nil {
		return "", 0, err
	}
	defer c.Stop()
	if err := setup(ctx, c, ""); err != nil {
		return "", 0, err
	}
	dir := filepath.Join(o.out, "production")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, err
	}
	scripts, err := scriptFiles(dir)
	if err != nil {
		return "", 0, err
	}
	rate := o.rate
	if rate == 0 {
		snap, err := c.Snapshot(ctx)
		if err != nil {
			return "", 0, err
		}
		tps, err := runApp(ctx, c, scripts, appRun{clients: o.clients, threads: o.threads, duration: o.capacityDuration})
		if err != nil {
			return "", 0, err
		}
		rate = float64(int(tps / 2))
		say("production: capacity %.0f transactions/s with %d clients; the application runs at %.0f", tps, o.clients, rate)
		if err := c.Restore(ctx, snap); err != nil {
			return "", 0, err
		}
	}
	if err := statementLog(ctx, c); err != nil {
		return "", 0, err
	}
	say("production: the application, %d clients at %.0f transactions/s for %v, every statement logged", o.clients, rate, o.duration)
	if _, err := runApp(ctx, c, scripts, appRun{clients: o.clients, threads: o.threads, rate: rate, duration: o.duration}); err != nil {
		return "", 0, err
	}
	if err := c.StopServerSmart(10 * time.Second); err != nil {
		return "", 0, err
	}
	// Each start of the server began a log file: the last is the
	// application's.
	files, err := c.LogFiles("*.log")
	if err != nil || len(files) == 0 {
		return "", 0, fmt.Errorf("no stderr log in %s (%v)", c.LogDir(), err)
	}
	dst := filepath.Join(dir, "production.log")
	return dst, rate, copyFile(files[len(files)-1], dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	return errors.Join(err, out.Close())
}

// statementLog turns on the logging of every statement and session and
// waits until a new session sees it.
func statementLog(ctx context.Context, c *pgcluster.Cluster) error {
	for _, sql := range []string{"ALTER SYSTEM SET log_min_duration_statement = 0",
		"ALTER SYSTEM SET log_connections = on", "ALTER SYSTEM SET log_disconnections = on",
		"SELECT pg_reload_conf()"} {
		if err := c.Exec(ctx, "postgres", sql); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		on, err := logsStatements(ctx, c)
		if err != nil || on {
			return err
		}
		if time.Now().After(deadline) {
			return errors.New("the server did not reload its configuration in 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func runRehearse(ctx context.Context, o options, dir string, ctl, cand *pgcluster.Cluster, prodLog string) ([]string, int, error) {
	args := []string{"rehearse", "--reset", "datadir", "--control-cluster", ctl.Dir(), "--candidate-cluster", cand.Dir()}
	if o.targetLogs {
		args = append(args, "--control-log", filepath.Join(ctl.LogDir(), "*.log"), "--candidate-log", filepath.Join(cand.LogDir(), "*.log"),
			"--target-log-prefix", logPrefix)
	}
	args = append(args, "--format", "stderr", "--prefix", logPrefix,
		"--out", filepath.Join(dir, "rounds"), "--json", filepath.Join(dir, "report.json"))
	args = append(append(args, o.rehearseArgs...), prodLog)
	stdout, err := os.Create(filepath.Join(dir, "rehearse.out"))
	if err != nil {
		return nil, 0, err
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "rehearse.err"))
	if err != nil {
		return nil, 0, err
	}
	defer stderr.Close()
	cmd := exec.CommandContext(ctx, o.pgrehearse, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	command := append([]string{o.pgrehearse}, args...)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return command, 0, nil
	case errors.As(err, &exitErr):
		code := exitErr.ExitCode()
		// 1 the work failed, 2 usage, 4 nothing to measure: no forecast.
		if code == 1 || code == 2 || code == 4 || code < 0 {
			return command, code, fmt.Errorf("rehearse exited %d: see %s", code, stderr.Name())
		}
		return command, code, nil
	default:
		return command, 0, err
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "forecast:", err)
	os.Exit(1)
}

// renderDir prints the tables of the run kept in dir.
func renderDir(w io.Writer, dir string) error {
	t := tally{rows: map[string]int{}, inside: map[string]int{}, nextRows: map[string]int{}, insideNext: map[string]int{}, ratios: map[string][]float64{}, perfect: map[string]float64{}, perfectRows: map[string]int{}, within: map[string]int{}}
	if b, err := os.ReadFile(filepath.Join(dir, "load.txt")); err == nil {
		fmt.Fprint(w, string(b))
	}
	for _, c := range changes {
		cdir := filepath.Join(dir, c.name)
		b, err := os.ReadFile(filepath.Join(cdir, "result.json"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		var o outcome
		if err := json.Unmarshal(b, &o); err != nil {
			return fmt.Errorf("%s: %w", cdir, err)
		}
		d, err := readReport(filepath.Join(cdir, "report.json"))
		if err != nil {
			return err
		}
		if len(o.Rounds) > 0 {
			fmt.Fprintf(w, "\n%d clients (%d threads) at %.0f transactions/s for %s, %d truth rounds%s\n", o.Clients, cmp.Or(o.Threads, 2), o.Rate, o.Duration, len(o.Rounds), o.bracketText())
		}
		o.render(w, d, &t)
	}
	t.summary(w)
	return nil
}
