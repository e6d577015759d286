package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
	"github.com/pgrehearse/pgrehearse/internal/workload"
)

// lookupScript is the pgbench script of the end-to-end test: one query on
// an indexed column (the candidate loses the index), one by primary key.
const lookupScript = `\set c random(1, 200000)
SELECT payload FROM items WHERE code = :c;
SELECT payload FROM items WHERE id = :c;
`

const itemsSetup = `CREATE TABLE items (id int PRIMARY KEY, code int NOT NULL, payload text NOT NULL);
INSERT INTO items SELECT g, 200001 - g, md5(g::text) FROM generate_series(1, 200000) g;
CREATE INDEX items_code ON items (code);`

// captureLookups runs the lookup script on a fresh logging cluster, with
// or without the index on code, and returns its stderr log.
func captureLookups(t *testing.T, withIndex bool) string {
	t.Helper()
	ctx := context.Background()
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: workload.LogSettings()})
	setup := itemsSetup
	if !withIndex {
		setup += "\nDROP INDEX items_code;"
	}
	// VACUUM refuses to run in the implicit transaction of a
	// multi-statement string.
	mustExec(t, c, "postgres", setup, "VACUUM ANALYZE items")
	script := filepath.Join(t.TempDir(), "lookup.sql")
	writeFile(t, script, []byte(lookupScript))
	// A fixed number of transactions, so both runs have the same calls.
	if out, err := c.Pgbench(ctx, "-n", "-c", "2", "-j", "2", "-t", "150", "--random-seed=1", "-f", script, "postgres"); err != nil {
		t.Fatalf("pgbench: %v\n%s", err, out)
	}
	// The cluster directory goes with the test; keep the log.
	return writeFile(t, filepath.Join(t.TempDir(), "server.log"), readFile(t, pgclustertest.StoppedLog(t, c)))
}

func analyzeToJSON(t *testing.T, log, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	code, _, stderr := runCLI(context.Background(), "", "analyze", "--format", "stderr", "--prefix", workload.LogLinePrefix,
		"--hist", "--json", out, "--top", "0", log)
	if code != ExitOK {
		t.Fatalf("analyze %s: exit %d\n%s", log, code, stderr)
	}
	return out
}

// TestReportFindsDroppedIndex is the report's acceptance test on results
// a real server produced: the same pgbench script on two clusters, the
// second without the index its first query needs. The report must rank
// that query first and fail --fail-on 'p95>+20%'; two analyses of one log
// must pass with no regression at all.
func TestReportFindsDroppedIndex(t *testing.T) {
	longCase(t)
	baseLog := captureLookups(t, true)
	candLog := captureLookups(t, false)
	base := analyzeToJSON(t, baseLog, "base.json")
	base2 := analyzeToJSON(t, baseLog, "base2.json")
	cand := analyzeToJSON(t, candLog, "cand.json")
	dir, err := os.MkdirTemp("", "pgrehearse-report-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	htmlPath, jsonPath := filepath.Join(dir, "report.html"), filepath.Join(dir, "report.json")
	t.Logf("report kept in %s", dir)

	code, stdout, stderr := runCLI(context.Background(), "", "report", base, cand,
		"--fail-on", "p95>+20%", "--html", htmlPath, "--json", jsonPath)
	t.Logf("report stdout:\n%s", stdout)
	if code != ExitRegression {
		t.Fatalf("exit %d, want %d (regression)\n%s", code, ExitRegression, stderr)
	}
	var rep compare.Report
	if err := json.Unmarshal(readFile(t, jsonPath), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.RegressionsByAddedTime) == 0 {
		t.Fatal("no regression found")
	}
	worst := rep.Query(rep.RegressionsByAddedTime[0])
	if !strings.Contains(worst.Query, "WHERE code =") {
		t.Errorf("worst regression is %q, want the lookup by code", worst.Query)
	}
	if worst.Factor < 3 || worst.Effects == nil || worst.Effects.Mean.Change != compare.ChangeSlower || worst.Effects.Mean.Low <= 1 {
		t.Errorf("worst regression factor %.2f, effects %+v; a lost index should cost far more", worst.Factor, worst.Effects)
	}
	if rep.Verdict.Status != "fail" || !strings.Contains(stdout, "FAIL: p95>+20% broken") {
		t.Errorf("verdict %+v", rep.Verdict)
	}
	if html := string(readFile(t, htmlPath)); !strings.Contains(html, "WHERE code =") || !strings.Contains(html, "FAIL") {
		t.Error("the HTML report lacks the regression or the verdict")
	}

	// The same log analyzed twice: identical inputs, named as such,
	// never a pass.
	code, stdout, stderr = runCLI(context.Background(), "", "report", base, base2, "--fail-on", "p95>+20%,mean>+5%,errors>+0pp")
	if code != ExitIncomplete || !strings.Contains(stderr, "are identical inputs") {
		t.Errorf("same log twice: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// writeResult writes a minimal result with one query of n calls taking
// ms each (no histogram: the quantile rule judges it).
func writeResult(t *testing.T, dir, name, kind, source string, n int, ms float64) string {
	t.Helper()
	res := map[string]any{"kind": kind, "statements": map[string]int{"total": n},
		"first_time": "2025-01-01T10:00:00.000000Z", "last_time": "2025-01-01T10:00:10.000000Z",
		"queries": []map[string]any{{"fingerprint": "abc", "query": "SELECT $1", "calls": n, "timed_calls": n,
			"total_ms": float64(n) * ms, "mean_ms": ms, "p50_ms": ms, "p95_ms": ms, "p99_ms": ms, "min_ms": ms, "max_ms": ms}}}
	if source != "" {
		res["latency_source"] = source
	}
	b, _ := json.Marshal(res)
	return writeFile(t, filepath.Join(dir, name), b)
}

func TestReportExitCodes(t *testing.T) {
	dir := t.TempDir()
	base := writeResult(t, dir, "base.json", "analysis", "", 100, 1)
	slow := writeResult(t, dir, "slow.json", "analysis", "", 100, 3)
	base2 := writeResult(t, dir, "base2.json", "analysis", "", 100, 1.01)
	slow2 := writeResult(t, dir, "slow2.json", "analysis", "", 100, 3.1)
	negative := writeResult(t, dir, "negative.json", "analysis", "", 100, -1)
	replay := writeResult(t, dir, "replay.json", "replay", "", 100, 1.2)
	replayServer := writeResult(t, dir, "replay-server.json", "replay", "server_log", 100, 1)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"kind":"events"}`), 0o644)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // substring
		stderr string
	}{
		{"one file summarizes", []string{base}, ExitOK, "one result: nothing compared", ""},
		{"slower without rules passes", []string{base, slow}, ExitOK, "REGRESSIONS (no rule to fail on): 1 regression", ""},
		{"one file twice", []string{base, base}, ExitIncomplete, "", "is given twice"},
		{"runs a side", []string{"--baseline", base, base2, "--candidate", slow, slow2, "--fail-on", "mean>2x"}, ExitRegression, "FAIL: mean>2x broken by 1 query", ""},
		{"runs a side, flags between", []string{"--candidate", slow, slow2, "--top", "3", "--baseline", base, base2}, ExitOK, "run-to-run noise not measured (2 runs a side)", ""},
		{"both forms", []string{base, "--baseline", base2, "--candidate", slow}, ExitUsage, "", "not both"},
		{"a side without the other", []string{"--baseline", base, base2}, ExitUsage, "", "go together"},
		{"negative figures refused", []string{base, negative}, ExitIncomplete, "", "queries[0].mean_ms (fingerprint abc) is negative"},
		{"negative figures refused in a summary", []string{negative}, ExitIncomplete, "", "queries[0].mean_ms (fingerprint abc) is negative"},
		{"rule broken", []string{base, slow, "--fail-on", "mean>2x"}, ExitRegression, "FAIL: mean>2x broken by 1 query", ""},
		{"rule not broken", []string{base, slow, "--fail-on", "mean>+250%"}, ExitOK, "REGRESSIONS, no rule broken", ""},
		{"repeated and comma rules", []string{base, slow, "--fail-on", "p99>+500%", "--fail-on", "errors>+1pp,p95>+100ms"}, ExitOK, "REGRESSIONS, no rule broken", ""},
		{"mixed latency refused", []string{base, replay}, ExitUsage, "", "--allow-mixed-latency"},
		{"mixed latency allowed and flagged", []string{base, replay, "--allow-mixed-latency"}, ExitOK, "MIXED LATENCY", ""},
		{"server-side replay compares", []string{base, replayServer, "--fail-on", "p95>+20%"}, ExitOK, "PASS", ""},
		{"bad rule", []string{base, slow, "--fail-on", "p95>20"}, ExitUsage, "", "--fail-on"},
		{"bad judge level", []string{base, slow, "--judge-level", "client"}, ExitUsage, "", `--judge-level: no level "client" to judge the mean on: server or application`},
		{"judge level without round trips", []string{base, slow, "--judge-level", "application", "--fail-on", "mean>2x"}, ExitRegression, "FAIL: mean>2x broken by 1 query", ""},
		{"rule with one file", []string{base, "--fail-on", "p95>+20%"}, ExitUsage, "", "needs two results"},
		{"three files", []string{base, slow, replay}, ExitUsage, "", "accepts between 1 and 2"},
		{"missing file", []string{base, filepath.Join(dir, "nope.json")}, ExitFailure, "", "does not exist"},
		{"not a result", []string{base, bad}, ExitFailure, "", "cannot be compared"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(context.Background(), "", append([]string{"report"}, tt.args...)...)
			if code != tt.code || !strings.Contains(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
				t.Errorf("exit %d (want %d)\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
		})
	}
}

// TestReportVerdictFirst: the summary starts with its verdict and the
// rule broken with the query that broke it, before the details (issue
// 44: some 130 lines came before the FAIL line), and does not say the
// verdict again after them.
func TestReportVerdictFirst(t *testing.T) {
	dir := t.TempDir()
	base := writeResult(t, dir, "base.json", "analysis", "", 100, 1)
	slow := writeResult(t, dir, "slow.json", "analysis", "", 100, 3)
	code, stdout, stderr := runCLI(context.Background(), "", "report", base, slow, "--fail-on", "mean>2x")
	lines := strings.Split(stdout, "\n")
	if code != ExitRegression || len(lines) < 3 || !strings.HasPrefix(lines[0], "FAIL: mean>2x broken by 1 query") ||
		!strings.HasPrefix(lines[1], `  mean>2x broken by abc "SELECT $1": mean 1.00 ms -> 3.00 ms`) || lines[2] != "" ||
		strings.Count(stdout, "FAIL") != 1 || !strings.HasPrefix(lines[3], "baseline   ") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func TestReportJSONToStdout(t *testing.T) {
	dir := t.TempDir()
	base := writeResult(t, dir, "base.json", "analysis", "", 100, 1)
	slow := writeResult(t, dir, "slow.json", "analysis", "", 100, 3)
	code, stdout, stderr := runCLI(context.Background(), "", "report", base, slow, "--json", "-")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	for _, k := range []string{"kind", "verdict", "baseline", "candidate", "queries", "regressions_by_added_time",
		"regressions_by_factor", "new_errors", "only_baseline", "only_candidate", "too_few_calls", "small_changes", "rules", "settings"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if !strings.Contains(stderr, "REGRESSIONS (no rule to fail on)") {
		t.Errorf("the summary did not go to stderr: %q", stderr)
	}
	if got := m["regressions_by_factor"].([]any); len(got) != 1 || got[0] != "abc" {
		t.Errorf("regressions_by_factor %v", got)
	}
}

// TestReportDiverged: a candidate replay whose UPDATE by id touched fewer
// rows per call than the synchronized baseline replay's (orders that did
// not exist yet) is reported as diverged, exit 6, the query listed under
// Divergence in the summary and the page, with both runs' sync figures.
func TestReportDiverged(t *testing.T) {
	dir := t.TempDir()
	write := func(name, sync string, rows int64) string {
		res := map[string]any{"kind": "replay", "latency_source": "client", "speed": 1, "wall_seconds": 10,
			"statements": map[string]int{"total": 1000, "executed": 1000},
			"sync":       map[string]any{"mode": sync, "waited": 120},
			"queries": []map[string]any{{"fingerprint": "upd", "query": "UPDATE orders SET state = $1 WHERE id = $2", "calls": 1000,
				"timed_calls": 1000, "total_ms": 100, "mean_ms": 0.1, "p50_ms": 0.1, "p95_ms": 0.1, "p99_ms": 0.1, "min_ms": 0.1, "max_ms": 0.1,
				"rows_calls": 1000, "rows": rows}}}
		b, _ := json.Marshal(res)
		return writeFile(t, filepath.Join(dir, name), b)
	}
	synced, off := write("synced.json", "object", 1000), write("off.json", "off", 405)
	html := filepath.Join(dir, "rep.html")
	code, stdout, stderr := runCLI(context.Background(), "", "report", synced, off, "--fail-on", "p95>+20%", "--html", html)
	if code != ExitDiverged {
		t.Errorf("exit %d, want %d\n%s%s", code, ExitDiverged, stdout, stderr)
	}
	for _, want := range []string{"REPLAY DIVERGED: 1 query did different work", "rows per call 1 -> 0.405",
		"Divergence: queries that did different work", "1 -> 0.405", "sync object: 120 statements waited", "sessions not synchronized"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	page := string(readFile(t, html))
	for _, want := range []string{`id="divergence"`, "Queries that diverged", "verdict-diverged", "UPDATE orders SET state"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}
