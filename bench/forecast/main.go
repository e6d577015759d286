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
// Usage: forecast [-apps LIST] [-changes LIST] [-scale N] [-duration D]
// [-rounds N] [-rate TPS] [-rehearse-args ARGS] [-out DIR]; forecast
// -render DIR prints the tables of an earlier run again from what it
// kept.
//
// The application zoo (issue 76), chosen with -apps (default shop), each
// run open loop at a fixed arrival rate with its own production log,
// truth and forecast, kept in OUT/APP/CHANGE:
//
//   - shop: customers and orders, one statement a transaction;
//   - hotrow: transactions of several statements that lock one of 10 hot
//     rows FOR UPDATE, think 3 ms (client side) and update it; its
//     application level is each statement's latency (pgbench -r);
//   - percall: the shop's queries with a new connection a transaction
//     (pgbench -C); its connection setup is a row of its own.
//   - hotcpu: hotrow with a CPU-costly read (a sum over 4000 accounts)
//     inside each transfer while the row's lock is held, so that a quota
//     of half a CPU binds.
//
// Changes (-changes) beyond the settings, the index and the major:
//
//   - half-cpu: the candidate's server under a CPU quota of half the
//     control's CPUs (a cgroup v1 cpu.cfs_quota_us; root);
//   - mem-limit: under a memory limit, page cache included (cgroup v1
//     memory.limit_in_bytes, -mem-limit MB, default 256), below the data
//     set: the shop needs -scale 4 (320 MB);
//   - pg-upgrade: the candidate's data moved to the new major with its
//     pg_upgrade (-upgrade-bin: a full installation, which make
//     pg-versions' builds are not: make pg-upgrade-bin MAJOR=18 builds
//     one into .cache/pg-full/18), no ANALYZE after;
//   - faster: a covering index for the report (the shop's);
//   - update-trigger: a BEFORE UPDATE trigger on hotrow's (and hotcpu's)
//     accounts, about 2x the hot update;
//   - commit-flush: the candidate's server flushes the WAL to disk at
//     each commit (synchronous_commit and fsync on, off on the control
//     as pgcluster starts it): COMMIT's round trip 2x or more (issue 76);
//   - none: identical.
//
// A change of the data (dropped-index, faster, update-trigger) is
// skipped for an application without it (hotrow; the shop).
//
// -capacity also finds each application's capacity on control and
// candidate under headroom's SLO (its pgbench transaction types judged
// as headroom judges queries, against 3 rounds at 1x, bisected by
// headroom's search), and the k at which it falls behind, and runs
// pgrehearse headroom (-headroom-args) on both: the truth's capacity
// beside headroom's answer and their ratio. For example:
//
//	forecast -apps shop,hotrow,percall -scale 4 -changes none,half-cpu,mem-limit,faster
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
	apps             []*application
	changes          []change
	scale            int
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
	// memLimitMB is the mem-limit change's memory limit; candBinDir the
	// candidate's wrapped binaries of a change of the machine (set per
	// change; empty: binDir).
	memLimitMB int
	candBinDir string
	// upgradeBin is the new major's full installation, for pg-upgrade.
	upgradeBin string
	// capacity runs the capacity's search and headroom after each
	// change's truth, up to capacityMaxK, headroom with headroomArgs.
	capacity     bool
	capacityMaxK float64
	// capacityClients scales the application's clients with k in the
	// capacity's truth (stepClients).
	capacityClients bool
	headroomArgs    []string
	// pool replays the applications that keep their connections with
	// --pool (poolArgs).
	pool bool
	// headroomLog is how long production's log for headroom lasts,
	// recorded apart with capacity (0: four times duration).
	headroomLog time.Duration
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
	appList := flag.String("apps", shop.name, "the applications to run, comma-separated: "+strings.Join(appNames(), ", ")+" (each its own production log, truth and forecast, kept in OUT/APP)")
	flag.IntVar(&o.scale, "scale", 1, "the shop's (and percall's) data, in multiples of 50000 customers and 600000 orders (about 85 MB at 1): mem-limit needs a data set larger than its limit (-scale 4)")
	flag.IntVar(&o.memLimitMB, "mem-limit", 256, "the mem-limit change's memory limit of the candidate's server, MB, page cache included: above shared_buffers (128MB) and the backends' own, below the data set (-scale 4: the shop's is then about 330 MB)")
	flag.StringVar(&o.upgradeBin, "upgrade-bin", ".cache/pg-full/18/bin", "the new major's bin directory for the pg-upgrade change: a full installation, pg_upgrade and the client programs beside the server (make pg-upgrade-bin MAJOR=18 builds one there; make pg-versions' builds lack them)")
	flag.BoolVar(&o.pool, "pool", false, "rehearse and headroom replay the applications that keep their connections (all but percall, which connects for each transaction) with --pool: pgbench hands a transaction due to the first free client of its thread, as an application's pool does")
	flag.BoolVar(&o.capacity, "capacity", false, "also find each application's capacity on control and candidate: the largest arrival rate (times its rate) at which it keeps headroom's SLO (--slo in -headroom-args, or its default; each transaction type's p95 against its own at 1x, 3 rounds there, bisected as headroom does), and the first at which it falls behind (less than 90% of the transactions asked, or a mean schedule lag over 100 ms); and pgrehearse headroom over production's log on both: the capacity beside headroom's forecast, and their ratio")
	flag.Float64Var(&o.capacityMaxK, "capacity-max-k", 8, "the largest load factor the capacity tries (and headroom's --max-k)")
	flag.BoolVar(&o.capacityClients, "capacity-clients", false, "the capacity's truth at k runs k times the clients (rounded up) as well as k times the rate, as headroom's steps by fold run k times the sessions (false: -clients at every k, as by speed)")
	flag.DurationVar(&o.headroomLog, "headroom-log", 0, "with -capacity, how long production's log for headroom lasts, recorded apart from the rehearsal's (0: four times -duration): headroom's steps last its span over k (--by speed and --by fold alike) and the truth's -duration; from the rehearsal's 10 s log the shop's steps at 3x lasted 3.4 s and headroom read twice its capacity (docs/headroom.md)")
	headroomArgs := flag.String("headroom-args", "", "headroom's other flags with -capacity, split at spaces (no quoting)")
	changeList := flag.String("changes", strings.Join(changeNames(), ","), "the changes to try, comma-separated: "+strings.Join(changeNames(), ", "))
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "how long the application runs, in each truth round and on production")
	flag.DurationVar(&o.capacityDuration, "capacity-duration", 10*time.Second, "how long the capacity run lasts (without -rate)")
	flag.IntVar(&o.rounds, "rounds", 5, "truth rounds a side (3 leave a perfect forecast inside its interval in about 70% of rows: docs/forecast.md)")
	flag.BoolVar(&o.bracket, "bracket", true, "run half the truth's rounds before the rehearsal and half after it, so that the host's drift over the minutes between them moves the truth and the forecast alike (false: all before, as in the runs of bench/results/2026-11-27-forecast-runs.md before it)")
	flag.BoolVar(&o.targetLogs, "target-logs", false, "the rehearsal's targets log every statement and rehearse reads their logs (--control-log, --candidate-log: the runs of bench/results/2026-11-27-forecast-runs.md before 2026-11-27 20:00); false, rehearse's default: the targets log no statement, so that the application level carries no logging's cost")
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
	o.headroomArgs = strings.Fields(*headroomArgs)
	if err := o.parse(*appList, *changeList, *rehearseArgs); err != nil {
		fmt.Fprintln(os.Stderr, "forecast:", err)
		os.Exit(2)
	}
	if err := run(ctx, o); err != nil {
		fail(err)
	}
}

func (o *options) parse(appList, changeList, rehearseArgs string) error {
	var err error
	if o.scale < 1 {
		return errors.New("-scale must be at least 1")
	}
	if o.apps, err = parseApps(appList, o.scale); err != nil {
		return err
	}
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
	for _, c := range o.changes {
		if c.upgrade {
			if o.upgradeBin, err = upgradeBinDir(o.upgradeBin); err != nil {
				return err
			}
			break
		}
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
	// An application or a change that fails is said, and the others
	// are measured all the same: the run fails at its end.
	var failed []error
	for _, a := range o.apps {
		prod, err := production(ctx, o, a)
		if err != nil {
			say("%s: production FAILED: %v", a.name, err)
			failed = append(failed, fmt.Errorf("%s: production: %w", a.name, err))
			if ctx.Err() != nil {
				return errors.Join(append(failed, ctx.Err())...)
			}
			continue
		}
		ao := o
		ao.rate = prod.rate
		for _, c := range o.changes {
			if !c.appliesTo(a) {
				say("%s %s: does not apply (it changes data %s lacks)", a.name, c.name, a.name)
				continue
			}
			if err := runChange(ctx, ao, a, c, prod); err != nil {
				say("%s %s: FAILED: %v", a.name, c.name, err)
				failed = append(failed, fmt.Errorf("%s %s: %w", a.name, c.name, err))
			}
			if ctx.Err() != nil {
				return errors.Join(append(failed, ctx.Err())...)
			}
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

// setup builds a's data on c.
func setup(ctx context.Context, c *pgcluster.Cluster, a *application, sql string) error {
	if err := c.Exec(ctx, "postgres", "CREATE DATABASE "+a.db); err != nil {
		return err
	}
	for _, s := range []string{"SET synchronous_commit = on;" + a.schema, "VACUUM ANALYZE", "CREATE EXTENSION pg_stat_statements", sql} {
		if s == "" {
			continue
		}
		if err := c.Exec(ctx, a.db, s); err != nil {
			return err
		}
	}
	return nil
}

// recorded is what production leaves: the rehearsal's log, headroom's
// (the same file without -capacity) and the rate the application ran
// at.
type recorded struct {
	log, headroomLog string
	rate             float64
}

// production runs the application on a production server logging every
// statement, and returns the log (copied into the output directory) and
// the rate it ran at: o.rate, or half the capacity measured there first.
// With -capacity it runs the application again from the same data, as
// long as -headroom-log, for headroom's log.
func production(ctx context.Context, o options, a *application) (recorded, error) {
	var rec recorded
	say("%s: production: building the data", a.name)
	c, err := pgcluster.Start(ctx, pgcluster.Options{Settings: clusterSettings(nil), BinDir: o.binDir})
	if err != nil {
		return rec, err
	}
	defer c.Stop()
	if err := setup(ctx, c, a, ""); err != nil {
		return rec, err
	}
	dir := filepath.Join(o.out, a.name, "production")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rec, err
	}
	scripts, err := scriptFiles(a, dir)
	if err != nil {
		return rec, err
	}
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return rec, err
	}
	rec.rate = o.rate
	if rec.rate == 0 {
		tps, _, err := runApp(ctx, c, a, scripts, appRun{clients: o.clients, threads: o.threads, duration: o.capacityDuration})
		if err != nil {
			return rec, err
		}
		rec.rate = float64(int(tps / 2))
		say("%s: production: capacity %.0f transactions/s with %d clients; the application runs at %.0f", a.name, tps, o.clients, rec.rate)
	}
	record := func(d time.Duration, name string) (string, error) {
		if err := c.Restore(ctx, snap); err != nil {
			return "", err
		}
		if err := statementLog(ctx, c); err != nil {
			return "", err
		}
		say("%s: production: the application, %d clients at %.0f transactions/s for %v, every statement logged", a.name, o.clients, rec.rate, d)
		if _, _, err := runApp(ctx, c, a, scripts, appRun{clients: o.clients, threads: o.threads, rate: rec.rate, duration: d}); err != nil {
			return "", err
		}
		if err := c.StopServerSmart(10 * time.Second); err != nil {
			return "", err
		}
		// Each start of the server began a log file: the last is the
		// application's.
		files, err := c.LogFiles("*.log")
		if err != nil || len(files) == 0 {
			return "", fmt.Errorf("no stderr log in %s (%v)", c.LogDir(), err)
		}
		dst := filepath.Join(dir, name)
		return dst, copyFile(files[len(files)-1], dst)
	}
	if rec.log, err = record(o.duration, "production.log"); err != nil {
		return rec, err
	}
	rec.headroomLog = rec.log
	if o.capacity {
		d := o.headroomLog
		if d <= 0 {
			d = 4 * o.duration
		}
		rec.headroomLog, err = record(d, "production-headroom.log")
	}
	return rec, err
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

// poolArgs are rehearse's and headroom's flags for a's sessions: --pool
// with -pool, unless a connects for each transaction.
func (o options) poolArgs(a *application) []string {
	if o.pool && !a.perConnection {
		return []string{"--pool"}
	}
	return nil
}

func runRehearse(ctx context.Context, o options, a *application, dir string, ctl, cand *pgcluster.Cluster, prodLog string) ([]string, int, error) {
	args := []string{"rehearse", "--reset", "datadir", "--control-cluster", ctl.Dir(), "--candidate-cluster", cand.Dir()}
	if o.targetLogs {
		args = append(args, "--control-log", filepath.Join(ctl.LogDir(), "*.log"), "--candidate-log", filepath.Join(cand.LogDir(), "*.log"),
			"--target-log-prefix", logPrefix)
	}
	args = append(args, "--format", "stderr", "--prefix", logPrefix,
		"--out", filepath.Join(dir, "rounds"), "--json", filepath.Join(dir, "report.json"))
	args = append(append(append(args, o.poolArgs(a)...), o.rehearseArgs...), prodLog)
	// 1 the work failed, 2 usage, 4 nothing to measure: no forecast.
	return runPgrehearse(ctx, o.pgrehearse, dir, "rehearse", args, func(code int) bool { return code != 1 && code != 2 && code != 4 && code >= 0 })
}

// runPgrehearse runs bin with args (args[0] its command), its output kept
// in dir as COMMAND.out and COMMAND.err, and returns the command line and
// its exit code; an exit code that answered does not tell is an error
// naming the stderr file.
func runPgrehearse(ctx context.Context, bin, dir, name string, args []string, answered func(code int) bool) ([]string, int, error) {
	stdout, err := os.Create(filepath.Join(dir, name+".out"))
	if err != nil {
		return nil, 0, err
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, name+".err"))
	if err != nil {
		return nil, 0, err
	}
	defer stderr.Close()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err = cmd.Run()
	command := append([]string{bin}, args...)
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return command, 0, nil
	case errors.As(err, &exitErr):
		code := exitErr.ExitCode()
		if !answered(code) {
			return command, code, fmt.Errorf("%s exited %d: see %s", name, code, stderr.Name())
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
	// A run kept before the zoo has the shop's changes at the top
	// (DIR/CHANGE); the zoo's, each application's (DIR/APP/CHANGE).
	dirs := []string{dir}
	for _, a := range newZoo(1) {
		dirs = append(dirs, filepath.Join(dir, a.name))
	}
	for _, adir := range dirs {
		for _, c := range changes {
			if err := renderChange(w, filepath.Join(adir, c.name), &t); err != nil {
				return err
			}
		}
	}
	t.summary(w)
	return nil
}

// renderChange prints the table of the change kept in cdir, if any.
func renderChange(w io.Writer, cdir string, t *tally) error {
	b, err := os.ReadFile(filepath.Join(cdir, "result.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var o outcome
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("%s: %w", cdir, err)
	}
	a := appNamed(cmp.Or(o.App, shop.name), 1)
	if a == nil {
		return fmt.Errorf("%s: unknown application %q", cdir, o.App)
	}
	d, err := readReport(filepath.Join(cdir, "report.json"), a)
	if err != nil {
		return err
	}
	if len(o.Rounds) > 0 {
		fmt.Fprintf(w, "\n%s: %d clients (%d threads) at %.0f transactions/s for %s, %d truth rounds%s\n", a.name, o.Clients, cmp.Or(o.Threads, 2), o.Rate, o.Duration, len(o.Rounds), o.bracketText())
	}
	o.render(w, d, t)
	return nil
}
