package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// busyLog writes a stderr log of span: sessions that each, every step,
// run either an autocommit INSERT or a transaction block of an UPDATE and
// an INSERT, logged with their durations.
func busyLog(t *testing.T, dir string, sessions int, span, step time.Duration) string {
	t.Helper()
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	for s := range sessions {
		pid := 3000 + s
		line := func(at time.Duration, msg string) {
			fmt.Fprintf(&b, "%s [%d] app@shop/load %x.%x %s\n", start.Add(at).Format("2006-01-02 15:04:05.000 MST"), pid, start.Unix(), pid, msg)
		}
		stmt := func(at time.Duration, sql string) {
			line(at+100*time.Microsecond, "LOG:  duration: 0.100 ms  statement: "+sql)
		}
		line(0, "LOG:  connection authorized: user=app database=shop application_name=load")
		for i, at := 0, time.Duration(s)*step/time.Duration(sessions); at < span; i, at = i+1, at+step {
			if i%2 == 0 {
				stmt(at, fmt.Sprintf("INSERT INTO t VALUES (%d, %d)", s, i))
				continue
			}
			stmt(at, "BEGIN")
			stmt(at+step/8, fmt.Sprintf("UPDATE c SET n = n + 1 WHERE id = %d", s))
			stmt(at+step/4, fmt.Sprintf("INSERT INTO t VALUES (%d, %d)", s, i))
			stmt(at+3*step/8, "COMMIT")
		}
		line(span+time.Second, "LOG:  disconnection: session time: 0:00:31.000 user=app database=shop host=[local]")
	}
	// The lines of all sessions, in time order, as the server writes them.
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	sortLines(lines)
	return writeFile(t, filepath.Join(dir, "busy.log"), []byte(strings.Join(lines, "\n")+"\n"))
}

// waitRows polls the replay's progress on c: until table t of database
// shop holds n rows.
func waitRows(ctx context.Context, c *pgcluster.Cluster, n int) error {
	conn, err := pgconn.Connect(ctx, c.DSN("shop"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
	for {
		res, err := conn.Exec(ctx, "SELECT count(*) FROM t").ReadAll()
		if err != nil {
			return err
		}
		if got, _ := strconv.Atoi(string(res[0].Rows[0][0])); got >= n {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline:
			return fmt.Errorf("table t did not reach %d rows within 2 minutes", n)
		}
	}
}

// sortLines orders log lines by their time, which leads each line.
func sortLines(lines []string) {
	// Stable: lines of one session at one time keep their order.
	slices.SortStableFunc(lines, func(a, b string) int { return strings.Compare(a[:23], b[:23]) })
}

// TestReplaySurvivesFaults: the target restarted, or its postmaster
// killed with SIGKILL and started again 5 s later, in the middle of a
// 30 s replay: the sessions reconnect and go on, less than 10% of the
// statements are lost, every lost one is counted under its cause, the
// run exits 5 with its result marked incomplete, and report refuses to
// judge it.
func TestReplaySurvivesFaults(t *testing.T) {
	slowCase(t, 34*time.Second)
	ctx := context.Background()
	dir := t.TempDir()
	log := busyLog(t, dir, 20, 30*time.Second, 200*time.Millisecond)
	base := filepath.Join(dir, "base.json")
	if code, _, stderr := runCLI(ctx, "", "analyze", "--prefix", testPrefix, "--json", base, log); code != ExitOK {
		t.Fatalf("analyze: exit %d\n%s", code, stderr)
	}
	for _, fault := range []string{"restart", "kill"} {
		t.Run(fault, func(t *testing.T) {
			// The two faults' 30 s replays run at once, on servers of
			// their own.
			parallelCase(t)
			c := pgclustertest.StartT(t, pgcluster.Options{})
			mustExec(t, c, "postgres", "CREATE ROLE app LOGIN", "CREATE DATABASE shop OWNER app")
			mustExec(t, c, "shop", "CREATE TABLE t (s int, n int); CREATE TABLE c (id int PRIMARY KEY, n int); "+
				"INSERT INTO c SELECT g, 0 FROM generate_series(0, 19) g; GRANT ALL ON t, c TO app")
			faulted := make(chan error, 1)
			go func() {
				// A third of the way through the replay: a third of
				// its rows are in.
				if err := waitRows(ctx, c, 1000); err != nil {
					faulted <- err
					return
				}
				if fault == "restart" {
					faulted <- c.Restart(ctx, "fast")
					return
				}
				if err := c.Kill(); err != nil {
					faulted <- err
					return
				}
				// The outage: the server stays down 5 s, the fault's
				// length, not a synchronization.
				<-time.After(5 * time.Second)
				faulted <- c.StartServer(ctx)
			}()
			out := filepath.Join(dir, fault+".json")
			code, stdout, stderr := runCLI(ctx, "", "replay", "--target", c.DSN("postgres"), "--prefix", testPrefix,
				"--observe=false", "--json", out, log)
			if err := <-faulted; err != nil {
				t.Fatalf("%s: %v", fault, err)
			}
			t.Logf("replay:\n%s%s", stdout, stderr)
			if code != ExitIncomplete || !strings.Contains(stderr, "REPLAY INCOMPLETE") {
				t.Errorf("exit %d, want %d saying the replay is incomplete", code, ExitIncomplete)
			}
			res, err := results.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Statements
			if res.Sessions.Reconnects == 0 {
				t.Errorf("no reconnection: sessions %+v", res.Sessions)
			}
			if res.Lost == 0 || float64(res.Lost) >= 0.1*float64(s.Total) {
				t.Errorf("%d of %d statements lost, want some and under 10%% (skipped %v)", res.Lost, s.Total, s.Skipped)
			}
			var lost int64
			for _, reason := range []results.SkipReason{replay.SkipConnectionLost, replay.SkipBrokenTransaction, replay.SkipDependencyLost} {
				lost += s.Skipped[reason]
			}
			if lost != res.Lost || s.Skipped[replay.SkipConnectionLost] == 0 {
				t.Errorf("lost %d, but skipped for a lost connection %v", res.Lost, s.Skipped)
			}
			if err := s.Check(); err != nil {
				t.Error(err)
			}
			if len(res.Incomplete) == 0 || res.Complete() {
				t.Errorf("result not marked incomplete: %q", res.Incomplete)
			}
			// Lost statements are not errors of the target.
			if res.Outcomes.FailedOnlyOnTarget != 0 {
				t.Errorf("%d statements failed only on the target: %v", res.Outcomes.FailedOnlyOnTarget, res.ErrorsBySQLState)
			}
			code, stdout, stderr = runCLI(ctx, "", "report", base, out)
			if code != ExitIncomplete || !strings.Contains(stderr, "REPORT REFUSED") || strings.Contains(stdout, "PASS") {
				t.Errorf("report: exit %d\n%s%s", code, stdout, stderr)
			}
		})
	}
}

// TestReplayTargetGone: a target that does not come back within
// --connect-timeout stops the replay early, its result written and marked
// incomplete, the rest counted as "target unavailable".
func TestReplayTargetGone(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	dir := t.TempDir()
	log := busyLog(t, dir, 5, 20*time.Second, 200*time.Millisecond)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	mustExec(t, c, "postgres", "CREATE ROLE app LOGIN", "CREATE DATABASE shop OWNER app")
	mustExec(t, c, "shop", "CREATE TABLE t (s int, n int); CREATE TABLE c (id int PRIMARY KEY, n int); GRANT ALL ON t, c TO app")
	go func() {
		// Some way into the replay: 75 of its 500 rows are in.
		if waitRows(ctx, c, 75) == nil {
			c.StopServer()
		}
	}()
	out := filepath.Join(dir, "gone.json")
	start := time.Now()
	code, stdout, stderr := runCLI(ctx, "", "replay", "--target", c.DSN("postgres"), "--prefix", testPrefix,
		"--observe=false", "--connect-timeout", "2s", "--json", out, log)
	took := time.Since(start)
	if code != ExitIncomplete || !strings.Contains(stderr, "the target was unreachable for more than 2s") {
		t.Errorf("exit %d:\n%s%s", code, stdout, stderr)
	}
	if took > 15*time.Second {
		t.Errorf("took %v: the replay went on for the whole log without its target", took)
	}
	res, err := results.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Statements.Skipped[replay.SkipTargetGone] == 0 || !res.Partial || len(res.Incomplete) == 0 {
		t.Errorf("skipped %v, partial %v, incomplete %q", res.Statements.Skipped, res.Partial, res.Incomplete)
	}
	if err := res.Statements.Check(); err != nil {
		t.Error(err)
	}
}
