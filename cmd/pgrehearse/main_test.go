package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildBinary builds pgrehearse into a temporary directory: these tests
// check what only the process shows (signals, exit codes).
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pgrehearse")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestClosedStdout: with its standard output closed by the reader
// (pgrehearse analyze --json F LOG | head), the process is not killed by
// SIGPIPE: it writes its JSON and exits 0.
func TestClosedStdout(t *testing.T) {
	bin := buildBinary(t)
	out := filepath.Join(t.TempDir(), "a.json")
	cmd := exec.Command(bin, "analyze", "--top", "50", "--json", out, "../../internal/cli/testdata/analyze/small.log")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before the first write
	cmd.Stdout = w
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	if err != nil {
		t.Fatalf("exit: %v\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil || res["kind"] != "analysis" {
		t.Errorf("JSON %v: %.200s", err, b)
	}
}

func TestVersion(t *testing.T) {
	out, err := exec.Command(buildBinary(t), "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "pgrehearse version ") || !strings.Contains(string(out), "go1.") {
		t.Errorf("--version: %v: %q", err, out)
	}
}
