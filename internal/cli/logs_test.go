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
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.log")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "copy.log")
	if err := os.WriteFile(cp, readFile(t, smallLog), 0o644); err != nil {
		t.Fatal(err)
	}
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
