package stats

import (
	"math"

	moremath "github.com/aclements/go-moremath/stats"
)

// Three rounds a side cannot tell a query's own round-to-round noise: its
// range over three rounds has two degrees of freedom, and the rank test
// over the runs cannot go below 1/20 a side (MinAlpha(3, 3)). Across the
// queries of one rehearsal the rounds' noise is measured many times over:
// the functions below pool it (RoundNoise), each run's calls' own
// sampling taken out, and judge a figure against it at the family's
// level (FamilyInterval). docs/noise.md says why and measures it.

// LogRuns are one side's runs of one figure of one query on the
// logarithmic scale: each run's logarithm and the variance of that
// logarithm from the run's own calls (CallsVar; +Inf when the calls are
// too few for a bound).
type LogRuns struct {
	Logs, Vars []float64
}

// LogRunsOf are the runs' figures with the bounds their calls give them,
// each bound one-sided at alpha. figures and bounds are in the same
// order; figures at or below 0 are left out.
func LogRunsOf(figures []float64, bounds []Bounds, alpha float64) LogRuns {
	var r LogRuns
	for i, f := range figures {
		if f <= 0 || i >= len(bounds) {
			continue
		}
		r.Logs = append(r.Logs, math.Log(f))
		r.Vars = append(r.Vars, CallsVar(bounds[i], alpha))
	}
	return r
}

// CallsVar is the variance of the logarithm of a run's figure from its
// calls, read off the figure's bounds at one-sided level alpha: the
// log-width of the bounds over 2·z(1-alpha), squared (exact for
// MeanBounds, the normal approximation for a quantile's order
// statistics). +Inf when a bound is missing.
func CallsVar(b Bounds, alpha float64) float64 {
	if b.Low <= 0 || math.IsInf(b.High, 1) || b.High < b.Low || alpha <= 0 || alpha >= 0.5 {
		return math.Inf(1)
	}
	se := math.Log(b.High/b.Low) / (2 * normalQuantile(1-alpha))
	return se * se
}

// RoundNoise is the noise of a figure from round to round that the
// queries of a rehearsal share, beyond their calls' sampling.
type RoundNoise struct {
	// Tau2 is the variance of the logarithm of a run's figure from
	// round to round (0.05² for rounds about 5% apart), DF the degrees
	// of freedom it was estimated with: the runs pooled less one a
	// group. DF 0: nothing to pool.
	Tau2 float64
	DF   int
}

// Factor is the round noise as a factor: exp(√Tau2), 1.05 for 5%.
func (n RoundNoise) Factor() float64 { return math.Exp(math.Sqrt(n.Tau2)) }

// PooledRoundNoise estimates the round noise shared by groups of runs
// (each one side of one query), each run's logarithm known to vary by its
// calls' variance besides: Paule and Mandel's estimator, the τ² at which
// the runs' deviations from their group's weighted mean, each weighted
// by 1/(τ² + its calls' variance), sum to their degrees of freedom, as
// they do on average when τ² is the rounds' variance. A group of a few
// calls weighs little (its calls' sampling hides its rounds), so the
// pool is neither widened by the queries of few calls nor narrowed by
// them. τ² is 0 when the calls' sampling alone explains the deviations.
// Runs with too few calls (an infinite variance) are left out, and
// groups with fewer than two runs left.
func PooledRoundNoise(groups []LogRuns) RoundNoise {
	var gs []LogRuns
	df := 0
	maxVar := 0.0
	for _, g := range groups {
		var h LogRuns
		for i, l := range g.Logs {
			if i < len(g.Vars) && !math.IsInf(g.Vars[i], 1) && !math.IsNaN(l) && !math.IsNaN(g.Vars[i]) {
				h.Logs, h.Vars = append(h.Logs, l), append(h.Vars, math.Max(g.Vars[i], 0))
			}
		}
		if len(h.Logs) < 2 {
			continue
		}
		gs = append(gs, h)
		df += len(h.Logs) - 1
		maxVar = math.Max(maxVar, sampleVar(h.Logs))
	}
	if df == 0 {
		return RoundNoise{}
	}
	target := float64(df)
	// q falls as tau2 grows; at tau2 = 0 it is +Inf when a run's calls
	// carry no variance and the runs differ.
	q := func(tau2 float64) float64 {
		var s float64
		for _, g := range gs {
			var sw, swl float64
			for i, l := range g.Logs {
				w := 1 / (tau2 + g.Vars[i])
				sw += w
				swl += w * l
			}
			m := swl / sw
			for i, l := range g.Logs {
				d := l - m
				if d != 0 {
					s += d * d / (tau2 + g.Vars[i])
				}
			}
		}
		return s
	}
	if q(0) <= target {
		return RoundNoise{Tau2: 0, DF: df}
	}
	lo, hi := 0.0, math.Max(maxVar, 1e-12)
	for q(hi) > target {
		lo, hi = hi, 2*hi
	}
	for range 100 {
		m := (lo + hi) / 2
		if q(m) > target {
			lo = m
		} else {
			hi = m
		}
		if hi-lo <= 1e-12*hi {
			break
		}
	}
	return RoundNoise{Tau2: hi, DF: df}
}

// sampleVar is the sample variance of xs (n-1); 0 for fewer than two.
func sampleVar(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var s float64
	for _, x := range xs {
		s += (x - m) * (x - m)
	}
	return s / float64(len(xs)-1)
}

// FamilyAlpha is the one-sided level of each figure's FamilyInterval
// when tests figures are judged at once, two-sided level alpha for the
// family: Bonferroni's correction, so that an A/A comparison calls any
// figure slower in at most alpha/2 of comparisons. It is 2·CallsAlpha:
// one bound of one interval, where the calls' claim needs one of two.
func FamilyAlpha(alpha float64, tests int) float64 {
	return alpha / float64(2*max(1, tests))
}

// FamilyInterval is the ratio of the candidate's runs y to the
// control's x (of their geometric means) with its interval at the
// family's level: each run's logarithm varies by the rounds' noise
// shared by the rehearsal's queries (noise, pooled) plus its own calls'
// variance, so the difference of the mean logarithms has the variance
// Σ(τ² + v)/n² of each side summed, and the interval is it times
// Student's t at one-sided FamilyAlpha(alpha, tests) with the noise's
// degrees of freedom. Unlike the rank interval over three runs, whose
// level cannot go below 1/20 a side, this one can reach the family's
// level; unlike a query's own spread over three rounds, its noise is
// measured on every query. ok is false without runs on a side or a
// pooled noise; the interval is [0, +Inf] when a run's calls are too
// few for a bound.
func FamilyInterval(x, y LogRuns, noise RoundNoise, alpha float64, tests int) (ratio, low, high float64, ok bool) {
	if len(x.Logs) == 0 || len(y.Logs) == 0 || noise.DF == 0 {
		return 1, 0, math.Inf(1), false
	}
	mean := func(r LogRuns) (m, v float64) {
		n := float64(len(r.Logs))
		for i, l := range r.Logs {
			m += l
			v += noise.Tau2 + r.Vars[i]
		}
		return m / n, v / (n * n)
	}
	mx, vx := mean(x)
	my, vy := mean(y)
	d := my - mx
	ratio = math.Exp(d)
	if math.IsInf(vx+vy, 1) || math.IsNaN(vx+vy) {
		return ratio, 0, math.Inf(1), true
	}
	w := tQuantile(1-FamilyAlpha(alpha, tests), noise.DF) * math.Sqrt(vx+vy)
	return ratio, math.Exp(d - w), math.Exp(d + w), true
}

// tQuantile is the p-quantile (p > 0.5) of Student's t with df degrees
// of freedom, by bisection on its distribution function.
func tQuantile(p float64, df int) float64 {
	z := normalQuantile(p)
	if df <= 0 {
		return math.Inf(1)
	}
	t := moremath.TDist{V: float64(df)}
	lo, hi := z, math.Max(2*z, 1)
	for t.CDF(hi) < p {
		lo, hi = hi, 2*hi
	}
	for range 200 {
		m := (lo + hi) / 2
		if t.CDF(m) < p {
			lo = m
		} else {
			hi = m
		}
		if hi-lo < 1e-9 {
			break
		}
	}
	return hi
}
