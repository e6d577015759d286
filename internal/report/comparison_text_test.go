package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/goldentest"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/results/resultstest"
)

// The tests' replay results: see package resultstest.
var (
	row        = resultstest.Row
	serverRows = resultstest.ServerRows()
	clientRows = resultstest.ClientRows()
)

func replayRun(t *testing.T, name string, extra map[string]any, queries []map[string]any, client []map[string]any) *compare.Run {
	t.Helper()
	return resultstest.Replay(t, name, extra, queries, client)
}

// TestRoundTripsText: the summary prints the table after the regressions,
// under a heading that says what it is, capped at top; see
// testdata/roundtrips.golden (go test -update rewrites it).
func TestRoundTripsText(t *testing.T) {
	base := replayRun(t, "base.json", nil, serverRows, nil)
	base.LatencySource = compare.LatencyServerLog
	// slow regressed server-side: its typical call is beyond the
	// baseline's p95.
	slower := append([]map[string]any{row("slow", 20, 30, 40)}, serverRows[0], serverRows[2], serverRows[3], serverRows[4])
	slowerClient := append([]map[string]any{row("slow", 20, 30.8, 41)}, clientRows[0], clientRows[2], clientRows[3], clientRows[4])
	cand := replayRun(t, "cand.json", nil, slower, slowerClient)
	rep, err := compare.Compare(base, cand, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteComparison(&b, rep, 2); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "roundtrips.golden")
	goldentest.Check(t, golden, b.String())

	// Nothing about round trips for a replay without them, nor with
	// --top 0.
	for _, c := range []struct {
		rep *compare.Report
		top int
	}{{compare.Summarize(base), 10}, {rep, 0}} {
		b.Reset()
		if err := WriteComparison(&b, c.rep, c.top); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "round trip") {
			t.Errorf("top %d: round trips shown:\n%s", c.top, b.String())
		}
	}
}

// TestComparisonWarnings: every warning of a comparison or a summary is a
// WARNING line of the text (here the caveat of a speed-0 replay on the
// target's machine, in either run and alone).
func TestComparisonWarnings(t *testing.T) {
	rows := []map[string]any{row("a", 5000, 0.1, 0.1)}
	run := replayRun(t, "run.json", map[string]any{"speed": 0, "client_cpu_seconds": 3, "target_local": true, "statements": map[string]int64{"total": 5000}}, rows, nil)
	other := replayRun(t, "other.json", map[string]any{"speed": 1, "statements": map[string]int64{"total": 5000}}, rows, nil)
	var reps []*compare.Report
	for _, pair := range [][2]*compare.Run{{other, run}, {run, other}} {
		rep, err := compare.Compare(pair[0], pair[1], compare.Options{})
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, rep)
	}
	reps = append(reps, compare.Summarize(run))
	for i, rep := range reps {
		if len(rep.Warnings) == 0 {
			t.Fatalf("report %d: no warning to show", i)
		}
		var text strings.Builder
		if err := WriteComparison(&text, rep, 5); err != nil {
			t.Fatal(err)
		}
		for _, w := range rep.Warnings {
			if !strings.Contains(text.String(), "WARNING: "+WarningText(w)+"\n") {
				t.Errorf("report %d: the text does not show the warning %q:\n%s", i, WarningText(w), text.String())
			}
		}
	}
}

// TestResolutionText: with the noise measured (three rounds a side), a
// regression's row shows the interval of the application's next run
// beside the mean's and the smallest change its rounds could tell, the
// run says what it could tell in a line, and the legend says which
// interval the verdict judges; see testdata/resolution.golden (go test
// -update rewrites it). One run a side shows none of it
// (TestRoundTripsText's golden).
func TestResolutionText(t *testing.T) {
	rep := resolvedComparison(t)
	var b strings.Builder
	if err := WriteComparisonDetails(&b, rep, 10); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"next run", "can tell", "Smallest change these rounds could tell from none (80% of the time, at the 90% level judged)", "the verdict judges the mean's interval", "Tightest rules an identical candidate would pass 80% of the time with these rounds: mean>+"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	goldentest.Check(t, filepath.Join("testdata", "resolution.golden"), out)
}

// resolvedComparison is three rounds a side, the noise measured: "slow"
// 3x slower, "busy" about as fast.
func resolvedComparison(t *testing.T) *compare.Report {
	t.Helper()
	var base, cand []*compare.Run
	for i, f := range []float64{1, 1.04, 0.97} {
		rows := []map[string]any{row("slow", 200, 10*f, 14*f), row("busy", 5000, 0.2*(2-f), 0.4*(2-f))}
		base = append(base, replayRun(t, "base"+string(rune('1'+i))+".json", nil, rows, nil))
		rows = []map[string]any{row("slow", 200, 30*f, 42*f), row("busy", 5000, 0.2*f, 0.4*f)}
		cand = append(cand, replayRun(t, "cand"+string(rune('1'+i))+".json", nil, rows, nil))
	}
	rep, err := compare.Runs(base, cand, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Resolution == nil || !rep.Noise.Measured {
		t.Fatalf("resolution %+v, noise %+v", rep.Resolution, rep.Noise)
	}
	return rep
}

// TestUndecidedReach: a rehearsal left undecided by a rule on the mean
// says, under its undecided lines, the tightest rule on the mean an
// identical candidate would pass with its rounds; a rule it cleared
// says nothing of it.
func TestUndecidedReach(t *testing.T) {
	var base, cand []*compare.Run
	for i, f := range []float64{1, 1.08, 0.93} {
		g := []float64{1.05, 0.94, 1.01}[i]
		base = append(base, replayRun(t, "base"+string(rune('1'+i))+".json", nil, []map[string]any{row("q", 500, 10*f, 14*f)}, nil))
		cand = append(cand, replayRun(t, "cand"+string(rune('1'+i))+".json", nil, []map[string]any{row("q", 500, 10*g, 14*g)}, nil))
	}
	for _, tc := range []struct {
		rule string
		want bool
	}{{"mean>+5%", true}, {"mean>+200%", false}} {
		rules, err := judge.ParsePairRules([]string{tc.rule})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := compare.Runs(base, cand, compare.Options{Rules: rules, Look: 1, Looks: 6})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := WriteVerdict(&b, rep, nil); err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(b.String(), "with these rounds an identical candidate would pass mean>+")
		if got != tc.want || tc.want && rep.Verdict.Status != compare.VerdictUndecided {
			t.Errorf("%s: verdict %s, the rule identical sides pass said %v, want %v:\n%s", tc.rule, rep.Verdict.Status, got, tc.want, b.String())
		}
		t.Logf("%s:\n%s", tc.rule, b.String())
	}
}
