package pgcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func query(t *testing.T, c *Cluster, db, sql string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.DSN(db))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	var s string
	if err := conn.QueryRow(ctx, sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func TestStartAppliesSettingsAndStopRemovesDir(t *testing.T) {
	t.Parallel()
	c := StartT(t, Options{Settings: map[string]string{
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
	c := StartT(t, Options{Settings: map[string]string{
		"shared_preload_libraries": "pg_stat_statements",
	}})
	ctx := context.Background()
	if err := c.Exec(ctx, "postgres", "CREATE EXTENSION pg_stat_statements"); err != nil {
		t.Fatalf("create extension: %v", err)
	}
	if err := c.Exec(ctx, "postgres", "SELECT 'pgcluster-marker'"); err != nil {
		t.Fatal(err)
	}
	n := query(t, c, "postgres", "SELECT count(*)::text FROM pg_stat_statements WHERE query LIKE '%pgcluster-marker%' OR query = 'SELECT $1'")
	if n == "0" {
		t.Errorf("pg_stat_statements did not record the marker statement")
	}
}

func TestLogsInThreeFormats(t *testing.T) {
	t.Parallel()
	c := StartT(t, Options{Settings: map[string]string{
		"logging_collector":          "on",
		"log_destination":            "stderr,csvlog,jsonlog",
		"log_min_duration_statement": "0",
		"log_line_prefix":            "%m [%p] %q%u@%d/%a %c ",
	}})
	ctx := context.Background()
	if err := c.Exec(ctx, "postgres", "SELECT 'pgcluster-log-marker'"); err != nil {
		t.Fatal(err)
	}
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
	c := StartT(t, Options{Keep: true})
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
	c := StartT(t, Options{})
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

func TestSettingsValidation(t *testing.T) {
	for _, s := range []map[string]string{
		{"port": "5432"},
		{"log_directory": "/tmp"},
		{"unix_socket_directories": "/tmp"},
		{"bad name": "x"},
		{"work_mem": "1MB\nfsync = on"},
	} {
		if c, err := Start(context.Background(), Options{Settings: s}); err == nil {
			c.Stop()
			t.Errorf("Start with %v: want an error", s)
		}
	}
}

func TestMissingBinaries(t *testing.T) {
	_, err := Start(context.Background(), Options{BinDir: "/nonexistent/bin"})
	if !errors.Is(err, ErrNoBinaries) {
		t.Fatalf("Start with a bad BinDir: %v, want ErrNoBinaries", err)
	}
	for _, want := range []string{"/nonexistent/bin", InstallHint, "PG_BIN"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	t.Setenv("PG_BIN", "/nonexistent/pgbin")
	if _, err := findBinDir(""); !errors.Is(err, ErrNoBinaries) {
		t.Errorf("PG_BIN set to a bad directory: %v, want ErrNoBinaries rather than a guess", err)
	}
}

func TestVersionOrder(t *testing.T) {
	if !(versionOf("/usr/lib/postgresql/9.6/bin") < versionOf("/usr/lib/postgresql/10/bin") &&
		versionOf("/usr/lib/postgresql/10/bin") < versionOf("/usr/lib/postgresql/15/bin")) {
		t.Errorf("versionOf does not order 9.6 < 10 < 15")
	}
}

// TestWatchdogStopsOrphanedCluster kills a process that started a cluster
// without stopping it, and checks that the cluster goes away anyway.
func TestWatchdogStopsOrphanedCluster(t *testing.T) {
	t.Parallel()
	if os.Getenv("PGCLUSTER_CHILD") == "1" {
		t.Skip("runs only as the parent")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperOrphan$", "-test.v")
	cmd.Env = append(os.Environ(), "PGCLUSTER_CHILD=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	var port int
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if _, err := fmt.Sscanf(sc.Text(), "cluster %s %d", &dir, &port); err == nil {
			break
		}
	}
	if dir == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not report its cluster")
	}
	// SIGKILL: no deferred function, no cleanup runs in the child.
	cmd.Process.Kill()
	cmd.Wait()

	// The watchdog gives no signal to this process when it is done, so
	// poll for its effect, with a deadline.
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster directory %s still there 60s after its owner died", dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
		conn.Close()
		t.Errorf("orphaned cluster still accepts connections on port %d", port)
	}
}

// TestHelperOrphan is the child of TestWatchdogStopsOrphanedCluster: it
// starts a cluster, reports it and waits to be killed.
func TestHelperOrphan(t *testing.T) {
	if os.Getenv("PGCLUSTER_CHILD") != "1" {
		t.Skip("runs only as a child of TestWatchdogStopsOrphanedCluster")
	}
	c, err := Start(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("cluster %s %d\n", c.Dir(), c.Port())
	// Not synchronization: the parent kills this process long before.
	time.Sleep(5 * time.Minute)
}

// TestStartFailureCleansUp checks that a server that refuses to start
// leaves nothing behind and says why.
func TestStartFailureCleansUp(t *testing.T) {
	// A private TMPDIR shows whether the cluster directory was removed.
	// Not t.TempDir: its parent is not enterable by the postgres user.
	tmp, err := os.MkdirTemp("", "pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)

	_, err = Start(context.Background(), Options{Settings: map[string]string{"work_mem": "lots"}})
	if err == nil {
		t.Fatal("Start with work_mem = 'lots': want an error")
	}
	if !strings.Contains(err.Error(), `invalid value for parameter "work_mem"`) {
		t.Errorf("error does not quote the server's complaint: %v", err)
	}
	left, _ := os.ReadDir(tmp)
	if len(left) != 0 {
		t.Errorf("failed Start left %v in TMPDIR", left)
	}
}
