package pgclustertest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
)

// StartT starts a cluster for a test or benchmark and stops it in
// t.Cleanup. It fails t, with a message saying how to install them, when
// the PostgreSQL binaries are missing: a test that needs a server must not
// pass silently without one.
func StartT(t testing.TB, opts pgcluster.Options) *pgcluster.Cluster {
	t.Helper()
	// Not t.Context(): that is canceled before cleanups run, and
	// starting may take a while on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := pgcluster.Start(ctx, opts)
	if err != nil {
		t.Fatalf("pgcluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("pgcluster: stop: %v", err)
		}
	})
	return c
}

// StartLogged starts a cluster for t that logs as settings say (for a
// capture, workload.LogSettings()), with database db made and schema run
// in it without being logged.
func StartLogged(t testing.TB, settings map[string]string, db, schema string) *pgcluster.Cluster {
	t.Helper()
	c := StartT(t, pgcluster.Options{Settings: settings})
	ctx := context.Background()
	for _, step := range [][2]string{{"postgres", "CREATE DATABASE " + db}, {db, schema}} {
		conn := PgConn(ctx, t, c.DSN(step[0])+" options='-c log_min_duration_statement=-1'")
		_, err := conn.Exec(ctx, step[1]).ReadAll()
		conn.Close(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// StoppedLog stops c's server and returns its one log file.
func StoppedLog(t testing.TB, c *pgcluster.Cluster) string {
	t.Helper()
	return StoppedLogOf(t, c, "*.log")
}

// StoppedLogOf stops c's server and returns its one log file whose name
// matches pattern (as pgcluster.Cluster.LogFiles takes it: "*.csv",
// "*.json").
func StoppedLogOf(t testing.TB, c *pgcluster.Cluster, pattern string) string {
	t.Helper()
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	return LogFile(t, c, pattern)
}

// LogFile returns c's one log file whose name matches pattern (as
// pgcluster.Cluster.LogFiles takes it), failing t unless there is
// exactly one.
func LogFile(t testing.TB, c *pgcluster.Cluster, pattern string) string {
	t.Helper()
	files, err := c.LogFiles(pattern)
	if err != nil || len(files) != 1 {
		t.Fatalf("log files %v: %v", files, err)
	}
	return files[0]
}

// StartVersion starts a cluster of PostgreSQL major version major from the
// version cache (pgcluster.Options.Version) with settings. A version
// missing from the cache fails t with the command that installs it, never
// a skip: a test naming a version must have run on it.
func StartVersion(t testing.TB, major int, settings map[string]string) *pgcluster.Cluster {
	t.Helper()
	return StartT(t, pgcluster.Options{Version: major, Settings: settings})
}

// LongVersions reports whether the long per-version suite is to run:
// `make test-versions` sets PGREHEARSE_VERSIONS=all. Without it the
// per-version tests run their smoke cases only, one per capability, on
// every major of pgcluster.Majors all the same.
func LongVersions() bool { return os.Getenv("PGREHEARSE_VERSIONS") == "all" }

// Connect opens a connection to dsn (a cluster's DSN, for a database) for
// t, failing t when it cannot; the caller closes it.
func Connect(ctx context.Context, t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	return connect(ctx, t, dsn, pgx.Connect)
}

// PgConn opens a low-level connection (pgconn) to dsn for t, failing t
// when it cannot; the caller closes it.
func PgConn(ctx context.Context, t testing.TB, dsn string) *pgconn.PgConn {
	t.Helper()
	return connect(ctx, t, dsn, pgconn.Connect)
}

// connect opens a connection to dsn by open, failing t when it cannot.
func connect[C any](ctx context.Context, t testing.TB, dsn string, open func(context.Context, string) (C, error)) C {
	t.Helper()
	conn, err := open(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return conn
}

// Exec runs each of sqls, in order, on database db of c for t, failing
// t at the first error.
func Exec(t testing.TB, c *pgcluster.Cluster, db string, sqls ...string) {
	t.Helper()
	for _, sql := range sqls {
		if err := c.Exec(context.Background(), db, sql); err != nil {
			t.Fatal(err)
		}
	}
}
