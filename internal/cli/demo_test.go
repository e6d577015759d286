package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestDemo runs the whole demo against a real server, with the analysis
// replaced by a check of what it is handed: a complete stderr log.
func TestDemo(t *testing.T) {
	var analyzed []string
	var logText string
	saved := runAnalyze
	t.Cleanup(func() { runAnalyze = saved })
	runAnalyze = func(ctx context.Context, stdio IO, paths []string) error {
		analyzed = paths
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			logText += string(b)
		}
		return nil
	}

	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), IO{Stdout: &stdout, Stderr: &stderr}, []string{"demo", "--duration", "1s"})
	if code != ExitOK {
		t.Fatalf("demo exit code %d, want 0\n%s", code, stderr.String())
	}
	if len(analyzed) != 1 || !strings.HasSuffix(analyzed[0], ".log") {
		t.Fatalf("analyze got %v, want one stderr log", analyzed)
	}
	// The server was stopped before the analysis: the log ends with the
	// shutdown, and it has the workload's traffic.
	for _, s := range []string{"connection authorized", "execute insert_account", "database system is shut down"} {
		if !strings.Contains(logText, s) {
			t.Errorf("log handed to analyze lacks %q", s)
		}
	}
	for _, s := range []string{"demo: starting", "pgbench -M prepared", "demo: log: " + analyzed[0]} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("progress lacks %q:\n%s", s, stderr.String())
		}
	}
	// Without --keep, nothing is left behind.
	if _, err := os.Stat(analyzed[0]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("log %s still there after the demo: %v", analyzed[0], err)
	}
}

func TestDemoRejectsBadDuration(t *testing.T) {
	var stderr bytes.Buffer
	code := Run(context.Background(), IO{Stdout: &stderr, Stderr: &stderr}, []string{"demo", "--duration", "0s"})
	if code != ExitUsage {
		t.Errorf("demo --duration 0s: exit code %d, want %d\n%s", code, ExitUsage, stderr.String())
	}
}
