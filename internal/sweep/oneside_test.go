package sweep

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestKneeAndCliffBothSidesOrNeither: an A/A comparison (two identical
// configurations, three steps per client count, each step's noise its
// own, from 3% to 40%, as on a machine shared with other work) claims a
// knee, and a cliff, on both sides or on neither whenever no client
// count's TPS or power tells the two curves apart: a real A/A sweep of 1
// to 8 clients called a knee at 2 clients on side a and none on side b.
// The one-sided claim is then not claimed, and says which curve it
// cannot be told from (Indistinct). Curves that do differ keep their own
// answers: a configuration whose TPS falls past 2 clients keeps its knee
// and its cliff beside one that keeps growing.
func TestKneeAndCliffBothSidesOrNeither(t *testing.T) {
	functionalCase(t)
	rng := rand.New(rand.NewPCG(45, 66))
	clients := []int{1, 2, 4, 8}
	noisy := func(s shape) []Step { return noisySteps(rng, clients, s) }
	const trials = 2000
	var kneeOneSided, cliffOneSided, indistinct int
	for i := range trials {
		s := shape{peak: 10000, rise: []float64{1, 2, 4}[i%3]}
		if i%2 == 1 {
			s.fall, s.gamma = 4, 1
		}
		res := &Result{Configs: []ConfigRun{{Name: "a", Steps: noisy(s)}, {Name: "b", Steps: noisy(s)}}}
		Judge(res, 3, 0.8)
		a, b := res.Configs[0], res.Configs[1]
		for _, c := range res.Configs {
			if c.Knee.Indistinct != "" || c.Cliff.Indistinct != "" {
				indistinct++
				break
			}
		}
		if !curvesApart(res) {
			if a.Knee.Found != b.Knee.Found {
				kneeOneSided++
			}
			if a.Cliff.Found != b.Cliff.Found {
				cliffOneSided++
			}
		}
	}
	t.Logf("A/A of %d sweeps (1 to 8 clients, 3 steps each, 3%% to 40%% noise a step): a knee on one side only where no client count told the curves apart in %d, a cliff in %d; %d sweeps said a knee or a cliff was not told apart",
		trials, kneeOneSided, cliffOneSided, indistinct)
	if kneeOneSided > 0 || cliffOneSided > 0 {
		t.Errorf("a knee on one side only in %d A/A sweeps, a cliff in %d, where the curves could not be told apart", kneeOneSided, cliffOneSided)
	}
	if indistinct == 0 {
		t.Error("no sweep had a one-sided knee or cliff to withhold: the test no longer reaches the rule")
	}

	// Curves that differ: a falls past 2 clients, b keeps growing.
	kept := 0
	for range 200 {
		fall := shape{peak: 10000, rise: 2, fall: 2, gamma: 1.5}
		grow := shape{peak: 10000, rise: 8}
		res := &Result{Configs: []ConfigRun{{Name: "a", Steps: sweepOf(rng, fall, clients, 3, 0.03)}, {Name: "b", Steps: sweepOf(rng, grow, clients, 3, 0.03)}}}
		Judge(res, 3, 0.8)
		a := res.Configs[0]
		if a.Knee.Found && a.Cliff.Found && a.Knee.Indistinct == "" && a.Cliff.Indistinct == "" {
			kept++
		}
	}
	t.Logf("curves that differ: a's knee and cliff kept in %d of 200 sweeps", kept)
	if kept < 190 {
		t.Errorf("a knee and a cliff on the one side whose curve differs kept in %d of 200 sweeps, want 190", kept)
	}
}

// curvesApart: some client count's TPS, or its TPS over latency, tells
// the two configurations of res apart beyond the noise.
func curvesApart(res *Result) bool {
	for _, c := range res.Comparison {
		if d, ok := c.Change[res.Configs[1].Name]; ok && !d.Same {
			return true
		}
	}
	return curvesDiffer(res.Configs[0].Steps, res.Configs[1].Steps)
}

// noisySteps are three rounds at each of clients on curve s, each round's
// TPS off the curve by a noise whose spread, drawn per round, is from 3%
// to 40% (log-uniform), as on a busy machine.
func noisySteps(rng *rand.Rand, clients []int, s shape) []Step {
	var steps []Step
	for _, c := range clients {
		for r := range 3 {
			sigma := math.Exp(math.Log(0.03) + rng.Float64()*(math.Log(0.4)-math.Log(0.03)))
			tps := s.tps(float64(c)) * math.Exp(rng.NormFloat64()*sigma)
			steps = append(steps, Step{Clients: c, Round: r + 1, TPS: tps, Latency: Latency{Mean: 1000 * float64(c) / tps}})
		}
	}
	return steps
}
