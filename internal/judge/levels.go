package judge

import (
	"errors"
	"fmt"
	"math"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Level is one load level of a side: the load factor k asked of the
// target (1: the workload's own pace) and the measurements of its rounds
// there, in order.
type Level struct {
	K      float64       `json:"k"`
	Rounds []Measurement `json:"rounds"`
}

// LevelOf is the level at k of the replays' results, each measured
// (Measure) as one round.
func LevelOf(k float64, rounds ...*results.Result) Level {
	l := Level{K: k, Rounds: make([]Measurement, len(rounds))}
	for i, res := range rounds {
		l.Rounds[i] = Measure(res)
	}
	return l
}

// LevelVerdict is the verdict of one level above or below k = 1.
type LevelVerdict struct {
	K float64 `json:"k"`
	// Verdict is the level's: that of its round with the largest margin
	// (the first of them on a tie), so that the level held only when
	// every round held.
	Verdict StepVerdict `json:"verdict"`
	// Rounds are each round's verdict, in the level's order.
	Rounds []StepVerdict `json:"rounds"`
}

// LevelsVerdict is the verdict of a side's load levels: the baseline of
// its rounds at k = 1, and every other level judged against it.
type LevelsVerdict struct {
	Baseline Baseline `json:"baseline"`
	// Levels are the levels other than k = 1, in the order given.
	Levels []LevelVerdict `json:"levels"`
}

// ErrNoBaselineLevel is why Levels refuses levels without one at k = 1:
// every level is judged against the same target at its own pace.
var ErrNoBaselineLevel = errors.New("judge: no load level at k = 1 to judge the others against")

// Levels judges N load levels of one side at once under slo: the rounds
// of the levels at k = 1 (every one of them, in order) are the side's
// baseline (NewBaseline), and each round of every other level is judged
// against it (Step; cores is the number of CPUs the replayer may use).
// It is what a headroom search does step by step, for levels already
// measured. Levels without one at k = 1 are refused
// (ErrNoBaselineLevel), as are a level without rounds and a load factor
// that is not a positive number.
func Levels(levels []Level, slo SLO, cores int) (LevelsVerdict, error) {
	var base []Measurement
	for i, l := range levels {
		if !(l.K > 0) || math.IsInf(l.K, 1) {
			return LevelsVerdict{}, fmt.Errorf("judge: load level %d: k = %g is not a positive load factor", i+1, l.K)
		}
		if len(l.Rounds) == 0 {
			return LevelsVerdict{}, fmt.Errorf("judge: load level %d (k = %g) has no rounds", i+1, l.K)
		}
		if l.K == 1 {
			base = append(base, l.Rounds...)
		}
	}
	if len(base) == 0 {
		return LevelsVerdict{}, ErrNoBaselineLevel
	}
	out := LevelsVerdict{Baseline: NewBaseline(base, slo), Levels: []LevelVerdict{}}
	for _, l := range levels {
		if l.K == 1 {
			continue
		}
		lv := LevelVerdict{K: l.K, Rounds: make([]StepVerdict, len(l.Rounds))}
		for i, m := range l.Rounds {
			lv.Rounds[i] = Step(out.Baseline, m, l.K, slo, cores)
			if i == 0 || lv.Rounds[i].Margin > lv.Verdict.Margin {
				lv.Verdict = lv.Rounds[i]
			}
		}
		out.Levels = append(out.Levels, lv)
	}
	return out, nil
}
