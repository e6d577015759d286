package analyze_test

import (
	"bytes"
	"context"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/analyze"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// TestSummary: the terminal summary of an analysis (internal/report's
// WriteAnalysis) of a generated workload shows its line accounting, its
// top lists and its errors, and flags a partial or miscounted one. It
// lives here for the workload generator.
func TestSummary(t *testing.T) {
	evs := analyze.Workload(5000, 11)
	src := analyze.NewSliceSource("x.log", evs, results.LineCounts{Total: 6000, Parsed: 5900, Skipped: map[results.LineSkip]int64{"checkpoint": 60, "autovacuum": 40}})
	res, err := analyze.Analyze(context.Background(), []event.Source{src}, analyze.Options{Jobs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := report.WriteAnalysis(&buf, res, 3); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"lines       6,000 read, 5,900 parsed, 100 skipped",
		"60  checkpoint\n",
		"Top 3 queries by total time",
		"Top 3 queries by calls",
		"Top 3 queries by errors",
		"SELEC $1",
		"errors      ",
		"42601 ",
		res.Queries[0].Fingerprint,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") || strings.Contains(out, "WARNING") || strings.Contains(out, "PARTIAL") {
		t.Errorf("unexpected escape, warning or partial mark:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if utf8Len(line) > 170 {
			t.Errorf("line too long (%d): %s", utf8Len(line), line)
		}
	}

	res.Partial = true
	res.Lines.Total++
	buf.Reset()
	report.WriteAnalysis(&buf, res, 3)
	if !strings.Contains(buf.String(), "PARTIAL") || !strings.Contains(buf.String(), "WARNING: 1 lines are not accounted for") {
		t.Errorf("partial, miscounted summary not flagged:\n%s", buf.String())
	}
}

func utf8Len(s string) int { return len([]rune(s)) }
