package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/sweep/sweeptest"
)

func TestSweepLogUsageErrors(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "empty.log")
	writeFile(t, log, nil)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--log", log, "-b", "select-only"}, "not both"},
		{[]string{"--log", log, "-M", "prepared"}, "not both"},
		{[]string{"--log", log, "--format", "xml"}, "unknown log format"},
		{[]string{"--log", "/no/such.log"}, "does not exist"},
		{[]string{"--log", log, "--setup", "/no/such.sql"}, "setup"},
		{[]string{"--setup", "x.sql"}, "go with --log"},
		{[]string{"--format", "csvlog"}, "go with --log"},
		{[]string{"--timezone", "Asia/Shanghai"}, "go with --log"},
		{[]string{"--log", log, "--timezone", "Mars/Olympus_Mons"}, "--timezone \"Mars/Olympus_Mons\""},
	} {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), IO{Stdout: &stdout, Stderr: &stderr}, append([]string{"sweep"}, tt.args...))
		if code != ExitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("sweep %v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), ExitUsage, tt.want)
		}
	}
}

// The command end to end with --log on a throwaway cluster: a pgbench
// capture (select-only, prepared), its tables made with --init, every
// output. A second table made by --setup shows the setup ran.
func TestSweepLogCommand(t *testing.T) {
	// Functional: it checks the outputs, not what the steps measured
	// (issue 44: make test's sequential time).
	parallelCase(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	log := sweeptest.PgbenchLog(ctx, t, "select-only", "prepared")
	dir := t.TempDir()
	setup := filepath.Join(dir, "setup.sql")
	writeFile(t, setup, []byte("CREATE TABLE setup_ran (id int);\nINSERT INTO setup_ran VALUES (1);\n"))
	jsonPath, htmlPath := filepath.Join(dir, "sweep.json"), filepath.Join(dir, "sweep.html")
	var stdout, stderr bytes.Buffer
	code := Run(ctx, IO{Stdout: &stdout, Stderr: &stderr}, []string{"sweep",
		"--log", log, "--format", "csvlog", "--init", "--scale", "1", "--setup", setup,
		"--clients", "1,2,4", "--warmup", "0s", "--duration", "1s", "--json", jsonPath, "--html", htmlPath})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	t.Logf("\n%s%s", stderr.String(), stdout.String())
	for _, want := range []string{"log postgresql-", "stmt/s", "sessions", "peak:", "TPS vs clients"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "pgbench -i -s 1, setup "+setup) {
		t.Errorf("progress does not say how the cluster was set up:\n%s", stderr.String())
	}
	var res struct {
		Workload map[string]any
		Configs  []struct {
			Steps []struct {
				Clients        int
				TPS            float64
				StatementsPerS float64 `json:"statements_per_s"`
				Failed         int64
				Sessions       struct {
					Planned  int
					MaxOpen  int     `json:"max_open"`
					MeanOpen float64 `json:"mean_open"`
				}
			}
		}
	}
	b := readFile(t, jsonPath)
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Workload["kind"] != "log" || res.Workload["log"] != log || res.Workload["setup"] != setup || res.Workload["log_concurrency"] != float64(2) {
		t.Errorf("workload %v", res.Workload)
	}
	if len(res.Configs) != 1 || len(res.Configs[0].Steps) != 3 {
		t.Fatalf("JSON: %s", b)
	}
	for _, s := range res.Configs[0].Steps {
		// select-only: one statement a transaction, nothing fails.
		if s.TPS <= 0 || s.StatementsPerS < s.TPS*0.99 || s.StatementsPerS > s.TPS*1.01 || s.Failed != 0 ||
			s.Sessions.Planned != s.Clients || s.Sessions.MaxOpen != s.Clients {
			t.Errorf("step %+v", s)
		}
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil || !bytes.Contains(page, []byte("sweep-curve")) || !bytes.Contains(page, []byte("stmt/s")) {
		t.Errorf("HTML: %v, %d bytes", err, len(page))
	}
}

// TestSweepLogNothingMeasured: a log that yields no statement, or whose
// lines mostly fail the prefix, stops the sweep before any server starts,
// exit 4, as analyze and replay do.
func TestSweepLogNothingMeasured(t *testing.T) {
	dir := t.TempDir()
	noise := filepath.Join(dir, "noise.log")
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "2024-05-01 10:00:%02d.000 UTC [99] LOG:  checkpoint starting: time\n", i)
	}
	os.WriteFile(noise, []byte(b.String()), 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--log", noise, "--prefix", "%m [%p] "}, "no statement"},
		{[]string{"--log", smallLog, "--prefix", "%t [%p]: [%l-1] user=%u,db=%d "}, "no matching prefix"},
	} {
		code, _, stderr := runCLI(context.Background(), "", append([]string{"sweep", "--max-clients", "2"}, tt.args...)...)
		if code != ExitNoInput || !strings.Contains(stderr, "NOTHING MEASURED") || !strings.Contains(stderr, tt.want) {
			t.Errorf("sweep %v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr, ExitNoInput, tt.want)
		}
	}
}
