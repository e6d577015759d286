package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// drawSide is n runs of a figure at level mu times exp(N(0, sigma²)).
func drawSide(r *rand.Rand, n int, mu, sigma float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = mu * math.Exp(sigma*r.NormFloat64())
	}
	return out
}

// The predictive interval holds what a next run shows: on synthetic
// rounds of a true 2x (log spread 0.3 a run, as a busy machine's short
// queries), the ratio of one fresh run a side falls inside the 90%
// PredictInterval in at least 90% of trials (within the simulation's
// error), and the ratio of the mean of three fresh pairs at least as
// often; the mean's own interval (Effect's rank interval) holds the true
// 2x at its level, but a fresh run's ratio much less often: the gap
// issue 76 found (2.19-2.40 against an application's 2.76x).
func TestPredictIntervalCovers(t *testing.T) {
	const sigma, truth, alpha = 0.3, 2.0, 0.10
	trials := trialsOf(3000)
	for _, n := range []int{2, 3, 5, 8, 16} {
		r := rand.New(rand.NewPCG(76, uint64(n)))
		var pairIn, pair3In, meanTruth, meanPair, ranked int
		for range trials {
			x, y := drawSide(r, n, 10, sigma), drawSide(r, n, 10*truth, sigma)
			_, low, high, ok := PredictInterval(x, y, alpha)
			if !ok || !(low < high) {
				t.Fatalf("%d rounds: PredictInterval %v %v %v", n, low, high, ok)
			}
			next := drawSide(r, 1, 10*truth, sigma)[0] / drawSide(r, 1, 10, sigma)[0]
			if low <= next && next <= high {
				pairIn++
			}
			var l3 float64
			for range 3 {
				l3 += math.Log(drawSide(r, 1, 10*truth, sigma)[0] / drawSide(r, 1, 10, sigma)[0])
			}
			if next3 := math.Exp(l3 / 3); low <= next3 && next3 <= high {
				pair3In++
			}
			if e := Effect(x, y, Options{Alpha: alpha}); e.RankInterval {
				ranked++
				if e.Low <= truth && truth <= e.High {
					meanTruth++
				}
				if e.Low <= next && next <= e.High {
					meanPair++
				}
			}
		}
		f := func(k, of int) float64 { return float64(k) / float64(max(of, 1)) }
		se := math.Sqrt(0.9 * 0.1 / float64(trials))
		t.Logf("%2d rounds a side: next run inside the predictive interval %.3f, mean of 3 next runs %.3f; the mean's interval held the truth %.3f, the next run %.3f (%d of %d with a rank interval)",
			n, f(pairIn, trials), f(pair3In, trials), f(meanTruth, ranked), f(meanPair, ranked), ranked, trials)
		if got := f(pairIn, trials); got < 1-alpha-4*se {
			t.Errorf("%d rounds: the next run fell inside the 90%% predictive interval in %.3f of trials", n, got)
		}
		if f(pair3In, trials) < f(pairIn, trials)-4*se {
			t.Errorf("%d rounds: the mean of 3 next runs inside in %.3f, fewer than one run's %.3f", n, f(pair3In, trials), f(pairIn, trials))
		}
		if ranked > 0 {
			if got := f(meanTruth, ranked); got < 1-alpha-4*se {
				t.Errorf("%d rounds: the mean's interval held the true ratio in %.3f of trials, want its 90%%", n, got)
			}
			if n >= 5 && f(meanPair, ranked) >= f(pairIn, trials) {
				t.Errorf("%d rounds: the mean's interval held the next run as often (%.3f) as the predictive one (%.3f): the test tells nothing", n, f(meanPair, ranked), f(pairIn, trials))
			}
		}
	}
	if _, _, _, ok := PredictInterval([]float64{1}, []float64{2}, alpha); ok {
		t.Error("one run a side: no degree of freedom, want no interval")
	}
}

// A change the size MinDetectable states for the family interval is
// told from none in about 80% of trials, one of half its size (on the
// log scale) rarely, and identical sides' intervals end under it in
// about 80%: three rounds a side, rounds 10% apart, each run's calls
// 5%, a family of 40 figures.
func TestMinDetectableFamilyPower(t *testing.T) {
	const tau, callsSD, tests, alpha = 0.10, 0.05, 40, 0.10
	trials := trialsOf(3000)
	noise := RoundNoise{Tau2: tau * tau, DF: 200}
	side := func(r *rand.Rand, n int, shift float64) LogRuns {
		var lr LogRuns
		for range n {
			lr.Logs = append(lr.Logs, shift+math.Sqrt(tau*tau+callsSD*callsSD)*r.NormFloat64())
			lr.Vars = append(lr.Vars, callsSD*callsSD)
		}
		return lr
	}
	for _, n := range []int{3, 6, 12} {
		r := rand.New(rand.NewPCG(77, uint64(n)))
		se, ok := FamilySE(side(r, n, 0), side(r, n, 0), noise)
		if !ok {
			t.Fatal("no standard error")
		}
		mde := MinDetectable(se, noise.DF, FamilyAlpha(alpha, tests), DefaultPower)
		var atMDE, atHalf, aaUnder int
		for range trials {
			if _, low, _, _ := FamilyInterval(side(r, n, 0), side(r, n, math.Log(mde)), noise, alpha, tests); low > 1 {
				atMDE++
			}
			if _, low, _, _ := FamilyInterval(side(r, n, 0), side(r, n, math.Log(mde)/2), noise, alpha, tests); low > 1 {
				atHalf++
			}
			if _, _, high, _ := FamilyInterval(side(r, n, 0), side(r, n, 0), noise, alpha, tests); high < mde {
				aaUnder++
			}
		}
		p, h, a := float64(atMDE)/float64(trials), float64(atHalf)/float64(trials), float64(aaUnder)/float64(trials)
		t.Logf("%2d rounds a side: MDE %.3fx; told at the MDE %.3f, at half its log %.3f; A/A interval under it %.3f", n, mde, p, h, a)
		se80 := 4 * math.Sqrt(0.8*0.2/float64(trials))
		if math.Abs(p-DefaultPower) > se80 || math.Abs(a-DefaultPower) > se80 {
			t.Errorf("%d rounds: a change at the MDE %.3fx told in %.3f, identical sides under it in %.3f; want about %.2f", n, mde, p, a, DefaultPower)
		}
		if h > 0.25 {
			t.Errorf("%d rounds: half the MDE on the log scale told in %.3f of trials, want rarely", n, h)
		}
	}
}

// A change of RankDetectable standard deviations is told by Effect's
// rank interval in about 80% of trials, at the first look's level and a
// later look's, from 3 to 12 rounds a side, and half of it far less
// often; too few rounds for a rank interval detect nothing.
func TestRankDetectablePower(t *testing.T) {
	const sigma = 0.2
	trials := trialsOf(3000)
	for _, tc := range []struct {
		n     int
		alpha float64
	}{{3, 0.10}, {4, 0.10}, {5, 0.10}, {8, 0.10}, {12, 0.10}, {6, 0.10 / 4}, {10, 0.10 / 8}} {
		d := RankDetectable(tc.n, tc.n, tc.alpha, DefaultPower)
		r := rand.New(rand.NewPCG(78, uint64(tc.n)))
		var at, half int
		for range trials {
			x := drawSide(r, tc.n, 10, sigma)
			if Effect(x, drawSide(r, tc.n, 10*math.Exp(sigma*d), sigma), Options{Alpha: tc.alpha}).Low > 1 {
				at++
			}
			if Effect(x, drawSide(r, tc.n, 10*math.Exp(sigma*d/2), sigma), Options{Alpha: tc.alpha}).Low > 1 {
				half++
			}
		}
		p, h := float64(at)/float64(trials), float64(half)/float64(trials)
		t.Logf("%2d rounds a side at %.4f: %.2f sd (%.3fx at sd %.2f); told at it %.3f, at half %.3f", tc.n, tc.alpha, d, math.Exp(sigma*d), sigma, p, h)
		// Within the error of these trials and of RankDetectable's
		// own draws.
		if math.Abs(p-DefaultPower) > 4*math.Sqrt(0.8*0.2/float64(trials)+0.8*0.2/rankDraws) {
			t.Errorf("%d rounds at %.4f: a change of %.2f sd told in %.3f of trials, want about %.2f", tc.n, tc.alpha, d, p, DefaultPower)
		}
		if h > 0.45 {
			t.Errorf("%d rounds at %.4f: half the detectable change told in %.3f of trials", tc.n, tc.alpha, h)
		}
	}
	if d := RankDetectable(2, 2, 0.10, DefaultPower); !math.IsInf(d, 1) {
		t.Errorf("two rounds a side at 0.10: %v, want +Inf (no rank interval)", d)
	}
}
