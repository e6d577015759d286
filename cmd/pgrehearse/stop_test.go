package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// sleepLog is a log of two sessions: one runs pg_sleep(60) half a second
// in, the other opens a transaction, updates a row and commits only a
// minute later.
func sleepLog(t *testing.T) string {
	t.Helper()
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var b strings.Builder
	line := func(at time.Duration, pid int, msg string) {
		fmt.Fprintf(&b, "%s [%d] app@shop/load %x.%x %s\n", start.Add(at).Format("2006-01-02 15:04:05.000 MST"), pid, start.Unix(), pid, msg)
	}
	line(0, 5001, "LOG:  connection authorized: user=app database=shop application_name=load")
	line(0, 5002, "LOG:  connection authorized: user=app database=shop application_name=load")
	line(200*time.Millisecond, 5002, "LOG:  duration: 0.100 ms  statement: BEGIN")
	line(300*time.Millisecond, 5002, "LOG:  duration: 0.100 ms  statement: UPDATE c SET n = n + 1 WHERE id = 1")
	line(60500*time.Millisecond, 5001, "LOG:  duration: 60000.000 ms  statement: SELECT pg_sleep(60)")
	line(61*time.Second, 5002, "LOG:  duration: 0.100 ms  statement: COMMIT")
	line(62*time.Second, 5001, "LOG:  disconnection: session time: 0:01:02.000 user=app database=shop host=[local]")
	line(62*time.Second, 5002, "LOG:  disconnection: session time: 0:01:02.000 user=app database=shop host=[local]")
	p := filepath.Join(t.TempDir(), "sleep.log")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// replayed counts the replayed sessions' backends on c that are running
// a statement or hold a transaction open.
func replayed(t *testing.T, c *pgcluster.Cluster) (active, inTx int) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgconn.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	res := conn.ExecParams(ctx, "SELECT count(*) FILTER (WHERE state = 'active'), count(*) FILTER (WHERE state LIKE 'idle in transaction%') "+
		"FROM pg_stat_activity WHERE application_name = 'load'", nil, nil, nil, nil).Read()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	active, _ = strconv.Atoi(string(res.Rows[0][0]))
	inTx, _ = strconv.Atoi(string(res.Rows[0][1]))
	return active, inTx
}

// helpExitCode reads, from replay --help, the exit code it says an
// interrupted replay has.
func helpExitCode(t *testing.T, bin string) int {
	t.Helper()
	out, err := exec.Command(bin, "replay", "--help").Output()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`marked partial,\s+and the exit code is (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("replay --help does not say the exit code of an interrupted run:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// TestStopOnTheServer is issue 19's acceptance test of a stop: Ctrl-C
// during a replayed pg_sleep(60) with --grace 1s leaves, within 2 s after
// the grace, no replayed statement running and no transaction open on the
// target; a SIGTERM does so at once, without the grace; the interrupted
// statement is counted as interrupted, not as a lost connection; the exit
// code is the one the help gives, and the result is written.
func TestStopOnTheServer(t *testing.T) {
	bin := buildBinary(t)
	want := helpExitCode(t, bin)
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{})
	for _, sql := range []string{"CREATE ROLE app LOGIN", "CREATE DATABASE shop OWNER app"} {
		if err := c.Exec(ctx, "postgres", sql); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Exec(ctx, "shop", "CREATE TABLE c (id int PRIMARY KEY, n int); INSERT INTO c VALUES (1, 0); GRANT ALL ON c TO app"); err != nil {
		t.Fatal(err)
	}
	log := sleepLog(t)
	for _, tc := range []struct {
		name   string
		signal []os.Signal
		grace  time.Duration // from the first signal to the cancellation
	}{
		{"SIGINT", []os.Signal{os.Interrupt}, time.Second},
		{"SIGTERM", []os.Signal{syscall.SIGTERM}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "stopped.json")
			cmd := exec.Command(bin, "replay", "--target", c.DSN("postgres"), "--prefix", "%m [%p] %q%u@%d/%a %c ",
				"--observe=false", "--grace", "1s", "--json", out, log)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until the sleep runs and the other session holds its
			// transaction open, then stop.
			for deadline := time.Now().Add(30 * time.Second); ; {
				if a, x := replayed(t, c); a == 1 && x == 1 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("the replay never ran pg_sleep with the other session in its transaction\n%s", stderr.String())
				}
				time.Sleep(50 * time.Millisecond) // polling
			}
			stopped := time.Now()
			for _, sig := range tc.signal {
				if err := cmd.Process.Signal(sig); err != nil {
					t.Fatal(err)
				}
			}
			// Within 2 s after the grace, nothing replayed runs or holds a
			// transaction on the target.
			var a, x int
			for limit := stopped.Add(tc.grace + 2*time.Second); ; {
				if a, x = replayed(t, c); a == 0 && x == 0 {
					break
				}
				if time.Now().After(limit) {
					t.Errorf("%v after the stop: %d replayed statements active, %d transactions open", time.Since(stopped), a, x)
					break
				}
				time.Sleep(20 * time.Millisecond) // polling
			}
			t.Logf("nothing replayed on the target %v after the stop", time.Since(stopped).Round(time.Millisecond))
			err := cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != want {
				t.Errorf("exit %v, want %d as the help says\n%s", err, want, stderr.String())
			}
			res, err := results.ReadFile(out)
			if err != nil {
				t.Fatalf("no result: %v\n%s", err, stderr.String())
			}
			s := res.Statements
			if !res.Partial || s.Skipped["interrupted"] == 0 || s.Skipped["connection lost"] != 0 || s.Failed != 0 {
				t.Errorf("partial %v, statements %+v: the cancelled sleep must count as interrupted", res.Partial, s)
			}
			if err := s.Check(); err != nil {
				t.Error(err)
			}
		})
	}
}
