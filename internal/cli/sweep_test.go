package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/sweep"
)

func TestSweepUsageErrors(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.sql")
	writeFile(t, script, []byte("SELECT 1;\n"))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-b", "select-only", "-f", script}, "not both"},
		{[]string{"-M", "fast"}, "query mode"},
		{[]string{"-f", "/no/such/script.sql"}, "script"},
		{[]string{"--clients", "1,x"}, "not a positive number"},
		{[]string{"--clients", "1,2", "--max-clients", "8"}, "not both"},
		{[]string{"--duration", "1500ms"}, "whole seconds"},
		{[]string{"--warmup", "-1s"}, "whole seconds"},
		{[]string{"--cliff", "1.5"}, "between 0 and 1"},
		{[]string{"--repeat", "0"}, "--repeat must be at least 1"},
		{[]string{"--scale", "0"}, "scale must be at least 1"},
		{[]string{"--init"}, "--init needs --target"},
		{[]string{"--compare", "A:jit=on"}, "two configurations"},
		{[]string{"--compare", "A:jit=on", "--compare", "A:jit=off"}, "given twice"},
		{[]string{"--compare", "A jit=on", "--compare", "B:jit=off"}, "NAME:setting=value"},
		{[]string{"extra"}, "unknown command"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := Run(context.Background(), IO{Stdout: &stdout, Stderr: &stderr}, append([]string{"sweep"}, tt.args...))
		if code != ExitUsage || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("sweep %v: exit %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), ExitUsage, tt.want)
		}
	}
}

// The command end to end on a throwaway cluster, with a custom script,
// no warm-up, and every output.
func TestSweepCommand(t *testing.T) {
	// Functional: it checks the outputs, not what the steps measured
	// (issue 44: make test's sequential time).
	parallelCase(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "point.sql")
	writeFile(t, script, []byte("\\set aid random(1, 100000)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"))
	jsonPath, htmlPath := filepath.Join(dir, "sweep.json"), filepath.Join(dir, "sweep.html")
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), IO{Stdout: &stdout, Stderr: &stderr}, []string{"sweep",
		"-f", script, "-M", "prepared", "--clients", "1,2", "--warmup", "0s", "--duration", "1s", "--scale", "1",
		"--json", jsonPath, "--html", htmlPath})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	for _, want := range []string{"configuration default: the server's settings", "peak:", "cliff:", "TPS vs clients"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("tables lack %q:\n%s", want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "sweep: default:   2 clients:") {
		t.Errorf("progress:\n%s", stderr.String())
	}
	res, b := readSweepJSON(t, jsonPath)
	if res.Kind != "sweep" || res.Workload["script"] != script || res.Workload["mode"] != "prepared" ||
		len(res.Configs) != 1 || len(res.Configs[0].Steps) != 2 || res.Configs[0].Steps[1].TPS <= 0 {
		t.Errorf("JSON: %s", b)
	}
	page, err := os.ReadFile(htmlPath)
	if err != nil || !bytes.Contains(page, []byte("sweep-curve")) {
		t.Errorf("HTML: %v, %d bytes", err, len(page))
	}
}

// sweepJSON is what the tests read of sweep's --json.
type sweepJSON struct {
	Kind     string
	Workload map[string]any
	Configs  []struct {
		Name  string
		Steps []struct {
			Clients int
			TPS     float64
		}
	}
}

// readSweepJSON reads sweep's --json at path, and returns it with its
// text, for messages.
func readSweepJSON(t *testing.T, path string) (sweepJSON, []byte) {
	t.Helper()
	b := readFile(t, path)
	var res sweepJSON
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res, b
}

// TestSweepAA (by hand: PGREHEARSE_SWEEP_AA=1, under a minute): an A/A
// sweep, two identical configurations on throwaway clusters, three steps
// per client count: every b/a is "~", and the two sides' peaks, knees and
// cliffs agree within their intervals (issue 38). Its steps of one second
// are at the mercy of the machine: with other tests' servers running on
// two cores (load 11), one run of two found the two clusters' 4-client
// steps apart by 1.46x, every step of one side below every step of the
// other. The longer runs of the issue, by hand: -b select-only --clients
// 1,2,4,8,16 --repeat 3 --warmup 1s --duration 3s.
func TestSweepAA(t *testing.T) {
	if os.Getenv("PGREHEARSE_SWEEP_AA") == "" {
		t.Skip("by hand: PGREHEARSE_SWEEP_AA=1 (steps of one second, which a loaded machine moves by more than their noise)")
	}
	jsonPath := filepath.Join(t.TempDir(), "aa.json")
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), IO{Stdout: &stdout, Stderr: &stderr}, []string{"sweep",
		"-b", "select-only", "--clients", "1,4", "--repeat", "3", "--warmup", "0s", "--duration", "1s", "--scale", "1",
		"--compare", "a:work_mem=4MB", "--compare", "b:work_mem=4MB", "--json", jsonPath})
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	t.Logf("%s", stdout.String())
	b := readFile(t, jsonPath)
	var res sweep.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Configs) != 2 || len(res.Configs[0].Steps) != 6 || res.Plan.Repeat != 3 {
		t.Fatalf("JSON: %s", b)
	}
	for _, c := range res.Comparison {
		if d, ok := c.Change["b"]; !ok || !d.Same {
			t.Errorf("%d clients: b/a %+v, want ~", c.Clients, d)
		}
	}
	a, bb := res.Configs[0], res.Configs[1]
	if a.Peak.Hi < bb.Peak.Lo || bb.Peak.Hi < a.Peak.Lo {
		t.Errorf("peaks apart: %+v and %+v", a.Peak, bb.Peak)
	}
	if a.Knee.Hi < bb.Knee.Lo || bb.Knee.Hi < a.Knee.Lo {
		t.Errorf("knees apart: %+v and %+v", a.Knee, bb.Knee)
	}
	if a.Cliff.Found || bb.Cliff.Found {
		t.Errorf("a cliff on a select-only sweep up to 4 clients: %+v and %+v", a.Cliff, bb.Cliff)
	}
}
