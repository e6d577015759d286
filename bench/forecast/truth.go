package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// The truth: the application run directly on a target, from its
// restored data directory, with pg_stat_statements reset before it.

// appRun is how the application is run: clients at a fixed arrival
// rate (pgbench -R), or as fast as they can (rate 0).
type appRun struct {
	clients  int
	threads  int // pgbench's worker threads (-j), each serving its share of the clients
	rate     float64
	duration time.Duration
	// logPrefix, when set, is pgbench's per-transaction log (-l).
	logPrefix string
}

// round is what one run of the application measured.
type round struct {
	Side string  `json:"side"`
	TPS  float64 `json:"tps"`
	// Server is each kind's server time per call from
	// pg_stat_statements (execution + planning), in ms, by kind name.
	Server map[string]float64 `json:"server_ms"`
	Calls  map[string]int64   `json:"calls"`
	// Plans is how many times each kind was planned (pg_stat_statements'
	// plans): about the calls when every call gets a custom plan, about
	// six a client when its prepared statement settles on a generic one.
	// PlanMS is the planning's share of Server, per call.
	Plans  map[string]int64   `json:"plans,omitempty"`
	PlanMS map[string]float64 `json:"plan_ms,omitempty"`
	// App is each transaction type's mean latency less its schedule lag
	// (pgbench -l), in ms, by kind name; Lag its mean schedule lag.
	App map[string]float64 `json:"app_ms"`
	Lag map[string]float64 `json:"lag_ms"`
	Txs map[string]int64   `json:"transactions"`
	// ClientCPU is the CPU pgbench itself used in the round (user and
	// system), in seconds: on a host the candidate saturates, the
	// application's own share of the cores.
	ClientCPU float64 `json:"client_cpu_seconds,omitempty"`
	// ConnectMS is pgbench's average connection time (ms) of an
	// application that connects per transaction (-C): part of what
	// each of its transactions waited.
	ConnectMS float64 `json:"connection_ms,omitempty"`
}

// scriptFiles writes the application's scripts into dir and returns
// pgbench's -f options with their weights.
func scriptFiles(a *application, dir string) ([]string, error) {
	var args []string
	for i, t := range a.scripts() {
		path := filepath.Join(dir, fmt.Sprintf("script-%d.sql", i))
		if err := os.WriteFile(path, []byte(t.script), 0o644); err != nil {
			return nil, err
		}
		args = append(args, "-f", path+"@"+strconv.Itoa(t.weight))
	}
	return args, nil
}

var tpsLine = regexp.MustCompile(`number of transactions actually processed: (\d+)`)

// runApp runs the application on c and returns its transactions per
// second (transactions processed over the duration) and pgbench's output.
func runApp(ctx context.Context, c *pgcluster.Cluster, a *application, scripts []string, r appRun) (float64, []byte, error) {
	args := append([]string{"-n"}, a.pgbenchArgs...)
	if a.perStatement() {
		// Each statement's latency (pgbench -r): the application's
		// level of a transaction of several statements.
		args = append(args, "-r")
	}
	args = append(args, "-c", strconv.Itoa(r.clients), "-j", strconv.Itoa(max(1, min(r.threads, r.clients))),
		"-T", strconv.Itoa(int(r.duration.Seconds())), "--random-seed=7")
	if r.rate > 0 {
		args = append(args, "-R", strconv.FormatFloat(r.rate, 'f', 0, 64))
	}
	if r.logPrefix != "" {
		args = append(args, "-l", "--log-prefix", r.logPrefix)
	}
	args = append(append(args, scripts...), a.db)
	out, err := c.Pgbench(ctx, args...)
	if err != nil {
		return 0, out, err
	}
	m := tpsLine.FindSubmatch(out)
	if m == nil {
		return 0, out, fmt.Errorf("pgbench: no transaction count in its output:\n%s", out)
	}
	n, _ := strconv.ParseFloat(string(m[1]), 64)
	return n / r.duration.Seconds(), out, nil
}

// truthRound restores c to snap, resets pg_stat_statements, runs the
// application and reads what it measured.
func truthRound(ctx context.Context, c *pgcluster.Cluster, snap *pgcluster.Snapshot, side string, a *application, scripts []string, r appRun) (round, error) {
	rd := round{Side: side}
	if err := c.Restore(ctx, snap); err != nil {
		return rd, err
	}
	if err := c.Exec(ctx, a.db, "SELECT pg_stat_statements_reset()"); err != nil {
		return rd, err
	}
	before, err := childrenCPU()
	if err != nil {
		return rd, err
	}
	tps, out, err := runApp(ctx, c, a, scripts, r)
	if err != nil {
		return rd, err
	}
	// pgbench's report, kept beside its log (not matched by the log's
	// glob below): the per-statement latencies and connection time read
	// from it.
	if err := os.WriteFile(r.logPrefix+"-output.txt", out, 0o644); err != nil {
		return rd, err
	}
	after, err := childrenCPU()
	if err != nil {
		return rd, err
	}
	rd.TPS, rd.ClientCPU = tps, after-before
	st, err := serverTimes(ctx, c, a)
	if err != nil {
		return rd, err
	}
	rd.Server, rd.Calls, rd.Plans, rd.PlanMS = st.perCall, st.calls, st.plans, st.planPerCall
	files, err := filepath.Glob(r.logPrefix + ".*")
	if err != nil || len(files) == 0 {
		return rd, fmt.Errorf("pgbench wrote no per-transaction log at %s.*", r.logPrefix)
	}
	if rd.App, rd.Lag, rd.Txs, err = appLatencies(a, files); err != nil {
		return rd, err
	}
	if a.perStatement() {
		// The lag stays per transaction type; the latencies are each
		// statement's, and a statement's count its transactions'.
		if rd.App, rd.Txs, err = statementLatencies(a, out); err != nil {
			return rd, err
		}
	}
	if a.perConnection {
		if rd.ConnectMS, err = connectionTime(out); err != nil {
			return rd, err
		}
	}
	return rd, nil
}

// childrenCPU is the CPU, in seconds, that this process's ended
// children used: around one pgbench run, that run's.
func childrenCPU() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), nil
}

// serverStats is what pg_stat_statements says of each kind, by name.
type serverStats struct {
	perCall     map[string]float64 // execution and planning, ms a call
	planPerCall map[string]float64 // planning alone, ms a call
	calls       map[string]int64
	plans       map[string]int64
}

// serverTimes reads each kind's server time per call (execution and
// planning), its calls and its plans from pg_stat_statements.
func serverTimes(ctx context.Context, c *pgcluster.Cluster, a *application) (serverStats, error) {
	st := serverStats{perCall: map[string]float64{}, planPerCall: map[string]float64{}, calls: map[string]int64{}, plans: map[string]int64{}}
	conn, err := pgconn.Connect(ctx, c.DSN(a.db))
	if err != nil {
		return st, err
	}
	defer conn.Close(context.Background())
	res, err := conn.Exec(ctx, `SELECT query, calls, total_exec_time + total_plan_time, plans, total_plan_time
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = '`+a.db+`'`).ReadAll()
	if err != nil {
		return st, err
	}
	total := map[string]float64{}
	planTotal := map[string]float64{}
	for _, row := range res[0].Rows {
		k := a.kindOf(string(row[0]))
		if k < 0 {
			continue
		}
		name := a.kinds[k].name
		n, _ := strconv.ParseInt(string(row[1]), 10, 64)
		ms, _ := strconv.ParseFloat(string(row[2]), 64)
		plans, _ := strconv.ParseInt(string(row[3]), 10, 64)
		planMS, _ := strconv.ParseFloat(string(row[4]), 64)
		st.calls[name] += n
		st.plans[name] += plans
		total[name] += ms
		planTotal[name] += planMS
	}
	for name, n := range st.calls {
		if n > 0 {
			st.perCall[name] = total[name] / float64(n)
			st.planPerCall[name] = planTotal[name] / float64(n)
		}
	}
	return st, nil
}

// appLatencies reads pgbench's per-transaction logs (-l: client_id
// transaction_no time script_no time_epoch time_us schedule_lag) and
// returns per transaction type the mean latency less the schedule lag,
// the mean lag (ms) and the count. time counts from the transaction's
// scheduled start, so time less lag is what the application waited for
// its statement.
func appLatencies(a *application, files []string) (app, lag map[string]float64, txs map[string]int64, err error) {
	scripts := a.scripts()
	sumApp := map[string]float64{}
	sumLag := map[string]float64{}
	txs = map[string]int64{}
	for _, path := range files {
		if err := readTxLog(path, scripts, sumApp, sumLag, txs); err != nil {
			return nil, nil, nil, err
		}
	}
	app = map[string]float64{}
	lag = map[string]float64{}
	for name, n := range txs {
		app[name] = sumApp[name] / float64(n) / 1000
		lag[name] = sumLag[name] / float64(n) / 1000
	}
	return app, lag, txs, nil
}

func readTxLog(path string, scripts []txType, sumApp, sumLag map[string]float64, txs map[string]int64) error {
	return scanTxLog(path, scripts, func(name string, appUS, lagUS float64, failed bool) {
		if failed {
			return
		}
		sumApp[name] += appUS
		sumLag[name] += lagUS
		txs[name]++
	})
}

// scanTxLog passes each transaction of a pgbench per-transaction log to
// tx: its type, its latency less its schedule lag and its lag (us), or
// failed (pgbench's "failed"; its times are then 0). Skipped
// transactions are left out.
func scanTxLog(path string, scripts []txType, tx func(name string, appUS, lagUS float64, failed bool)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 {
			return fmt.Errorf("%s:%d: %d fields, want 6 or more", path, line, len(fields))
		}
		if fields[2] == "skipped" {
			continue
		}
		script, err2 := strconv.Atoi(fields[3])
		if err2 != nil || script < 0 || script >= len(scripts) {
			return fmt.Errorf("%s:%d: cannot read %q", path, line, sc.Text())
		}
		if fields[2] == "failed" {
			tx(scripts[script].name, 0, 0, true)
			continue
		}
		us, err1 := strconv.ParseFloat(fields[2], 64)
		if err1 != nil {
			return fmt.Errorf("%s:%d: cannot read %q", path, line, sc.Text())
		}
		var lagUS float64
		if len(fields) >= 7 {
			if lagUS, err = strconv.ParseFloat(fields[6], 64); err != nil {
				return fmt.Errorf("%s:%d: schedule lag %q: %w", path, line, fields[6], err)
			}
		}
		tx(scripts[script].name, us-lagUS, lagUS, false)
	}
	return sc.Err()
}

var (
	scriptHeader = regexp.MustCompile(`^SQL script \d+:`)
	scriptTxs    = regexp.MustCompile(`^ - (\d+) transactions`)
	statementLat = regexp.MustCompile(`^\s+(\d+\.\d+)\s+(?:\d+\s+)?(\S.*)$`)
	connectLine  = regexp.MustCompile(`average connection time = (\d+(?:\.\d+)?) ms`)
)

// statementLatencies reads pgbench -r's per-statement latencies (ms) from
// its output and returns each of a's kinds' mean over its transactions
// and its count (the transactions of the scripts it is in). A script's
// section (SQL script N:) says its transactions; a lone script's are the
// run's.
func statementLatencies(a *application, out []byte) (map[string]float64, map[string]int64, error) {
	sum := map[string]float64{}
	txs := map[string]int64{}
	var count int64
	if m := tpsLine.FindSubmatch(out); m != nil {
		count, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case scriptHeader.MatchString(line):
			in, count = false, 0
			continue
		case scriptTxs.MatchString(line):
			count, _ = strconv.ParseInt(scriptTxs.FindStringSubmatch(line)[1], 10, 64)
			continue
		case strings.Contains(line, "statement latencies in milliseconds"):
			in = true
			continue
		}
		if !in {
			continue
		}
		m := statementLat.FindStringSubmatch(line)
		if m == nil {
			in = false
			continue
		}
		k := a.kindOf(m[2])
		if k < 0 {
			continue
		}
		ms, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			return nil, nil, fmt.Errorf("pgbench -r: %q: %w", line, err)
		}
		name := a.kinds[k].name
		sum[name] += ms * float64(count)
		txs[name] += count
	}
	if len(txs) == 0 {
		return nil, nil, fmt.Errorf("pgbench -r: no statement latency of the application's in its output:\n%s", out)
	}
	app := map[string]float64{}
	for name, n := range txs {
		if n > 0 {
			app[name] = sum[name] / float64(n)
		}
	}
	return app, txs, nil
}

// connectionTime reads pgbench -C's average connection time (ms).
func connectionTime(out []byte) (float64, error) {
	m := connectLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench -C: no average connection time in its output:\n%s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}
