package report

import (
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestWriteReplay: the summary accounts for every statement, says where
// latencies were measured and, for client round trips, how to get
// server-side durations in the caller's words; a dry run says neither.
func TestWriteReplay(t *testing.T) {
	res := &results.Result{Kind: results.KindReplay, Replay: &results.Replay{Speed: 1, WallSeconds: 12.5}}
	res.Statements = results.StatementCounts{Total: 10, Executed: 7, Failed: 1, Skipped: map[string]int64{"parameters not logged": 2}}
	res.Sessions.Total = 3
	var b strings.Builder
	if err := WriteReplay(&b, res, Hints{TargetLog: "--target-log"}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Replay at speed 1, 12.5 s\n",
		"  statements: 10 total, 7 executed, 1 failed, 2 skipped\n",
		"    skipped, parameters not logged: 2\n",
		"  latency:    client round trips (network and client time included); --target-log gives server-side durations\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := WriteReplay(&b, res, Hints{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  latency:    client round trips (network and client time included)\n") {
		t.Errorf("summary without hints:\n%s", b.String())
	}
	res.DryRun = true
	b.Reset()
	if err := WriteReplay(&b, res, Hints{TargetLog: "--target-log"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "Replay (dry run: nothing was sent) at speed 1") || strings.Contains(b.String(), "latency:") {
		t.Errorf("dry run summary:\n%s", b.String())
	}
}
