package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
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
	run(ExitOK, "replay", "--target", b.DSN("postgres"), "--speed", "0", "--prefix", demoPrefix,
		"--target-log", bLogs[0], "--json", path("fast.json"), aLog)

	// The comparisons work: a verdict either way (timings on a shared
	// machine are not this test's business; the demo's tests judge an
	// identical target), and the report names both runs' latency source.
	for _, pair := range [][2]string{{"a.json", "r1.json"}, {"r1.json", "r2.json"}} {
		code, stdout, stderr := runCLI(ctx, "", "report", path(pair[0]), path(pair[1]), "--fail-on", "p95>10x", "--json", path("rep.json"))
		if code != ExitOK && code != ExitRegression {
			t.Fatalf("report %v: exit %d\n%s%s", pair, code, stdout, stderr)
		}
		var rep struct {
			Kind     string `json:"kind"`
			Baseline struct {
				LatencySource string `json:"latency_source"`
			} `json:"baseline"`
			Candidate struct {
				LatencySource string `json:"latency_source"`
			} `json:"candidate"`
			Queries []struct {
				Status string `json:"status"`
			} `json:"queries"`
		}
		if err := json.Unmarshal(readFile(t, path("rep.json")), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Kind != "report" || rep.Baseline.LatencySource != "server_log" || rep.Candidate.LatencySource != "server_log" || len(rep.Queries) < 5 {
			t.Errorf("report %v: kind %q, sources %q/%q, %d queries", pair, rep.Kind, rep.Baseline.LatencySource, rep.Candidate.LatencySource, len(rep.Queries))
		}
		if strings.Contains(stdout, "speed 0") {
			t.Errorf("report %v: paced replays warned of a speed-0 rate:\n%s", pair, stdout)
		}
	}
	// A speed-0 replay over the target's unix socket shared its CPU: the
	// summary and the page say its rate is a lower bound.
	code, stdout, stderr := runCLI(ctx, "", "report", path("a.json"), path("fast.json"), "--html", path("rep.html"))
	if code != ExitOK {
		t.Fatalf("report of the speed-0 replay: exit %d\n%s%s", code, stdout, stderr)
	}
	want := "WARNING: " + path("fast.json") + " replayed at speed 0 on the target's machine, where the replayer itself used"
	if !strings.Contains(stdout, want) || !strings.Contains(stdout, "is a lower bound of the target's own rate") {
		t.Errorf("the summary lacks the speed-0 caveat %q:\n%s", want, stdout)
	}
	if html := string(readFile(t, path("rep.html"))); !strings.Contains(html, "replayed at speed 0 on the target&#39;s machine") {
		t.Error("the HTML report lacks the speed-0 caveat")
	}
	// Client round trips against server-side durations: refused.
	run(ExitUsage, "report", path("a.json"), path("client.json"))
}
