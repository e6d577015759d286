package stats

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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

// family is what a comparison knows of the whole rehearsal: the level
// of the calls' bounds and the round noise of the mean and of the p95
// pooled over its queries (nil: judged without the pooled noise, as
// before issue 45 item 5).
type family struct {
	alpha     float64
	tests     int
	mean, p95 RoundNoise
}

// familyOf pools the round noise of every query's runs, both sides.
func familyOf(b, k [][]callsRun, alpha float64, tests int) *family {
	var means, p95s []LogRuns
	for _, side := range [][][]callsRun{b, k} {
		for _, runs := range side {
			means = append(means, logRunsOf(runs, false, alpha))
			p95s = append(p95s, logRunsOf(runs, true, alpha))
		}
	}
	return &family{alpha: alpha, tests: tests, mean: PooledRoundNoise(means), p95: PooledRoundNoise(p95s)}
}

func logRunsOf(runs []callsRun, tail bool, alpha float64) LogRuns {
	var fs []float64
	var bs []Bounds
	for _, x := range runs {
		if tail {
			fs, bs = append(fs, x.p95), append(bs, x.p95B)
		} else {
			fs, bs = append(fs, x.mean), append(bs, x.meanB)
		}
	}
	return LogRunsOf(fs, bs, alpha)
}

// verdict is what a comparison calls a query of three runs a side: a
// regression of its mean or of its tail, as internal/compare decides:
// by the runs alone (slower over the runs beyond the floors), with the
// calls (also beyond the calls' bounds at the family's level), and with
// fam (also beyond the rehearsal's pooled round noise at the family's
// level; nil: not asked). The floor of 0.2 ms a call is left out: the
// rates are of the statistics, at any scale.
func verdict(b, k []callsRun, fam *family) (runs, calls, pooled bool) {
	for _, isTail := range []bool{false, true} {
		r, c, p := slowerFigure(b, k, isTail, fam)
		runs, calls, pooled = runs || r, calls || c, pooled || p
	}
	return runs, calls, pooled
}

// slowerFigure is verdict for one figure: the mean, or the p95 (isTail).
func slowerFigure(b, k []callsRun, isTail bool, fam *family) (runs, calls, pooled bool) {
	o := Options{MinEffect: 0.10, Min: 1e-9}
	{
		var bv, kv []float64
		var bb, kb []Bounds
		for _, x := range b {
			v, bd := x.mean, x.meanB
			if isTail {
				v, bd = x.p95, x.p95B
			}
			bv, bb = append(bv, v), append(bb, bd)
		}
		for _, x := range k {
			v, bd := x.mean, x.meanB
			if isTail {
				v, bd = x.p95, x.p95B
			}
			kv, kb = append(kv, v), append(kb, bd)
		}
		e := Effect(bv, kv, o)
		if e.Change != Higher || !e.Beyond {
			return false, false, false
		}
		if lo, _, ok := CallsInterval(bb, kb, DefaultAlpha); !ok || lo <= 1 {
			return true, false, false
		}
		if fam == nil {
			return true, true, false
		}
		noise := fam.mean
		if isTail {
			noise = fam.p95
		}
		_, flo, _, ok := FamilyInterval(LogRunsOf(bv, bb, fam.alpha), LogRunsOf(kv, kb, fam.alpha), noise, DefaultAlpha, fam.tests)
		return true, true, ok && flo > 1
	}
}

// rehearsal draws three runs a side of each query (the candidate's
// scaled by meanShift, its tail's log-deviation grown by tailShift) with
// round noise sigmaRound shared by a run's calls, and says which
// queries are called regressed by the runs alone (old), with the calls'
// evidence (calls) and with the calls' and the pooled round noise's
// (regs), the family being every query's mean and p95.
func rehearsal(r *rand.Rand, qs []callsQuery, sigmaRound float64, shift func(int, callsQuery) callsQuery) (old, calls, regs []bool) {
	tests := 2 * len(qs)
	alpha := CallsAlpha(DefaultAlpha, tests)
	bs, ks := make([][]callsRun, len(qs)), make([][]callsRun, len(qs))
	for i, q := range qs {
		kq := q
		if shift != nil {
			kq = shift(i, q)
		}
		for range 3 {
			bs[i] = append(bs[i], q.draw(r, math.Exp(sigmaRound*r.NormFloat64()), alpha))
			ks[i] = append(ks[i], kq.draw(r, math.Exp(sigmaRound*r.NormFloat64()), alpha))
		}
	}
	fam := familyOf(bs, ks, alpha, tests)
	for i := range qs {
		o, c, p := verdict(bs[i], ks[i], fam)
		old, calls, regs = append(old, o), append(calls, c), append(regs, p)
	}
	return old, calls, regs
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
// 0.05/100 a query. The rates are docs/noise-measured.md's.
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
				// A tail regression: the p95 slower, the mean not.
				m0, m1, _ := slowerFigure(b, k, false, nil)
				t0, t1, _ := slowerFigure(b, k, true, nil)
				if t0 && !m0 {
					old++
				}
				if t1 && !m1 {
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
// three runs a side, shows any regression of any query, with the calls'
// evidence and the rehearsal's pooled round noise at the family's level:
// at most 5% whether the rounds differ only by their calls or also by
// round noise (a whole round's calls slower by a few per cent, as on a
// busy machine); the power on real changes beside it (a 2x mean, a 1.5x
// p95 at 10,000 calls). The rates are docs/noise-measured.md's: "runs" the runs'
// test and floors alone, "calls" with the calls' evidence (before issue
// 45 item 5), "new" with the pooled round noise too.
func TestAAAnyRegression(t *testing.T) {
	trials := trialsOf(200)
	r := rand.New(rand.NewPCG(45, 3))
	var table strings.Builder
	fmt.Fprintf(&table, "model                          round-noise  any-runs any-calls any-new  found-calls found-new (%d rehearsals of 50 queries, 3+3 rounds)\n", trials)
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
	slower := func(i int, q callsQuery) callsQuery {
		if i == 0 {
			q.mu += math.Log(1.2)
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
	for _, m := range []model{{"A/A", nil}, {"2x mean, 10,000 calls", double}, {"1.5x p95, 10,000 calls", tail}, {"1.2x mean, 10,000 calls", slower}} {
		for _, sr := range []float64{0, 0.02, 0.05, 0.10} {
			var anyRuns, anyCalls, anyNew, foundCalls, found int
			for range trials {
				qs := mixOf(r)
				if m.shift != nil {
					qs[0].n, qs[0].sigma = 10000, 0.5
				}
				old, calls, regs := rehearsal(r, qs, sr, m.shift)
				first := 0
				if m.shift != nil {
					first = 1
					if calls[0] {
						foundCalls++
					}
					if regs[0] {
						found++
					}
				}
				if slices.Contains(old[first:], true) {
					anyRuns++
				}
				if slices.Contains(calls[first:], true) {
					anyCalls++
				}
				if slices.Contains(regs[first:], true) {
					anyNew++
				}
			}
			n := float64(trials)
			fn, pw := float64(anyNew)/n, float64(found)/n
			fmt.Fprintf(&table, "%-30s %.2f         %.3f    %.3f     %.3f    %.3f       %.3f\n", m.name, sr,
				float64(anyRuns)/n, float64(anyCalls)/n, fn, float64(foundCalls)/n, pw)
			// At most 5% of rehearsals, within two standard errors of
			// the simulation.
			if se := math.Sqrt(0.05 * 0.95 / n); fn > 0.05+2*se {
				t.Errorf("%s, round noise %.2f: %.3f of rehearsals show a regression of an unchanged query, above 5%%", m.name, sr, fn)
			}
			if anyNew > anyCalls {
				t.Errorf("%s, round noise %.2f: the pooled round noise made more regressions (%d) than the calls' evidence alone (%d)", m.name, sr, anyNew, anyCalls)
			}
			if m.name == "1.2x mean, 10,000 calls" {
				// What the family's level costs: reported, not held.
				continue
			}
			if m.shift != nil && sr <= 0.05 && pw < 0.95 {
				t.Errorf("%s, round noise %.2f: found in %.3f of rehearsals, want 0.95", m.name, sr, pw)
			}
			if m.shift != nil && sr == 0.10 && pw < 0.8 {
				t.Errorf("%s, round noise %.2f: found in %.3f of rehearsals, want 0.8", m.name, sr, pw)
			}
		}
	}
	t.Logf("\n%s", table.String())
}

// TestAAUnevenRoundNoise: the pooled round noise assumes the queries of
// a rehearsal share it; when a few are much noisier than the rest, the
// pool is the many quiet ones' and the noisy ones are held by their own
// noise floor (their rounds' range) and by the calls alone, as before
// the pool. A/A rehearsals of 50 queries, 3+3 rounds, 5 of them (or 1)
// with round noise 5 or 10 times the others'; the rates are
// docs/noise-measured.md's.
func TestAAUnevenRoundNoise(t *testing.T) {
	trials := trialsOf(200)
	r := rand.New(rand.NewPCG(45, 9))
	var table strings.Builder
	fmt.Fprintf(&table, "round noise  noisy queries  any-calls any-new (%d rehearsals of 50 queries, 3+3 rounds)\n", trials)
	for _, cfg := range []struct {
		quiet, noisy float64
		k            int
	}{{0.02, 0.10, 5}, {0.02, 0.20, 5}, {0.05, 0.20, 5}, {0.02, 0.20, 1}} {
		var anyCalls, anyNew int
		for range trials {
			qs := mixOf(r)
			tests := 2 * len(qs)
			alpha := CallsAlpha(DefaultAlpha, tests)
			bs, ks := make([][]callsRun, len(qs)), make([][]callsRun, len(qs))
			for i, q := range qs {
				sr := cfg.quiet
				if i < cfg.k {
					sr = cfg.noisy
				}
				for range 3 {
					bs[i] = append(bs[i], q.draw(r, math.Exp(sr*r.NormFloat64()), alpha))
					ks[i] = append(ks[i], q.draw(r, math.Exp(sr*r.NormFloat64()), alpha))
				}
			}
			fam := familyOf(bs, ks, alpha, tests)
			var c, p bool
			for i := range qs {
				_, ci, pi := verdict(bs[i], ks[i], fam)
				c, p = c || ci, p || pi
			}
			if c {
				anyCalls++
			}
			if p {
				anyNew++
			}
		}
		n := float64(trials)
		fc, fn := float64(anyCalls)/n, float64(anyNew)/n
		fmt.Fprintf(&table, "%.2f         %d at %.2f      %.3f     %.3f\n", cfg.quiet, cfg.k, cfg.noisy, fc, fn)
		if anyNew > anyCalls {
			t.Errorf("%d of 50 queries at %.2f beside %.2f: the pooled noise made more regressions (%.3f) than the calls alone (%.3f)", cfg.k, cfg.noisy, cfg.quiet, fn, fc)
		}
		if se := math.Sqrt(0.05 * 0.95 / n); fn > 0.05+2*se {
			t.Errorf("%d of 50 queries at %.2f beside %.2f: %.3f of A/A rehearsals show a regression, above 5%%", cfg.k, cfg.noisy, cfg.quiet, fn)
		}
	}
	t.Logf("\n%s", table.String())
}
