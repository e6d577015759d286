package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/pgcluster"
	"github.com/pgrehearse/pgrehearse/internal/pgclustertest"
)

// TestLogsEmptyAndRepeated: of several logs, an empty one is skipped with
// a warning, and so is one that repeats another (the same file twice, a
// copy, the csvlog and jsonlog of one server): never counted twice.
func TestLogsEmptyAndRepeated(t *testing.T) {
	parallelCase(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.log")
	writeFile(t, empty, nil)
	cp := filepath.Join(dir, "copy.log")
	writeFile(t, cp, readFile(t, smallLog))
	// One server's csvlog and jsonlog of the same traffic.
	c := pgclustertest.StartT(t, pgcluster.Options{Settings: map[string]string{
		"logging_collector":          "on",
		"log_destination":            "csvlog,jsonlog",
		"log_min_duration_statement": "0",
	}})
	for _, sql := range []string{"SELECT 1", "SELECT 2", "SELECT 3", "SELECT 4", "SELECT 1/0"} {
		c.Exec(context.Background(), "postgres", sql)
	}
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	csvs, _ := c.LogFiles("*.csv")
	jsons, _ := c.LogFiles("*.json")
	if len(csvs) != 1 || len(jsons) != 1 {
		t.Fatalf("log files %v %v", csvs, jsons)
	}
	csvlog, jsonlog := csvs[0], jsons[0]
	for _, tc := range []struct {
		name  string
		args  []string
		lines string // the summary's line count: the logs read once
		warn  string
	}{
		{"empty among good", []string{smallLog, empty}, "lines       18 read", "empty.log is empty: skipped"},
		{"same file twice", []string{smallLog, smallLog}, "lines       18 read", "is given twice: read once"},
		{"a copy", []string{smallLog, cp}, "lines       18 read", "copy.log holds the same events as " + smallLog},
		{"csvlog and its jsonlog", []string{csvlog, jsonlog}, "statements  5 executed, 1 failed", ".json holds the same events as"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(context.Background(), "", append([]string{"analyze", "--findings=false"}, tc.args...)...)
			if code != ExitOK {
				t.Fatalf("exit %d:\n%s", code, stderr)
			}
			if !strings.Contains(stdout, tc.lines) {
				t.Errorf("summary lacks %q:\n%s", tc.lines, stdout)
			}
			if !strings.Contains(stderr, tc.warn) {
				t.Errorf("stderr lacks %q:\n%s", tc.warn, stderr)
			}
		})
	}
	code, _, stderr := runCLI(context.Background(), "", "analyze", empty)
	if code == ExitOK || !strings.Contains(stderr, "empty") {
		t.Errorf("only an empty log: exit %d, %s", code, stderr)
	}
	code, _, stderr = runCLI(context.Background(), "", "analyze", "--timezone", "Mars/Olympus", smallLog)
	if code != ExitUsage || !strings.Contains(stderr, "--timezone") {
		t.Errorf("bad --timezone: exit %d, %s", code, stderr)
	}
}

// TestMixedSourcesAndTimeless: logs a day apart are refused as one
// workload, saying which and how to read them anyway; a log whose lines
// have no time is analyzed (its figures have no times) but not replayed,
// and the refusal names %m.
func TestMixedSourcesAndTimeless(t *testing.T) {
	dir := t.TempDir()
	good := string(readFile(t, smallLog))
	nextDay := strings.ReplaceAll(good, "2024-05-01", "2024-05-02")
	later := filepath.Join(dir, "later.log")
	os.WriteFile(later, []byte(nextDay), 0o644)
	ctx := context.Background()
	code, _, stderr := runCLI(ctx, "", "analyze", "--prefix", testPrefix, smallLog, later)
	if code != ExitUsage || !strings.Contains(stderr, "neither overlap nor follow") || !strings.Contains(stderr, "--allow-mixed-sources") {
		t.Errorf("mixed logs: exit %d, %s", code, stderr)
	}
	if code, stdout, stderr := runCLI(ctx, "", "analyze", "--findings=false", "--allow-mixed-sources", "--prefix", testPrefix, smallLog, later); code != ExitOK || !strings.Contains(stdout, "lines       36 read") {
		t.Errorf("mixed logs allowed: exit %d, %s%s", code, stdout, stderr)
	}

	timeless := filepath.Join(dir, "timeless.log")
	os.WriteFile(timeless, []byte("[100]: [1-1] db=shop,user=app LOG:  duration: 0.050 ms  statement: SELECT 1\n[100]: [2-1] db=shop,user=app LOG:  duration: 0.050 ms  statement: SELECT 2\n"), 0o644)
	if code, stdout, stderr := runCLI(ctx, "", "analyze", "--findings=false", timeless); code != ExitOK || !strings.Contains(stdout, "statements  2 executed") {
		t.Errorf("analyze of a log without times: exit %d, %s%s", code, stdout, stderr)
	}
	if code, _, stderr := runCLI(ctx, "", "replay", "--dry-run", timeless); code != ExitNoInput || !strings.Contains(stderr, "%m") {
		t.Errorf("replay of a log without times: exit %d, %s", code, stderr)
	}
}
