package workload

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// What Run creates and uses, so that tests know what to look for in the
// log.
const (
	// AppRole is the second role, besides the cluster's superuser.
	AppRole = "app"
	// AppDatabase is the application's database, owned by AppRole.
	AppDatabase = "app"
	// PgbenchDatabase holds pgbench's tables.
	PgbenchDatabase = "postgres"
	// AppName is the application_name of the application's sessions;
	// pgbench's sessions are named "pgbench". It stands for production
	// traffic, so it must not begin with event.OwnApplicationPrefix:
	// analyses leave pgrehearse's own sessions out.
	AppName = "workload-app"
)

// Modes are pgbench's query protocols, in the order Run uses them.
var Modes = []string{"simple", "extended", "prepared"}

// Options configure Run. The zero value is a short run fit for tests.
type Options struct {
	// Duration is the pgbench time, shared evenly by the three query
	// protocols in whole seconds, at least one second each. Zero means
	// 3 s. Setup and the application add a few seconds.
	Duration time.Duration

	// Clients is the number of concurrent pgbench clients; zero means 2.
	Clients int

	// Scale is pgbench's scale factor; zero means 1 (100,000 accounts).
	Scale int

	// Progress receives a line as each step starts; nil discards them.
	Progress io.Writer
}

// Summary says what Run did.
type Summary struct {
	Pgbench []PgbenchRun
	App     AppSummary
}

// PgbenchRun is one timed pgbench run.
type PgbenchRun struct {
	Mode         string // -M: simple, extended or prepared
	Clients      int
	Duration     time.Duration
	Transactions int64 // as pgbench reported them
}

// AppSummary counts what the application part sent. It is the same on
// every run.
type AppSummary struct {
	// Sessions is the number of connections the application opened.
	Sessions int
	// FailedConnections is the number of connection attempts the server
	// refused (a database that does not exist).
	FailedConnections int
	// Queries is the number of query strings sent with the simple query
	// protocol; one may hold several statements.
	Queries int
	// Prepares is the number of named statements prepared with the
	// extended protocol.
	Prepares int
	// Executions is the number of executions with the extended protocol,
	// of named and unnamed statements.
	Executions int
	// Failed is the number of queries, executions and connection
	// attempts that failed, as they were meant to.
	Failed int
	// SQLStates are the error codes of the failures, in order.
	SQLStates []string
	// Roles and Databases are those the sessions used.
	Roles     []string
	Databases []string
}

// Run runs the workload on c, which must be fresh: it creates AppRole and
// AppDatabase and pgbench's tables. It stops at the first unexpected
// answer from the server.
func Run(ctx context.Context, c *pgcluster.Cluster, opts Options) (Summary, error) {
	opts = withDefaults(opts)
	var sum Summary
	say := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, format+"\n", args...)
		}
	}

	say("workload: creating role %s and database %s", AppRole, AppDatabase)
	if err := c.Exec(ctx, "postgres", "CREATE ROLE "+AppRole+" LOGIN"); err != nil {
		return sum, fmt.Errorf("create role: %w", err)
	}
	if err := c.Exec(ctx, "postgres", "CREATE DATABASE "+AppDatabase+" OWNER "+AppRole); err != nil {
		return sum, fmt.Errorf("create database: %w", err)
	}

	say("workload: pgbench -i -s %d", opts.Scale)
	if _, err := c.Pgbench(ctx, "-i", "-q", "-s", strconv.Itoa(opts.Scale), PgbenchDatabase); err != nil {
		return sum, err
	}

	say("workload: application sessions (odd parameters, prepared statements, transactions, errors)")
	app, err := runApp(ctx, c)
	sum.App = app
	if err != nil {
		return sum, fmt.Errorf("application: %w", err)
	}

	per := max(time.Second, (opts.Duration / time.Duration(len(Modes))).Truncate(time.Second))
	for _, mode := range Modes {
		say("workload: pgbench -M %s, %d clients, %v", mode, opts.Clients, per)
		run, err := pgbench(ctx, c, mode, opts.Clients, per)
		if err != nil {
			return sum, err
		}
		sum.Pgbench = append(sum.Pgbench, run)
	}
	return sum, nil
}

func withDefaults(opts Options) Options {
	if opts.Duration <= 0 {
		opts.Duration = 3 * time.Second
	}
	if opts.Clients <= 0 {
		opts.Clients = 2
	}
	if opts.Scale <= 0 {
		opts.Scale = 1
	}
	return opts
}

// processed matches pgbench's count of transactions, such as
// "number of transactions actually processed: 5117".
var processed = regexp.MustCompile(`number of transactions actually processed: (\d+)`)

func pgbench(ctx context.Context, c *pgcluster.Cluster, mode string, clients int, d time.Duration) (PgbenchRun, error) {
	run := PgbenchRun{Mode: mode, Clients: clients, Duration: d}
	// -n: the tables were just vacuumed by -i. A fixed seed makes the
	// accounts each run touches the same.
	out, err := c.Pgbench(ctx, "-n", "-M", mode, "-c", strconv.Itoa(clients), "-j", strconv.Itoa(clients),
		"-T", strconv.Itoa(int(d/time.Second)), "--random-seed=1", PgbenchDatabase)
	if err != nil {
		return run, err
	}
	m := processed.FindSubmatch(out)
	if m == nil {
		return run, fmt.Errorf("pgbench -M %s: no transaction count in its output:\n%s", mode, out)
	}
	run.Transactions, _ = strconv.ParseInt(string(m[1]), 10, 64)
	return run, nil
}

// LogLinePrefix is the log_line_prefix of LogSettings: time with
// milliseconds, process id, user, database, application, session id, and
// the SQLSTATE (%e), without which a stderr log does not say which error
// occurred other than by its message.
const LogLinePrefix = "%m [%p] %q%u@%d/%a %c %e "

// LogSettings returns server settings that log everything the workload
// does, in the three log formats at once, in English: every statement with
// its duration and parameters, and every connection and disconnection. The
// demo and the log reader's acceptance tests share them so that they read
// the same kind of log.
func LogSettings() map[string]string {
	return map[string]string{
		"logging_collector":          "on",
		"log_destination":            "stderr,csvlog,jsonlog",
		"log_min_duration_statement": "0",
		"log_connections":            "on",
		"log_disconnections":         "on",
		"log_line_prefix":            LogLinePrefix,
		"lc_messages":                "C",
		// One file per format, whatever the volume, so that the demo
		// has a single file to analyze.
		"log_rotation_size":        "0",
		"shared_preload_libraries": "pg_stat_statements",
	}
}
