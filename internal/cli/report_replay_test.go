package cli

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// TestReportOnReplays: report compares an analysis with a replay that read
// the target's log, and two such replays (all server-side); it refuses a
// replay whose latencies are client round trips against an analysis.
func TestReportOnReplays(t *testing.T) {
	ctx := context.Background()
	settings := workload.LogSettings()
	settings["log_line_prefix"] = demoPrefix
	settings["log_min_duration_statement"] = "-1" // on after the setup, as in the demo
	a := pgcluster.StartT(t, pgcluster.Options{Settings: settings})
	b := pgcluster.StartT(t, pgcluster.Options{Settings: settings})
	for _, c := range []*pgcluster.Cluster{a, b} {
		if err := workload.SetupShop(ctx, c); err != nil {
			t.Fatal(err)
		}
		if err := enableStatementLog(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := workload.RunShop(ctx, a, 2*time.Second, 100); err != nil {
		t.Fatal(err)
	}
	aLog, err := stoppedLog(a)
	if err != nil {
		t.Fatal(err)
	}
	bLogs, err := b.LogFiles("*.log")
	if err != nil || len(bLogs) != 1 {
		t.Fatalf("B's logs %v: %v", bLogs, err)
	}
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	run := func(want int, args ...string) {
		t.Helper()
		code, stdout, stderr := runCLI(ctx, "", args...)
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s%s", args, code, want, stdout, stderr)
		}
	}
	run(ExitOK, "analyze", "--hist", "--prefix", demoPrefix, "--json", path("a.json"), aLog)
	for _, r := range []string{"r1.json", "r2.json"} {
		run(ExitOK, "replay", "--target", b.DSN("postgres"), "--speed", "1", "--prefix", demoPrefix,
			"--target-log", bLogs[0], "--json", path(r), aLog)
	}
	run(ExitOK, "replay", "--target", b.DSN("postgres"), "--speed", "1", "--prefix", demoPrefix, "--json", path("client.json"), aLog)

	// Same data, same traffic: nothing may break a generous rule.
	run(ExitOK, "report", path("a.json"), path("r1.json"), "--fail-on", "p95>10x", "--json", path("ar.json"))
	run(ExitOK, "report", path("r1.json"), path("r2.json"), "--fail-on", "p95>10x", "--json", path("rr.json"))
	// Client round trips against server-side durations: refused.
	run(ExitUsage, "report", path("a.json"), path("client.json"))
}
