package headroom

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// curve is a synthetic target: its p95 over k = 1's, without noise, at
// achieved load a, crosses the SLO's limit (1.5) at exactly kStar.
type curve struct {
	kStar, power float64
	// flat: nothing ever breaks (an A/A, or a target with room).
	flat bool
}

const sloRatio = 1.5

func (c curve) ratio(a float64) float64 {
	if c.flat || a <= 1 {
		return 1
	}
	return math.Exp(math.Log(sloRatio) * math.Pow((a-1)/(c.kStar-1), c.power))
}

// noise of one measurement: the p95 of a replay (log-normal, sigma) and
// the achieved load (a replay's throughput).
type noise struct{ p95, load float64 }

// simulate runs a whole search on c with noise and returns its answer.
// Each measurement of the baseline and of every step has its own noise,
// and every step is judged against the median of the baseline rounds,
// as Judge does.
func simulate(rng *rand.Rand, c curve, n noise, cfg Search) Answer {
	s := NewSearch(cfg)
	var base []float64
	for {
		k, done := s.Next()
		if done {
			return s.Answer()
		}
		a := k * math.Exp(rng.NormFloat64()*n.load)
		if k == 1 {
			a = 1
		}
		p95 := c.ratio(a) * math.Exp(rng.NormFloat64()*n.p95)
		if k == 1 && len(base) < s.BaseRounds {
			base = append(base, p95)
			s.Record(Trial{K: 1, Achieved: 1, Held: true, Margin: -1, Bound: judge.BoundTarget})
			continue
		}
		r := p95 / stats.Median(base)
		m := math.Log(r)/math.Log(sloRatio) - 1
		s.Record(Trial{K: k, Achieved: a, Held: m <= 0, Margin: m, Bound: judge.BoundTarget})
	}
}

// TestSearchCoverage: on synthetic step curves with known break points
// (k* from 1.3 to 10, convex and straight), with a replay's noise (p95
// within 8% at one sigma, load within 2%), the interval covers the true
// break in at least 90% of searches. The rate is printed.
func TestSearchCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const trials = 2000
	n := noise{p95: 0.08, load: 0.02}
	covered, steps := 0, 0
	var width float64
	for i := range trials {
		c := curve{kStar: math.Exp(math.Log(1.3) + rng.Float64()*(math.Log(10)-math.Log(1.3))), power: []float64{1, 2, 3}[i%3]}
		a := simulate(rng, c, n, Search{MaxK: 24})
		steps += a.Steps
		if a.AtLeast {
			t.Fatalf("curve %+v: no break found up to 24 (%+v)", c, a)
		}
		if a.Lo <= c.kStar && c.kStar <= a.Hi {
			covered++
		}
		width += a.Hi / a.Lo
	}
	rate := float64(covered) / trials
	t.Logf("the interval covered the true break in %.1f%% of %d searches; mean width hi/lo %.2f, mean steps %.1f per side",
		100*rate, trials, width/trials, float64(steps)/trials)
	if rate < 0.90 {
		t.Errorf("coverage %.1f%%, want at least 90%%", 100*rate)
	}
}

// TestSearchAA: on a flat curve (the target never breaks: an A/A), how
// often a search reports a break below MaxK (the false-break rate), and
// how often two searches of the same curve give intervals that do not
// overlap. Both rates are printed; the first must stay below 5%.
func TestSearchAA(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const trials = 2000
	n := noise{p95: 0.08, load: 0.02}
	falseBreaks := 0
	for range trials {
		if a := simulate(rng, curve{flat: true}, n, Search{MaxK: 8}); !a.AtLeast {
			falseBreaks++
		}
	}
	apart := 0
	for i := range trials {
		c := curve{kStar: math.Exp(math.Log(1.5) + rng.Float64()*(math.Log(8)-math.Log(1.5))), power: []float64{1, 2, 3}[i%3]}
		a, b := simulate(rng, c, n, Search{MaxK: 16}), simulate(rng, c, n, Search{MaxK: 16})
		if a.Hi < b.Lo || b.Hi < a.Lo {
			apart++
		}
	}
	fb, ap := float64(falseBreaks)/trials, float64(apart)/trials
	t.Logf("A/A: a flat curve was said to break below 8x in %.2f%% of %d searches; two searches of one curve gave intervals apart in %.1f%%",
		100*fb, trials, 100*ap)
	if fb > 0.05 {
		t.Errorf("false-break rate %.2f%%, want below 5%%", 100*fb)
	}
	if ap > 0.10 {
		t.Errorf("A/A intervals apart in %.1f%%, want at most 10%%", 100*ap)
	}
}

// TestSearchSteps: a noiseless curve breaking at 2.5 goes up the ladder
// to 3, bisects between 2 and 3, and confirms both ends.
func TestSearchSteps(t *testing.T) {
	s := NewSearch(Search{MaxK: 16, BaseRounds: 2})
	ks := walk(s, curve{kStar: 2.5, power: 1}, true)
	a := s.Answer()
	t.Logf("steps %v, answer %+v", ks, a)
	want := []float64{1, 1, 1.5, 2, 3, 2.45, 2.71, 2.45, 2.71}
	if len(ks) != len(want) {
		t.Fatalf("steps %v, want %v", ks, want)
	}
	for i := range ks {
		if !same(ks[i], want[i]) {
			t.Fatalf("steps %v, want %v", ks, want)
		}
	}
	// Without noise in the rounds, the interval is the bracket widened
	// by the noise assumed (NoiseFloor).
	if a.AtLeast || a.AskedLo != 2.45 || a.AskedHi != 2.71 || a.Lo > 2.45 || a.Hi < 2.71 || a.Hi/a.Lo > 1.6 || math.Abs(a.Holds-2.5) > 0.05 {
		t.Errorf("answer %+v, want 2.45-2.71 or wider, within 1.6x, with an estimate near 2.5", a)
	}
}

// TestSearchBound: a step bound by the replayer ends the search, and the
// answer is a lower bound that names it.
func TestSearchBound(t *testing.T) {
	s := NewSearch(Search{MaxK: 16})
	for {
		k, done := s.Next()
		if done {
			break
		}
		tr := Trial{K: k, Achieved: k, Held: true, Margin: -0.5, Bound: judge.BoundTarget}
		if k >= 4 {
			tr.Achieved, tr.Bound = 3.2, judge.BoundReplayer
		}
		s.Record(tr)
	}
	a := s.Answer()
	if !a.AtLeast || a.Bound != judge.BoundReplayer || a.Lo != 3.2 {
		t.Errorf("answer %+v, want at least 3.2, bound by the replayer", a)
	}
}

func TestLadder(t *testing.T) {
	for _, tc := range []struct {
		max  float64
		want []float64
	}{
		{16, []float64{1, 1.5, 2, 3, 4, 6, 8, 12, 16}},
		{10, []float64{1, 1.5, 2, 3, 4, 6, 8, 10}},
		{2, []float64{1, 1.5, 2}},
		{1.2, []float64{1, 1.2}},
	} {
		got := Ladder(tc.max)
		if len(got) != len(tc.want) {
			t.Errorf("Ladder(%v) = %v, want %v", tc.max, got, tc.want)
			continue
		}
		for i := range got {
			if !same(got[i], tc.want[i]) {
				t.Errorf("Ladder(%v) = %v, want %v", tc.max, got, tc.want)
				break
			}
		}
	}
}

// TestSearchInteger: a fold's search asks whole load factors only.
func TestSearchInteger(t *testing.T) {
	s := NewSearch(Search{MaxK: 12.5, Integer: true, BaseRounds: 2})
	ks := walk(s, curve{kStar: 5.5, power: 1}, false)
	want := []float64{1, 1, 2, 3, 4, 6, 5, 5, 6}
	if len(ks) != len(want) {
		t.Fatalf("steps %v, want %v", ks, want)
	}
	for i := range ks {
		if ks[i] != want[i] {
			t.Fatalf("steps %v, want %v", ks, want)
		}
	}
}

// walk runs search s on the noiseless curve c, each step's margin the
// SLO's at its ratio (-1 at k = 1 when oneHolds), and returns the load
// factors it asked, in order.
func walk(s *Search, c curve, oneHolds bool) []float64 {
	var ks []float64
	for {
		k, done := s.Next()
		if done {
			return ks
		}
		ks = append(ks, k)
		m := math.Log(c.ratio(k))/math.Log(sloRatio) - 1
		if k == 1 && oneHolds {
			m = -1
		}
		s.Record(Trial{K: k, Achieved: k, Held: m <= 0, Margin: m, Bound: judge.BoundTarget})
	}
}
