package stats

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	moremath "github.com/aclements/go-moremath/stats"
)

var long = flag.Bool("long", false, "run the calls simulations with ten times the trials")

// TestQuantileRanks: the order statistics that bound a quantile are the
// binomial ones, each bound missing with probability at most alpha, and
// no bound exists with too few calls.
func TestQuantileRanks(t *testing.T) {
	for _, tt := range []struct {
		n      int64
		p, a   float64
		lo, hi int64
	}{
		{494, 0.95, 0.025, 459, 479},
		{72, 0.95, 0.025, 64, 72},
		{71, 0.95, 0.025, 63, 72}, // no upper bound: 71 calls are too few
		{100, 0.5, 0.025, 40, 61},
		{162, 0.95, 0.00025, 143, 162},
		{161, 0.95, 0.00025, 142, 162},
	} {
		lo, hi := QuantileRanks(tt.n, tt.p, tt.a)
		if lo != tt.lo || hi != tt.hi {
			t.Errorf("QuantileRanks(%d, %v, %v) = %d, %d; want %d, %d", tt.n, tt.p, tt.a, lo, hi, tt.lo, tt.hi)
		}
		d := moremath.BinomialDist{N: int(tt.n), P: tt.p}
		// The lower bound lies above the quantile only when fewer than
		// lo calls lie below it; the upper bound below it only when
		// hi calls or more do.
		if lo >= 1 && d.CDF(float64(lo-1)) > tt.a {
			t.Errorf("n %d: lower bound misses with probability %v > %v", tt.n, d.CDF(float64(lo-1)), tt.a)
		}
		if hi <= tt.n && 1-d.CDF(float64(hi-1)) > tt.a {
			t.Errorf("n %d: upper bound misses with probability %v > %v", tt.n, 1-d.CDF(float64(hi-1)), tt.a)
		}
	}
	for _, tt := range []struct {
		a    float64
		want int64
	}{{0.025, 72}, {0.00025, 162}} {
		if got := MinCallsForQuantile(0.95, tt.a); got != tt.want {
			t.Errorf("MinCallsForQuantile(0.95, %v) = %d, want %d", tt.a, got, tt.want)
		}
	}
	if got := CallsAlpha(0.10, 50); got != 0.0005 {
		t.Errorf("CallsAlpha(0.10, 50) = %v, want 0.0005", got)
	}
}

// TestCallsInterval: three runs a side, the interval over the runs of
// the bounds: the smallest candidate lower bound over the largest
// baseline upper bound, and the other way round; a missing bound leaves
// its end open.
func TestCallsInterval(t *testing.T) {
	x := []Bounds{{9, 11}, {10, 12}, {8, 10}}
	y := []Bounds{{14, 16}, {15, 18}, {13, 20}}
	lo, hi, ok := CallsInterval(x, y, DefaultAlpha)
	if !ok || lo != 13.0/12 || hi != 20.0/8 {
		t.Errorf("CallsInterval = %v, %v, %v; want 13/12, 20/8", lo, hi, ok)
	}
	x[0].High = math.Inf(1)
	if lo, _, _ := CallsInterval(x, y, DefaultAlpha); lo != 0 {
		t.Errorf("a baseline run without an upper bound: low %v, want 0", lo)
	}
	if _, _, ok := CallsInterval(x[:2], y[:2], DefaultAlpha); ok {
		t.Error("two runs a side give no interval at 0.10")
	}
}

// callsRun is one run of a query as a comparison sees it: its mean and
// p95, each with the bounds its calls give it.
type callsRun struct {
	mean, p95   float64
	meanB, p95B Bounds
}

// callsQuery is a query's calls: lognormal, the logarithm's mean mu and
// deviation sigma, n calls a run.
type callsQuery struct {
	n         int64
	mu, sigma float64
}

// draw is one run of q, every call scaled by round (the round's own
// noise), its bounds at one-sided level alpha. The order statistics are
// drawn exactly (the k-th of n uniforms is Beta(k, n-k+1), and below the
// j-th the others are uniforms under it), the mean by the central limit
// theorem: a run of 100,000 calls costs as little as one of 100.
func (q callsQuery) draw(r *rand.Rand, round, alpha float64) callsRun {
	lo, hi := ranksOf(q.n, alpha)
	k := int64(math.Ceil(0.95 * float64(q.n)))
	at := func(u float64) float64 {
		return round * math.Exp(q.mu+q.sigma*moremath.StdNormal.InvCDF(u))
	}
	var run callsRun
	var uk float64
	run.p95B = Bounds{Low: 0, High: math.Inf(1)}
	if hi <= q.n {
		uh := betaRand(r, float64(hi), float64(q.n-hi+1))
		run.p95B.High = at(uh)
		uk = uh
		if hi > k {
			uk = uh * betaRand(r, float64(k), float64(hi-k))
		}
	} else {
		uk = betaRand(r, float64(k), float64(q.n-k+1))
	}
	run.p95 = at(uk)
	if lo >= 1 {
		ul := uk
		if lo < k {
			ul = uk * betaRand(r, float64(lo), float64(k-lo))
		}
		run.p95B.Low = at(ul)
	}
	m := round * math.Exp(q.mu+q.sigma*q.sigma/2)
	sd := m * math.Sqrt(math.Exp(q.sigma*q.sigma)-1)
	run.mean = math.Max(m+sd/math.Sqrt(float64(q.n))*r.NormFloat64(), 1e-9)
	run.meanB = MeanBounds(run.mean, sd, q.n, alpha)
	return run
}

// ranks memoizes QuantileRanks of the p95 for the simulations: they are
// the same for every run of a size.
var ranks = map[[2]float64][2]int64{}

func ranksOf(n int64, alpha float64) (lo, hi int64) {
	k := [2]float64{float64(n), alpha}
	if r, ok := ranks[k]; ok {
		return r[0], r[1]
	}
	lo, hi = QuantileRanks(n, 0.95, alpha)
	ranks[k] = [2]int64{lo, hi}
	return lo, hi
}

// betaRand draws Beta(a, b) as a ratio of gammas.
func betaRand(r *rand.Rand, a, b float64) float64 {
	x, y := gammaRand(r, a), gammaRand(r, b)
	return x / (x + y)
}

// gammaRand draws Gamma(a, 1), a >= 1 (Marsaglia and Tsang).
func gammaRand(r *rand.Rand, a float64) float64 {
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// verdict is what a comparison calls a query of three runs a side: a
// regression of its mean, else of its tail, as internal/compare decides
// (slower over the runs beyond the floors; with calls, also beyond the
// calls' bounds at the family's level). The floor of 0.2 ms a call is
// left out: the rates are of the statistics, at any scale.
func verdict(b, k []callsRun, calls bool) (mean, tail bool) {
	o := Options{MinEffect: 0.10, Min: 1e-9}
	pick := func(runs []callsRun, f func(callsRun) float64) []float64 {
		out := make([]float64, len(runs))
		for i, x := range runs {
			out[i] = f(x)
		}
		return out
	}
	bounds := func(runs []callsRun, f func(callsRun) Bounds) []Bounds {
		out := make([]Bounds, len(runs))
		for i, x := range runs {
			out[i] = f(x)
		}
		return out
	}
	slower := func(v func(callsRun) float64, bd func(callsRun) Bounds) bool {
		e := Effect(pick(b, v), pick(k, v), o)
		if e.Change != Higher || !e.Beyond {
			return false
		}
		if !calls {
			return true
		}
		lo, _, ok := CallsInterval(bounds(b, bd), bounds(k, bd), DefaultAlpha)
		return ok && lo > 1
	}
	mean = slower(func(x callsRun) float64 { return x.mean }, func(x callsRun) Bounds { return x.meanB })
	if mean {
		return true, false
	}
	return false, slower(func(x callsRun) float64 { return x.p95 }, func(x callsRun) Bounds { return x.p95B })
}

// rehearsal draws three runs a side of each query (the candidate's
// scaled by meanShift, its tail's log-deviation grown by tailShift) with
// round noise sigmaRound shared by a run's calls, and counts the
// queries called regressed with and without the calls' evidence, the
// family being every query's mean and p95.
func rehearsal(r *rand.Rand, qs []callsQuery, sigmaRound float64, shift func(int, callsQuery) callsQuery) (old, regs []bool) {
	alpha := CallsAlpha(DefaultAlpha, 2*len(qs))
	for i, q := range qs {
		kq := q
		if shift != nil {
			kq = shift(i, q)
		}
		var b, k []callsRun
		for range 3 {
			b = append(b, q.draw(r, math.Exp(sigmaRound*r.NormFloat64()), alpha))
			k = append(k, kq.draw(r, math.Exp(sigmaRound*r.NormFloat64()), alpha))
		}
		m0, t0 := verdict(b, k, false)
		m1, t1 := verdict(b, k, true)
		old, regs = append(old, m0 || t0), append(regs, m1 || t1)
	}
	return old, regs
}

func trialsOf(n int) int {
	if *long {
		return 10 * n
	}
	return n
}

// TestTailFalsePositives: one query's tail, A against A, three runs a
// side, from 100 to 100,000 calls a run, inside a rehearsal of 50
// queries (the family: 100 figures). Without the calls' evidence a p95
// that three rounds of a few hundred calls happen to order is called a
// regression; with it, the rate of a tail regression from the calls'
// own sampling is held at Alpha/2 over the whole family, so at
// 0.05/100 a query. The rates are docs/noise.md's.
func TestTailFalsePositives(t *testing.T) {
	trials := trialsOf(2000)
	var table strings.Builder
	fmt.Fprintf(&table, "calls    round-noise  tail-old  tail-new  (A/A, %d trials, family of 100 figures)\n", trials)
	r := rand.New(rand.NewPCG(45, 2))
	qs := make([]callsQuery, 50)
	for _, n := range []int64{100, 494, 1000, 10000, 100000} {
		for _, sr := range []float64{0, 0.05} {
			for i := range qs {
				qs[i] = callsQuery{n: n, mu: 0, sigma: 0.8}
			}
			var old, tails int
			alpha := CallsAlpha(DefaultAlpha, 2*len(qs))
			for range trials {
				// One query of the 50 is drawn; the others only set
				// the family's size.
				q := qs[0]
				var b, k []callsRun
				for range 3 {
					b = append(b, q.draw(r, math.Exp(sr*r.NormFloat64()), alpha))
					k = append(k, q.draw(r, math.Exp(sr*r.NormFloat64()), alpha))
				}
				if _, t0 := verdict(b, k, false); t0 {
					old++
				}
				if _, t1 := verdict(b, k, true); t1 {
					tails++
				}
			}
			fo, fn := float64(old)/float64(trials), float64(tails)/float64(trials)
			fmt.Fprintf(&table, "%-8d %.2f         %.4f    %.4f\n", n, sr, fo, fn)
			// Sampling noise alone: at most 0.05/100 a query, which
			// the simulation's trials resolve as "at most 1 in
			// 1,000", within its error.
			if sr == 0 && fn > 0.001+3*math.Sqrt(0.001/float64(trials)) {
				t.Errorf("%d calls: a tail called slower in %.4f of A/A trials, above 0.001", n, fn)
			}
			if fn > fo {
				t.Errorf("%d calls, round noise %.2f: the calls' evidence made more tail regressions (%.4f) than without (%.4f)", n, sr, fn, fo)
			}
		}
	}
	t.Logf("\n%s", table.String())
}

// mixOf is a rehearsal of 50 queries from 100 to 100,000 calls a run,
// their calls spread as real ones are (a log-deviation of 0.3 to 1.2).
func mixOf(r *rand.Rand) []callsQuery {
	qs := make([]callsQuery, 50)
	for i := range qs {
		qs[i] = callsQuery{n: int64(math.Round(math.Pow(10, 2+3*r.Float64()))), mu: 3 * r.Float64(), sigma: 0.3 + 0.9*r.Float64()}
	}
	return qs
}

// TestAAAnyRegression: the rate at which an A/A rehearsal of 50 queries,
// three runs a side, shows any regression of any query: at most 5% with
// the calls' evidence at the family's level when the rounds differ only
// by their calls, and what round noise (a whole round's calls slower by
// a few per cent, as on a busy machine) adds; the power on real changes
// beside it (a 2x mean, a 1.5x p95 at 10,000 calls). The rates are
// docs/noise.md's.
func TestAAAnyRegression(t *testing.T) {
	trials := trialsOf(200)
	r := rand.New(rand.NewPCG(45, 3))
	var table strings.Builder
	fmt.Fprintf(&table, "model                          round-noise  any-old  any-new  found-new (%d rehearsals of 50 queries, 3+3 rounds)\n", trials)
	type model struct {
		name  string
		shift func(int, callsQuery) callsQuery
	}
	double := func(i int, q callsQuery) callsQuery {
		if i == 0 {
			q.mu += math.Ln2
		}
		return q
	}
	tail := func(i int, q callsQuery) callsQuery {
		if i == 0 {
			// The p95 1.5x, the median the same: the tail's spread
			// grows by ln(1.5)/1.645.
			q.sigma += math.Log(1.5) / 1.645
		}
		return q
	}
	for _, m := range []model{{"A/A", nil}, {"2x mean, 10,000 calls", double}, {"1.5x p95, 10,000 calls", tail}} {
		for _, sr := range []float64{0, 0.02, 0.05} {
			var anyOld, anyNew, found int
			for range trials {
				qs := mixOf(r)
				if m.shift != nil {
					qs[0].n, qs[0].sigma = 10000, 0.5
				}
				old, regs := rehearsal(r, qs, sr, m.shift)
				first := 0
				if m.shift != nil {
					first = 1
					if regs[0] {
						found++
					}
				}
				if hasTrue(old[first:]) {
					anyOld++
				}
				if hasTrue(regs[first:]) {
					anyNew++
				}
			}
			fo, fn, pw := float64(anyOld)/float64(trials), float64(anyNew)/float64(trials), float64(found)/float64(trials)
			fmt.Fprintf(&table, "%-30s %.2f         %.3f    %.3f    %.3f\n", m.name, sr, fo, fn, pw)
			se := math.Sqrt(0.05 * 0.95 / float64(trials))
			if m.shift == nil && sr == 0 && fn > 0.05+2*se {
				t.Errorf("A/A, sampling noise only: %.3f of rehearsals show a regression, above 5%%", fn)
			}
			if m.shift != nil && sr <= 0.02 && pw < 0.9 {
				t.Errorf("%s, round noise %.2f: found in %.3f of rehearsals, want 0.9", m.name, sr, pw)
			}
		}
	}
	t.Logf("\n%s", table.String())
}

func hasTrue(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}
