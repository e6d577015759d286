package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

const testPrefix = "%m [%p] %q%u@%d/%a %c "

var smallLog = filepath.Join("testdata", "analyze", "small.log")

// runCLI runs pgrehearse in memory and returns its exit code and output.
func runCLI(ctx context.Context, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Run(ctx, IO{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errOut}, args)
	return code, out.String(), errOut.String()
}

func TestAnalyzeCommand(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "a.json")
	code, stdout, stderr := runCLI(context.Background(), "",
		"analyze", "--prefix", testPrefix, "--json", jsonPath, "-j", "2", "--top", "3", smallLog)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"lines       18 read, 17 parsed, 1 skipped",
		"statements  8 executed, 2 failed",
		"sessions    2",
		"Top 3 queries by total time",
		"SELECT * FROM orders WHERE id = $1",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	if stderr != "" {
		t.Errorf("stderr not empty (no progress bar off a terminal):\n%s", stderr)
	}

	b := readFile(t, jsonPath)
	res, err := results.Decode(b, jsonPath)
	if err != nil {
		t.Fatalf("JSON: %v\n%s", err, b)
	}
	if res.Kind != "analysis" || res.Statements.Total != 8 || res.Statements.Failed != 2 ||
		res.Lines.Total != 18 || res.Sessions.Total != 2 || len(res.Queries) != 7 {
		t.Errorf("result: %+v", res)
	}
	// A string of three statements, 0.3 ms: 0.1 ms each.
	for _, q := range res.Queries {
		if q.Query == "BEGIN" && (q.Calls != 1 || q.TotalMS != 0.1) {
			t.Errorf("BEGIN: %+v", q)
		}
	}
}

func TestAnalyzeJSONToStdout(t *testing.T) {
	code, stdout, stderr := runCLI(context.Background(), "",
		"analyze", "--prefix", testPrefix, "--json", "-", "--hist", smallLog)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	res, err := results.Decode([]byte(stdout), "stdout")
	if err != nil {
		t.Fatalf("stdout is not only JSON: %v\n%s", err, stdout)
	}
	if res.Queries[0].Hist == "" {
		t.Error("--hist gave no histogram")
	}
	if !strings.Contains(stderr, "statements  8 executed") {
		t.Errorf("summary not on stderr:\n%s", stderr)
	}
}

func TestAnalyzeStdin(t *testing.T) {
	code, stdout, stderr := runCLI(context.Background(), string(readFile(t, smallLog)),
		"analyze", "--format", "stderr", "--prefix", testPrefix, "-")
	if code != ExitOK || !strings.Contains(stdout, "statements  8 executed") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func TestAnalyzeInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // as if Ctrl-C came during the first batch
	code, stdout, stderr := runCLI(ctx, "", "analyze", "--prefix", testPrefix, smallLog)
	if code != ExitFailure {
		t.Errorf("exit %d, want %d", code, ExitFailure)
	}
	if !strings.Contains(stdout, "PARTIAL") || !strings.Contains(stdout, "statements") {
		t.Errorf("no partial summary:\n%s", stdout)
	}
	if !strings.Contains(stderr, "interrupted") {
		t.Errorf("stderr: %s", stderr)
	}
}

func TestAnalyzeErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.log")
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"missing file", []string{smallLog, missing}, ExitFailure, "missing.log does not exist"},
		{"unknown flag", []string{"--bogus", smallLog}, ExitUsage, "unknown flag"},
		{"bad format", []string{"--format", "xml", smallLog}, ExitUsage, "unknown log format"},
		{"bad jobs", []string{"-j", "0", smallLog}, ExitUsage, "-j must be at least 1"},
		{"jobs not a number", []string{"-j", "x", smallLog}, ExitUsage, "invalid argument"},
		{"no log", nil, ExitUsage, "requires at least 1 arg"},
		{"stdin twice", []string{"-", "-"}, ExitUsage, "only once"},
		{"not English", []string{"--prefix", testPrefix, filepath.Join("testdata", "analyze", "german.log")},
			ExitFailure, "lc_messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(context.Background(), "", append([]string{"analyze"}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.msg) {
				t.Errorf("stderr lacks %q: %s", tt.msg, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout not empty on error:\n%s", stdout)
			}
		})
	}
}

// TestAnalyzePrintsFindings: analyze names the traps it can see without a
// server (here the errors), says which it could not evaluate and why, and
// puts the findings in its JSON.
func TestAnalyzePrintsFindings(t *testing.T) {
	jsonPath := filepath.Join(t.TempDir(), "a.json")
	code, stdout, stderr := runCLI(context.Background(), "", "analyze", "--prefix", testPrefix, "--json", jsonPath, smallLog)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"errors", "Not evaluated:", "missing-index: no connection to the server"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	var out struct {
		Kind     string `json:"kind"`
		Findings struct {
			Findings []struct {
				ID string `json:"id"`
			} `json:"findings"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(readFile(t, jsonPath), &out); err != nil {
		t.Fatal(err)
	}
	if out.Kind != "analysis" || len(out.Findings.Findings) == 0 || out.Findings.Findings[0].ID != "errors" {
		t.Errorf("JSON findings: %+v", out)
	}

	code, stdout, _ = runCLI(context.Background(), "", "analyze", "--findings=false", "--prefix", testPrefix, smallLog)
	if code != ExitOK || strings.Contains(stdout, "Not evaluated") {
		t.Errorf("--findings=false still printed findings (exit %d):\n%s", code, stdout)
	}
}

// TestAnalyzeTimeWindow: --start and --end keep the events of the window
// and count the others as filtered, as replay does.
func TestAnalyzeTimeWindow(t *testing.T) {
	code, stdout, stderr := runCLI(context.Background(), "", "analyze", "--prefix", testPrefix, "--json", "-",
		"--start", "2024-05-01T10:00:00.250Z", "--end", "2024-05-01T10:00:00.650Z", smallLog)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	res, err := results.Decode([]byte(stdout), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	// In the window: the string of three (started at .2997), the failed
	// SELEC and the execution at .6006; the rest is filtered.
	if res.Statements.Total != 5 || res.Filtered.Statements != 3 || res.Filtered.Events != 6 {
		t.Errorf("statements %+v, filtered %+v", res.Statements, res.Filtered)
	}
	if code, _, stderr := runCLI(context.Background(), "", "analyze", "--start", "2024-05-02", "--end", "2024-05-01", smallLog); code != ExitUsage {
		t.Errorf("--end before --start: exit %d\n%s", code, stderr)
	}
}
