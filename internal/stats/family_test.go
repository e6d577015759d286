package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCallsVar: the calls' variance of a run's logarithm read off its
// bounds is the delta method's for the mean, and infinite without a
// bound.
func TestCallsVar(t *testing.T) {
	b := MeanBounds(10, 5, 100, 0.0005)
	want := math.Pow(5.0/10/math.Sqrt(100), 2)
	if got := CallsVar(b, 0.0005); math.Abs(got-want) > 1e-12 {
		t.Errorf("CallsVar of MeanBounds = %v, want %v", got, want)
	}
	if got := CallsVar(Bounds{Low: 0, High: 3}, 0.0005); !math.IsInf(got, 1) {
		t.Errorf("no lower bound: %v, want +Inf", got)
	}
	if got := CallsVar(Bounds{Low: 1, High: math.Inf(1)}, 0.0005); !math.IsInf(got, 1) {
		t.Errorf("no upper bound: %v, want +Inf", got)
	}
}

// TestPooledRoundNoise: the rounds' noise pooled over groups is found
// whatever the calls add to each run, a group of few calls weighing
// little; it is 0 when the calls explain the runs' spread, and its
// degrees of freedom are the runs less one a group.
func TestPooledRoundNoise(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 5))
	for _, tau := range []float64{0, 0.02, 0.05, 0.10} {
		var groups []LogRuns
		for g := range 200 {
			// Half the groups with quiet calls, half with calls
			// that vary by 0.3 (a few calls of a wide query).
			cv := 0.0001
			if g%2 == 1 {
				cv = 0.09
			}
			var lr LogRuns
			for range 3 {
				lr.Logs = append(lr.Logs, float64(g)+tau*r.NormFloat64()+math.Sqrt(cv)*r.NormFloat64())
				lr.Vars = append(lr.Vars, cv)
			}
			groups = append(groups, lr)
		}
		n := PooledRoundNoise(groups)
		if n.DF != 400 {
			t.Errorf("tau %v: df %d, want 400", tau, n.DF)
		}
		// 400 degrees of freedom: the estimate within about 15% of
		// the truth (an absolute 0.01 near 0).
		if got := math.Sqrt(n.Tau2); math.Abs(got-tau) > 0.15*tau+0.01 {
			t.Errorf("tau %v: pooled %v", tau, got)
		}
	}
	// Runs without a bound are left out, and a group with fewer than
	// two runs left.
	n := PooledRoundNoise([]LogRuns{
		{Logs: []float64{0, 0.1, 0.2}, Vars: []float64{0, math.Inf(1), 0}},
		{Logs: []float64{1}, Vars: []float64{0}},
		{Logs: []float64{2, 2.1}, Vars: []float64{math.Inf(1), 0}},
	})
	if n.DF != 1 || math.Abs(n.Tau2-0.02) > 1e-9 {
		t.Errorf("pooled %+v, want the variance of 0 and 0.2 (0.02) on 1 degree of freedom", n)
	}
	if n := PooledRoundNoise(nil); n.DF != 0 || n.Tau2 != 0 {
		t.Errorf("nothing to pool: %+v", n)
	}
}

// TestFamilyInterval: the change of the geometric means with Student's
// t at the family's level, each side's variance the pooled noise plus
// its calls' over the runs; open without a bound.
func TestFamilyInterval(t *testing.T) {
	x := LogRuns{Logs: []float64{0, 0.01, -0.01}, Vars: []float64{0, 0, 0}}
	y := LogRuns{Logs: []float64{0.5, 0.51, 0.49}, Vars: []float64{0.0003, 0.0003, 0.0003}}
	noise := RoundNoise{Tau2: 0.0025, DF: 200}
	ratio, lo, hi, ok := FamilyInterval(x, y, noise, DefaultAlpha, 100)
	se := math.Sqrt(0.0025/3 + (0.0025+0.0003)/3)
	w := tQuantile(1-0.0005, 200) * se
	if !ok || math.Abs(ratio-math.Exp(0.5)) > 1e-12 || math.Abs(lo-math.Exp(0.5-w)) > 1e-12 || math.Abs(hi-math.Exp(0.5+w)) > 1e-12 {
		t.Errorf("FamilyInterval = %v %v %v %v, want %v %v %v", ratio, lo, hi, ok, math.Exp(0.5), math.Exp(0.5-w), math.Exp(0.5+w))
	}
	if FamilyAlpha(DefaultAlpha, 100) != 0.0005 {
		t.Errorf("FamilyAlpha(0.10, 100) = %v, want 0.0005", FamilyAlpha(DefaultAlpha, 100))
	}
	y.Vars[1] = math.Inf(1)
	if _, lo, hi, ok := FamilyInterval(x, y, noise, DefaultAlpha, 100); !ok || lo != 0 || !math.IsInf(hi, 1) {
		t.Errorf("a run without a bound: %v %v %v, want 0, +Inf", lo, hi, ok)
	}
	if _, _, _, ok := FamilyInterval(x, y, RoundNoise{}, DefaultAlpha, 100); ok {
		t.Error("no pooled noise: want no interval")
	}
	// Student's t: 12.706 at 97.5% with one degree of freedom, 2.776
	// with 4, the normal's 3.29 at 99.95% with many.
	for _, tt := range []struct {
		p    float64
		df   int
		want float64
	}{{0.975, 1, 12.706}, {0.975, 4, 2.776}, {0.9995, 100000, 3.2905}} {
		if got := tQuantile(tt.p, tt.df); math.Abs(got-tt.want) > 0.001 {
			t.Errorf("tQuantile(%v, %d) = %v, want %v", tt.p, tt.df, got, tt.want)
		}
	}
}
