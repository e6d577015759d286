package rehearse

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/results/resultstest"
)

// judgeOutcome is a rehearsal of n rounds a side, alike but for a
// round's own noise (a comparison refuses two identical results).
func judgeOutcome(t *testing.T, n int) *Outcome {
	out := &Outcome{Rounds: n}
	rows := func(i int) []map[string]any {
		d := 0.001 * float64(i)
		return []map[string]any{resultstest.Row("busy", 500, 0.2+d, 0.4+d), resultstest.Row("slow", 20, 10+d, 14+d)}
	}
	for i := range n {
		out.Control = append(out.Control, resultstest.Replay(t, "control", nil, rows(2*i), nil))
		out.Candidate = append(out.Candidate, resultstest.Replay(t, "candidate", nil, rows(2*i+1), nil))
	}
	return out
}

// TestJudgeRehearsal: rehearse.Judge reports the verdict once it is
// whole, decides what can be tried (a try on a candidate that is not
// reset is not, and runs no round), tries nothing after a partial
// rehearsal, stops at a stage's error, and compares nothing when a side
// finished no round. No server: no plans, no catalog.
func TestJudgeRehearsal(t *testing.T) {
	ctx := context.Background()
	try, err := fixes.ParseTry("idx:CREATE INDEX ON t (a)")
	if err != nil {
		t.Fatal(err)
	}
	opts := func(stages *[]Stage) JudgeOptions {
		return JudgeOptions{MinCalls: 1, Plans: &PlansOptions{}, Findings: true, Fixes: true, FixRounds: 1, Tries: []fixes.Fix{try},
			OnStage: func(s Stage, j *Judgement) error {
				*stages = append(*stages, s)
				if s == StageJudged && (j.Verdict == nil || j.Verdict.Comparison == nil) {
					t.Error("judged without a comparison")
				}
				return nil
			}}
	}

	t.Run("whole", func(t *testing.T) {
		var stages []Stage
		out := judgeOutcome(t, 3)
		j, err := Judge(ctx, Config{}, out, opts(&stages))
		if err != nil {
			t.Fatal(err)
		}
		if want := []Stage{StageJudged, StageFixesUnresettable}; !slices.Equal(stages, want) {
			t.Errorf("stages %v, want %v", stages, want)
		}
		if j.Verdict.Plans != nil || j.Verdict.Findings == nil || j.Triable != 1 || j.Fixes != nil || len(out.Fixes) != 0 {
			t.Errorf("plans %v, findings %v, triable %d, fixes %v, fix rounds %d: want no plans (no targets), findings, 1 triable, none tried",
				j.Verdict.Plans != nil, j.Verdict.Findings != nil, j.Triable, j.Fixes, len(out.Fixes))
		}
		if j.Verdict.Failed() || j.Verdict.Diverged() || len(j.Control) != 3 || len(j.Candidate) != 3 {
			t.Errorf("verdict %s on %d and %d runs, want a pass on 3 and 3", j.Verdict.Comparison.Verdict.Status, len(j.Control), len(j.Candidate))
		}
	})

	t.Run("partial", func(t *testing.T) {
		var stages []Stage
		out := judgeOutcome(t, 2)
		out.Rounds, out.Partial = 3, true
		j, err := Judge(ctx, Config{}, out, opts(&stages))
		if err != nil {
			t.Fatal(err)
		}
		if want := []Stage{StageJudged}; !slices.Equal(stages, want) {
			t.Errorf("stages %v, want %v: nothing is tried after a partial rehearsal", stages, want)
		}
		if j.Verdict.Comparison.Verdict.Status == compare.VerdictPass || len(j.Verdict.Comparison.Incomplete) == 0 {
			t.Errorf("a partial rehearsal's verdict %s, incomplete %v: never a pass", j.Verdict.Comparison.Verdict.Status, j.Verdict.Comparison.Incomplete)
		}
	})

	t.Run("stage error", func(t *testing.T) {
		stop := errors.New("stop")
		o := opts(new([]Stage))
		o.OnStage = func(Stage, *Judgement) error { return stop }
		if _, err := Judge(ctx, Config{}, judgeOutcome(t, 3), o); !errors.Is(err, stop) {
			t.Errorf("err %v, want the stage's", err)
		}
	})

	t.Run("no comparison", func(t *testing.T) {
		var stages []Stage
		out := judgeOutcome(t, 1)
		out.Candidate = []*results.Result{}
		j, err := Judge(ctx, Config{}, out, opts(&stages))
		if err != nil || !j.NoComparison() || j.Verdict != nil || len(stages) != 0 {
			t.Errorf("err %v, no comparison %v, verdict %v, stages %v; want no comparison, no verdict, no stage", err, j.NoComparison(), j.Verdict, stages)
		}
	})
}
