package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestNothingMeasured: a log whose every line fails the given prefix, a
// log mostly of unreadable lines and an empty log make analyze, events
// and replay exit 4 with a message that names the reason and what to try;
// the analysis is still written, marked incomplete, and report refuses to
// judge it (exit 5), or with --allow-partial never calls it a pass.
func TestNothingMeasured(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := readFile(t, smallLog)
	noisy := filepath.Join(dir, "noisy.log")
	var b strings.Builder
	b.Write(good)
	for range 10 {
		b.WriteString("Jan  1 00:00:00 host kernel: something else entirely\n")
	}
	os.WriteFile(noisy, []byte(b.String()), 0o644)
	empty := filepath.Join(dir, "empty.log")
	os.WriteFile(empty, nil, 0o644)

	wrongPrefix := []string{"--prefix", "%t [%p]: [%l-1] user=%u,db=%d "}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"analyze, wrong prefix", append(append([]string{"analyze"}, wrongPrefix...), smallLog),
			[]string{"no statement", `"no matching prefix"`, "the first at line 1:\n  2024-05-01 10:00:00.000 UTC [101] app@shop/psql", "--prefix"}},
		{"events, wrong prefix", append(append([]string{"events", "--count"}, wrongPrefix...), smallLog),
			[]string{"no statement", "--prefix"}},
		{"replay, wrong prefix", append(append([]string{"replay", "--dry-run"}, wrongPrefix...), smallLog),
			[]string{"no statement", "--prefix"}},
		{"analyze, mostly unreadable", []string{"analyze", "--prefix", testPrefix, noisy},
			[]string{"10 of 28 lines (35.7%) could not be read", "more than the 10.0% allowed"}},
		{"analyze, empty", []string{"analyze", "--format", "stderr", "--prefix", testPrefix, empty},
			[]string{"the logs are empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(ctx, "", tt.args...)
			if code != ExitNoInput {
				t.Errorf("exit %d, want %d", code, ExitNoInput)
			}
			for _, w := range append(tt.want, "NOTHING MEASURED") {
				if !strings.Contains(stderr, w) {
					t.Errorf("message lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	// A compressed log cut short: what was read is analyzed, marked
	// partial, and the run says where the file broke.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	for range 200 {
		zw.Write(good)
	}
	zw.Close()
	cut := filepath.Join(dir, "cut.log.gz")
	os.WriteFile(cut, gz.Bytes()[:gz.Len()*2/3], 0o644)
	cutJSON := filepath.Join(dir, "cut.json")
	code, _, stderr := runCLI(ctx, "", "analyze", "--prefix", testPrefix, "--json", cutJSON, cut)
	if code != ExitIncomplete || !strings.Contains(stderr, "INCOMPLETE INPUT") {
		t.Errorf("cut .gz: exit %d\n%s", code, stderr)
	}
	if r, err := results.ReadFile(cutJSON); err != nil || !r.Partial || r.Statements.Total == 0 || len(r.Incomplete) == 0 {
		t.Errorf("cut .gz result: %v, partial %v, %d statements, incomplete %q", err, r != nil && r.Partial, r.Statements.Total, r.Incomplete)
	}

	// Allowed more unreadable lines, the noisy log passes.
	if code, _, stderr := runCLI(ctx, "", "analyze", "--prefix", testPrefix, "--max-skipped", "50", noisy); code != ExitOK {
		t.Errorf("--max-skipped 50: exit %d\n%s", code, stderr)
	}

	base, bad := filepath.Join(dir, "base.json"), filepath.Join(dir, "bad.json")
	if code, _, stderr := runCLI(ctx, "", "analyze", "--prefix", testPrefix, "--json", base, smallLog); code != ExitOK {
		t.Fatalf("baseline: exit %d\n%s", code, stderr)
	}
	runCLI(ctx, "", append(append([]string{"analyze", "--json", bad}, wrongPrefix...), smallLog)...)
	r, err := results.ReadFile(bad)
	if err != nil || len(r.Incomplete) == 0 || r.Statements.Total != 0 {
		t.Fatalf("the empty analysis is not marked incomplete: %v %+v", err, r)
	}
	code, stdout, stderr := runCLI(ctx, "", "report", base, bad, "--fail-on", "p95>+20%")
	if code != ExitIncomplete || !strings.Contains(stderr, "REPORT REFUSED") || !strings.Contains(stderr, "holds no statement") || strings.Contains(stdout, "PASS") {
		t.Errorf("report on an empty candidate: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(ctx, "", "report", base, bad, "--allow-partial")
	if code != ExitOK || strings.Contains(stdout, "PASS") || !strings.Contains(stdout, "NOT JUDGED, INCOMPLETE") {
		t.Errorf("--allow-partial: exit %d\n%s%s", code, stdout, stderr)
	}
}
