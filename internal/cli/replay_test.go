package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// runReplay runs "pgrehearse replay" with args and returns its exit code,
// output and JSON result (nil if none was written). The result's counts
// must add up: its statements, its outcomes with them
// (results.Outcomes.Check), and with --keep-answers every differing
// answer kept or counted as dropped.
func runReplay(t *testing.T, args ...string) (int, string, *results.Result) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "replay.json")
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	code := Run(ctx, IO{Stdout: &stdout, Stderr: &stderr}, append([]string{"replay", "--json", out}, args...))
	text := stdout.String() + stderr.String()
	b, err := os.ReadFile(out)
	if err != nil {
		return code, text, nil
	}
	res, err := results.Decode(b, out)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Statements
	if s.Total != s.Executed+s.Failed+s.SkippedTotal() {
		t.Errorf("statements: total %d != executed %d + failed %d + skipped %d", s.Total, s.Executed, s.Failed, s.SkippedTotal())
	}
	if err := res.Outcomes.Check(s); err != nil {
		t.Errorf("%v: %+v", err, res.Outcomes)
	}
	if kept := int64(len(res.DifferingAnswers)) + res.DifferingAnswersDropped; slices.Contains(args, "--keep-answers") && kept != res.Outcomes.AnswerDiffers {
		t.Errorf("%d differing answers kept or dropped, of %d that differ", kept, res.Outcomes.AnswerDiffers)
	}
	return code, text, res
}

// TestReplayMatchesPgStatStatements is the replay's acceptance test. The
// mixed workload (pgbench in three protocols, an application with
// multi-line statements, odd parameters, transactions, errors and
// connection churn) runs on cluster A with full logging; cluster B starts
// in A's pre-workload state (a fresh cluster: the workload creates its
// roles, databases and tables itself, and that is in the log); A's log is
// replayed against B at --speed 0; B's pg_stat_statements calls per query
// must equal A's, except for the cases named below.
func TestReplayMatchesPgStatStatements(t *testing.T) {
	parallelCase(t)
	ctx := context.Background()
	a := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	b := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	mustExec(t, a, "postgres", "CREATE EXTENSION pg_stat_statements", "SELECT pg_stat_statements_reset()")
	if _, err := workload.Run(ctx, a, workload.Options{Duration: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	original := pgssCalls(ctx, t, a)
	log := pgclustertest.StoppedLog(t, a)

	start := time.Now()
	// The findings read the target's catalog and explain after the
	// replay, which pg_stat_statements would count: not the replay's.
	code, out, res := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--findings=false", log)
	t.Logf("replay took %v:\n%s", time.Since(start), out)
	if code != ExitOK || res == nil {
		t.Fatalf("replay exited %d:\n%s", code, out)
	}
	replayed := pgssCalls(ctx, t, b)

	// Not compared: the statements around the count (the extension, its
	// reset and the query that reads it), which the replay re-runs on B.
	excluded := fingerprintSet("CREATE EXTENSION pg_stat_statements", "SELECT pg_stat_statements_reset()", pgssQuery)
	// Legitimately different: pgbench -i loads pgbench_accounts with COPY
	// FROM STDIN, whose data is not in the log: skipped, counted as
	// skipped, and so missing from B (which is why pgbench_accounts is
	// empty on B; the calls of the statements that read and update it do
	// not depend on the rows).
	if res.Statements.Skipped[replay.SkipCopyData] == 0 {
		t.Errorf("no COPY skipped: %v", res.Statements.Skipped)
	}
	for fp, n := range original {
		if strings.HasPrefix(strings.ToLower(n.query), "copy ") {
			excluded[fp] = true // COPY FROM STDIN, data not in the log
		}
	}
	checkSameCalls(t, original, replayed, excluded, 20)
	if res.Sessions.ConnectFailed != 0 || res.Sessions.Total < 10 {
		t.Errorf("sessions %+v", res.Sessions)
	}
	// Every statement that completed on the target gave its rows. The
	// statements after a failure in a string of several count as
	// executed (as analyze counts them) but gave no rows: at most one per
	// failed string.
	var rowsCalls, rows int64
	for _, q := range res.Queries {
		rowsCalls += q.RowsCalls
		rows += q.Rows
	}
	if ex := res.Statements.Executed; rowsCalls > ex || rowsCalls < ex-res.Statements.Failed || rows == 0 {
		t.Errorf("rows known for %d calls (%d rows), want about the %d executed", rowsCalls, rows, ex)
	}
	// The original's failures fail on B too, and nothing else does.
	if o := res.Outcomes; o.OriginalFailed == 0 || o.BothFailed != o.OriginalFailed || o.FailedOnlyOnTarget != 0 {
		t.Errorf("outcomes %+v: want every original failure to fail on the target, and no other", o)
	}
}

func fmtDiff(fp string, want, got int64, q string) string {
	return fmt.Sprintf("%s: original %d calls, replay %d: %s", fp, want, got, q)
}

const replayTestPrefix = "%m [%p] %q%u@%d/%a %c "

// writeSessionsLog writes a stderr log of sessions, each a user, a
// database and statements, one every 10 ms from 10:00:00.
func writeSessionsLog(t *testing.T, sessions [][]string) string {
	t.Helper()
	var b strings.Builder
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i, s := range sessions {
		pid := 2000 + i
		user, db := s[0], s[1]
		pre := func() string {
			at = at.Add(10 * time.Millisecond)
			return fmt.Sprintf("%s [%d] %s@%s/app%d 65e1a5e0.%x ", at.Format("2006-01-02 15:04:05.000 MST"), pid, user, db, i, pid)
		}
		fmt.Fprintf(&b, "%sLOG:  connection authorized: user=%s database=%s application_name=app%d\n", pre(), user, db, i)
		for _, q := range s[2:] {
			fmt.Fprintf(&b, "%sLOG:  duration: 0.100 ms  statement: %s\n", pre(), q)
		}
		fmt.Fprintf(&b, "%sLOG:  disconnection: session time: 0:00:00.100 user=%s database=%s host=[local]\n", pre(), user, db)
	}
	return writeFile(t, filepath.Join(t.TempDir(), "postgresql.log"), []byte(b.String()))
}

// TestReplayRightTarget: every session connects as its logged user to its
// logged database (after the maps), and a session whose database does not
// exist on the target fails the run loudly.
func TestReplayRightTarget(t *testing.T) {
	parallelCase(t)
	c := pgclustertest.StartT(t, pgcluster.Options{})
	setup := []string{"CREATE ROLE u1 LOGIN", "CREATE ROLE u2 LOGIN", "CREATE DATABASE db1", "CREATE DATABASE db2"}
	for _, sql := range setup {
		mustExec(t, c, "postgres", sql)
	}
	for _, db := range []string{"db1", "db2"} {
		mustExec(t, c, db, "CREATE TABLE seen (u text, d text, a text); GRANT INSERT ON seen TO PUBLIC")
	}
	const record = "INSERT INTO seen SELECT current_user, current_database(), current_setting('application_name')"
	log := writeSessionsLog(t, [][]string{
		{"u1", "db1", record},
		{"u2", "db2", record},
		{"u2", "db1", record},
		{"prod_user", "prod_db", record}, // mapped to u1@db2
	})
	code, out, res := runReplay(t, "--target", c.DSN("postgres"), "--speed", "0", "--prefix", replayTestPrefix,
		"--user-map", "prod_user=u1", "--database-map", "prod_db=db2", log)
	if code != ExitOK || res == nil || res.Statements.Executed != 4 {
		t.Fatalf("exit %d, result %+v:\n%s", code, res, out)
	}
	// A unix socket: the replayer shares the server's machine, and says
	// what that means for a speed-0 rate.
	if !res.TargetLocal || res.ClientCPUSeconds <= 0 || !strings.Contains(out, "the target is on this machine") {
		t.Errorf("target_local %v, client_cpu_seconds %v, summary:\n%s", res.TargetLocal, res.ClientCPUSeconds, out)
	}
	var got []string
	for _, db := range []string{"db1", "db2"} {
		got = append(got, queryLines(t, c, db, "SELECT string_agg(u || '@' || d || '/' || a, ' ' ORDER BY a) FROM seen")...)
	}
	want := []string{"u1@db1/app0 u2@db1/app2", "u2@db2/app1 u1@db2/app3"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sessions ran as %q, want %q", got, want)
	}

	// A database missing on the target: exit 1, saying which, before
	// anything runs; and without the pre-flight, after the replay, with
	// the sessions that could not connect counted.
	log = writeSessionsLog(t, [][]string{{"u1", "db1", "SELECT 1"}, {"u1", "gone_db", "SELECT 1", "SELECT 2"}})
	code, out, res = runReplay(t, "--target", c.DSN("postgres"), "--speed", "0", "--prefix", replayTestPrefix, log)
	if code != ExitFailure || !strings.Contains(out, `database "gone_db": database does not exist`) || res != nil {
		t.Errorf("exit %d, want %d with a pre-flight message naming gone_db and no result:\n%s", code, ExitFailure, out)
	}
	code, out, res = runReplay(t, "--target", c.DSN("postgres"), "--speed", "0", "--prefix", replayTestPrefix, "--skip-preflight", log)
	if code != ExitFailure || !strings.Contains(out, `database "gone_db"`) || !strings.Contains(out, "could not connect") ||
		!strings.Contains(out, "--database-map gone_db=DB") || strings.Contains(out, "--user-map") {
		t.Errorf("exit %d, want %d with a message naming gone_db and advice for a missing database only:\n%s", code, ExitFailure, out)
	}
	if res == nil || res.Sessions.ConnectFailed != 1 || res.Statements.Skipped[replay.SkipConnectFailed] != 2 {
		t.Errorf("result %+v", res)
	}

	// The target fails what the original did not: exit 3.
	log = writeSessionsLog(t, [][]string{{"u1", "db1", "SELECT 1", "SELECT * FROM no_such_table", "SELECT 1"}})
	code, out, res = runReplay(t, "--target", c.DSN("postgres"), "--speed", "0", "--prefix", replayTestPrefix, log)
	if code != ExitRegression || !strings.Contains(out, "error rate") || res.ErrorsBySQLState["42P01"] != 1 {
		t.Errorf("exit %d, want %d for the error rate:\n%s", code, ExitRegression, out)
	}

	// A dry run connects nowhere, not even to a target that is not there.
	code, out, res = runReplay(t, "--dry-run", "--speed", "0", "--prefix", replayTestPrefix, log)
	if code != ExitOK || res == nil || !res.DryRun || res.Statements.Executed != 3 {
		t.Errorf("dry run: exit %d, result %+v:\n%s", code, res, out)
	}
	// It does not wait out the log's pace unless --speed asks.
	for _, tc := range []struct {
		args  []string
		speed float64
	}{{nil, 0}, {[]string{"--speed", "2"}, 2}} {
		code, out, res = runReplay(t, append(append([]string{"--dry-run", "--prefix", replayTestPrefix}, tc.args...), log)...)
		if code != ExitOK || res == nil || res.Speed != tc.speed {
			t.Errorf("dry run %v: exit %d, speed %v, want %v:\n%s", tc.args, code, res.Speed, tc.speed, out)
		}
	}
}

func queryLines(t *testing.T, c *pgcluster.Cluster, db, sql string) []string {
	t.Helper()
	conn := pgclustertest.PgConn(context.Background(), t, c.DSN(db))
	defer conn.Close(context.Background())
	rr, err := conn.Exec(context.Background(), sql).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rr {
		for _, row := range r.Rows {
			out = append(out, string(row[0]))
		}
	}
	return out
}
