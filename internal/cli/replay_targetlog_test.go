package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// TestReplayTargetLog: the mixed workload is captured on A and replayed
// against B, which logs everything; with --target-log on B's log the
// queries are B's own durations, each fingerprint with exactly the calls
// and errors the replay ran (client_queries), every connection's
// statements found in order; latency_source says server_log.
func TestReplayTargetLog(t *testing.T) {
	slowCase(t, 12*time.Second)
	ctx := context.Background()
	a := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	b := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	if _, err := workload.Run(ctx, a, workload.Options{Duration: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	aLog := pgclustertest.StoppedLog(t, a)
	bLogs, err := b.LogFiles("*.log")
	if err != nil || len(bLogs) != 1 {
		t.Fatalf("B's logs %v: %v", bLogs, err)
	}

	code, out, res := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--target-log", bLogs[0], aLog)
	t.Logf("%s", out)
	if code != ExitOK || res == nil {
		t.Fatalf("replay exited %d", code)
	}
	if res.LatencySource != results.LatencyServerLog || res.TargetLog == nil {
		t.Fatalf("latency_source %q, target_log %+v", res.LatencySource, res.TargetLog)
	}
	tl := res.TargetLog
	if tl.Connections == 0 || tl.ConnectionsFound != tl.Connections || len(tl.Mismatched) != 0 || tl.ExecutionsMatched != tl.Executions {
		t.Errorf("target log %+v: want every connection found, every execution matched in order", *tl)
	}
	if ran := res.Outcomes.Ran; tl.Executions != ran {
		t.Errorf("the target logged %d executions of the replay, the replay ran %d", tl.Executions, ran)
	}
	client := map[string][2]int64{}
	for _, q := range res.ClientQueries {
		client[q.Fingerprint] = [2]int64{q.Calls, q.Errors}
	}
	if len(client) < 20 {
		t.Fatalf("only %d client-side queries", len(client))
	}
	server := map[string][2]int64{}
	timed := 0
	for _, q := range res.Queries {
		server[q.Fingerprint] = [2]int64{q.Calls, q.Errors}
		if q.TimedCalls > 0 {
			timed++
		}
	}
	for fp, c := range client {
		if server[fp] != c {
			t.Errorf("%s: server-side calls/errors %v, replayed %v", fp, server[fp], c)
		}
	}
	for fp, s := range server {
		if _, ok := client[fp]; !ok {
			t.Errorf("%s: %v in the target's log, not replayed", fp, s)
		}
	}
	if timed < len(server)/2 {
		t.Errorf("only %d of %d server-side queries have durations", timed, len(server))
	}
}

// TestReplayTargetLogWithoutSessionID: a target whose log_line_prefix has
// no %c cannot be matched to the replay's connections: the pre-flight
// says so before anything is replayed; with --skip-preflight the replay
// says which settings the target needs and exits 1, after writing the
// client-side results.
func TestReplayTargetLogWithoutSessionID(t *testing.T) {
	parallelCase(t)
	settings := workload.LogSettings()
	settings["log_line_prefix"] = "%m [%p] %q%u@%d "
	settings["log_destination"] = "stderr"
	b := pgclustertest.StartT(t, pgcluster.Options{Settings: settings})
	bLogs, err := b.LogFiles("*.log")
	if err != nil || len(bLogs) != 1 {
		t.Fatalf("B's logs %v: %v", bLogs, err)
	}
	var l strings.Builder
	l.WriteString("2026-03-01 10:00:00.000 UTC [101] u@postgres/app 65e1a7a0.65 LOG:  connection authorized: user=postgres database=postgres application_name=app\n")
	l.WriteString("2026-03-01 10:00:00.100 UTC [101] postgres@postgres/app 65e1a7a0.65 LOG:  duration: 0.050 ms  statement: SELECT 1\n")
	path := t.TempDir() + "/a.log"
	writeFile(t, path, []byte(l.String()))
	// The pre-flight reads the prefix before anything is replayed.
	code, out, res := runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--prefix", "%m [%p] %q%u@%d/%a %c ", "--target-log", bLogs[0], path)
	if code != ExitFailure || !strings.Contains(out, "PRE-FLIGHT FAILED") || !strings.Contains(out, "lacks %p or %c") || res != nil {
		t.Errorf("exit %d, result %v, want %d naming the prefix before the replay:\n%s", code, res != nil, ExitFailure, out)
	}
	// Without it, the log says so after the replay.
	code, out, res = runReplay(t, "--target", b.DSN("postgres"), "--speed", "0", "--prefix", "%m [%p] %q%u@%d/%a %c ", "--target-log", bLogs[0], "--skip-preflight", path)
	if code != ExitFailure || !strings.Contains(out, "%c") || !strings.Contains(out, "log_min_duration_statement = 0") {
		t.Errorf("exit %d, want %d naming the settings:\n%s", code, ExitFailure, out)
	}
	if res == nil || res.LatencySource != results.LatencyClient || res.Statements.Executed != 1 {
		t.Errorf("the client-side results should still be written: %+v", res)
	}
}
