package pgcluster_test

// The tests of a running cluster start it through pgclustertest, which
// imports pgcluster: they live in the external test package so that the
// import is not a cycle.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

func query(t *testing.T, c *pgcluster.Cluster, db, sql string) string {
	t.Helper()
	ctx := context.Background()
	conn := pgclustertest.Connect(ctx, t, c.DSN(db))
	defer conn.Close(ctx)
	var s string
	if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func TestStartAppliesSettingsAndStopRemovesDir(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{
		"cluster_name":               "it's a test", // needs quoting
		"log_min_duration_statement": "0",
		"work_mem":                   "7MB",
	}})

	for _, tc := range []struct{ sql, want string }{
		{"SHOW lc_messages", "C"},
		{"SHOW fsync", "off"},
		{"SHOW port", strconv.Itoa(c.Port())},
		{"SELECT current_user", c.User()},
		{"SHOW log_min_duration_statement", "0"},
		{"SHOW work_mem", "7MB"},
		{"SHOW server_encoding", "UTF8"},
		{"SHOW cluster_name", "it's a test"},
		{"SHOW log_directory", c.LogDir()},
	} {
		if got := query(t, c, "postgres", tc.sql); got != tc.want {
			t.Errorf("%s = %q, want %q", tc.sql, got, tc.want)
		}
	}

	// The TCP listener is on the advertised port too.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=postgres sslmode=disable", c.Port(), c.User()))
	if err != nil {
		t.Fatalf("connect over TCP: %v", err)
	}
	conn.Close(ctx)

	if err := c.Exec(ctx, "postgres", "CREATE DATABASE app; "); err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if err := c.Exec(ctx, "app", "CREATE TABLE t (a int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatalf("Exec with two statements: %v", err)
	}
	if got := query(t, c, "app", "SELECT count(*)::text FROM t"); got != "1" {
		t.Errorf("rows in t = %s, want 1", got)
	}

	dir := c.Dir()
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cluster directory after Stop: %v, want it removed", err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v, want nil", err)
	}
	if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", c.Port())); err == nil {
		conn.Close()
		t.Errorf("port %d still accepts connections after Stop", c.Port())
	}
}

func TestPgStatStatementsPreloaded(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements",
	}})
	ctx := context.Background()
	if err := c.Exec(ctx, "postgres", "CREATE EXTENSION pg_stat_statements"); err != nil {
		t.Fatalf("create extension: %v", err)
	}
	pgclustertest.Exec(t, c, "postgres", "SELECT 'pgcluster-marker'")
	n := query(t, c, "postgres", "SELECT count(*)::text FROM pg_stat_statements WHERE query LIKE '%pgcluster-marker%' OR query = 'SELECT $1'")
	if n == "0" {
		t.Errorf("pg_stat_statements did not record the marker statement")
	}
}

func TestLogsInThreeFormats(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{
		"logging_collector":          "on",
		"log_destination":            "stderr,csvlog,jsonlog",
		"log_min_duration_statement": "0",
		"log_line_prefix":            "%m [%p] %q%u@%d/%a %c ",
	}})
	pgclustertest.Exec(t, c, "postgres", "SELECT 'pgcluster-log-marker'")
	// StopServer must wait for the logging collector, so the statement
	// is in every file as soon as it returns.
	if err := c.StopServer(); err != nil {
		t.Fatalf("StopServer: %v", err)
	}
	if _, err := os.Stat(c.DataDir()); err != nil {
		t.Fatalf("StopServer removed the data directory: %v", err)
	}
	for _, pattern := range []string{"*.log", "*.csv", "*.json"} {
		files, err := c.LogFiles(pattern)
		if err != nil || len(files) == 0 {
			t.Errorf("LogFiles(%q) = %v, %v: want at least one file", pattern, files, err)
			continue
		}
		var all []byte
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		if !strings.Contains(string(all), "pgcluster-log-marker") {
			t.Errorf("%s logs lack the statement:\n%s", pattern, all)
		}
		// Shutdown is logged by the postmaster just before it exits:
		// its presence shows the collector was waited for.
		if !strings.Contains(string(all), "database system is shut down") {
			t.Errorf("%s logs lack the shutdown message: the collector was not waited for", pattern)
		}
	}
}

func TestKeepLeavesDirectory(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{Keep: true})
	t.Cleanup(func() { os.RemoveAll(c.Dir()) })
	if err := c.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.DataDir(), "PG_VERSION")); err != nil {
		t.Errorf("Keep: data directory gone after Stop: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.DataDir(), "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Keep: server still running after Stop (postmaster.pid: %v)", err)
	}
}

func TestPgbench(t *testing.T) {
	t.Parallel()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	if out, err := c.Pgbench(ctx, "-i", "-s", "1", "-q", "postgres"); err != nil {
		t.Fatalf("pgbench -i: %v", err)
	} else if !strings.Contains(string(out), "done") {
		t.Errorf("pgbench -i output lacks \"done\":\n%s", out)
	}
	if got := query(t, c, "postgres", "SELECT count(*)::text FROM pgbench_accounts"); got != "100000" {
		t.Errorf("pgbench_accounts has %s rows, want 100000", got)
	}
	if _, err := c.Pgbench(ctx, "--no-such-flag"); err == nil {
		t.Errorf("pgbench with a bad flag: want an error")
	}
}

// TestFreezeThaw: a frozen server leaves an open connection and a new
// one without an answer, as a hung host does; thawed, both work again.
func TestFreezeThaw(t *testing.T) {
	c := pgclustertest.StartT(t, pgcluster.Options{})
	ctx := context.Background()
	conn := pgclustertest.Connect(ctx, t, c.DSN("postgres"))
	defer conn.Close(ctx)
	if err := c.Freeze(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Thaw() }) // before the cluster is stopped
	short, cancel := context.WithTimeout(ctx, time.Second)
	var one int
	err := conn.QueryRow(short, "SELECT 1").Scan(&one)
	cancel()
	if err == nil {
		t.Error("a frozen server's backend answered")
	}
	short, cancel = context.WithTimeout(ctx, time.Second)
	if c2, err := pgx.Connect(short, c.DSN("postgres")); err == nil {
		c2.Close(ctx)
		t.Error("a frozen server accepted a new connection")
	}
	cancel()
	if err := c.Thaw(); err != nil {
		t.Fatal(err)
	}
	if got := query(t, c, "postgres", "SELECT 'thawed'"); got != "thawed" {
		t.Errorf("after Thaw: %q", got)
	}
}
