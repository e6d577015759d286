package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/replay"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// runReplay runs "pgrehearse replay" with args and returns its exit code,
// output and JSON result (nil if none was written).
func runReplay(t *testing.T, args ...string) (int, string, *replay.Result) {
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
	var res replay.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	s := res.Statements
	if s.Total != s.Executed+s.Failed+s.SkippedTotal() {
		t.Errorf("statements: total %d != executed %d + failed %d + skipped %d", s.Total, s.Executed, s.Failed, s.SkippedTotal())
	}
	return code, text, &res
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
	ctx := context.Background()
	a := pgcluster.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	b := pgcluster.StartT(t, pgcluster.Options{Settings: map[string]string{"shared_preload_libraries": "pg_stat_statements"}})
	for _, sql := range []string{"CREATE EXTENSION pg_stat_statements", "SELECT pg_stat_statements_reset()"} {
		if err := a.Exec(ctx, "postgres", sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := workload.Run(ctx, a, workload.Options{Duration: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	original := pgssCalls(ctx, t, a)
	if err := a.StopServer(); err != nil {
		t.Fatal(err)
	}
	files, err := a.LogFiles("*.log")
	if err != nil || len(files) != 1 {
		t.Fatalf("log files %v: %v", files, err)
	}

	start := time.Now()
	code, out, res := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", files[0])
	t.Logf("replay took %v:\n%s", time.Since(start), out)
	if code != ExitOK || res == nil {
		t.Fatalf("replay exited %d:\n%s", code, out)
	}
	replayed := pgssCalls(ctx, t, b)

	// Not compared: the statements around the count (the extension, its
	// reset and the query that reads it), which the replay re-runs on B.
	excluded := map[string]string{}
	for _, q := range []string{"CREATE EXTENSION pg_stat_statements", "SELECT pg_stat_statements_reset()", pgssQuery} {
		excluded[fingerprint.Compute(q)[0].Fingerprint] = "the count's own statements"
	}
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
			excluded[fp] = "COPY FROM STDIN, data not in the log"
		}
	}

	checked := 0
	var diffs []string
	for fp, n := range original {
		if _, ok := excluded[fp]; ok {
			continue
		}
		if got := replayed[fp].calls; got != n.calls {
			diffs = append(diffs, fmtDiff(fp, n.calls, got, n.query))
		}
		checked++
	}
	for fp, n := range replayed {
		if _, ok := original[fp]; !ok {
			if _, ok := excluded[fp]; !ok {
				diffs = append(diffs, fmtDiff(fp, 0, n.calls, n.query))
			}
		}
	}
	sort.Strings(diffs)
	for _, d := range diffs {
		t.Error(d)
	}
	if checked < 20 {
		t.Errorf("only %d queries compared: the workload did not run", checked)
	}
	if res.Sessions.ConnectFailed != 0 || res.Sessions.Total < 10 {
		t.Errorf("sessions %+v", res.Sessions)
	}
	// The original's failures fail on B too, and nothing else does.
	if o := res.Outcomes; o.OriginalFailed == 0 || o.BothFailed != o.OriginalFailed || o.FailedOnlyOnTarget != 0 {
		t.Errorf("outcomes %+v: want every original failure to fail on the target, and no other", o)
	}
}

func fmtDiff(fp string, want, got int64, q string) string {
	return fmt.Sprintf("%s: original %d calls, replay %d: %s", fp, want, got, q)
}
