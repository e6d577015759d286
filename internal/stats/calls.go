package stats

import (
	"math"
	"slices"

	moremath "github.com/aclements/go-moremath/stats"
)

// A run's figure is itself an estimate from that run's calls: a p95 of
// 494 calls rests on its 25 slowest, and two runs of one target differ
// by which calls happened to be slow. The functions below bound a run's
// figure by what its calls can carry, and carry those bounds through the
// rank interval over the runs, so that a change is called only when the
// runs differ beyond both the spread between them and the sampling error
// of the calls inside each. docs/noise.md says why and measures it.

// QuantileRanks are the 1-based ranks of the order statistics that bound
// the p-quantile of n calls, each bound one-sided at level alpha: the
// distribution-free interval from the binomial distribution (the number
// of calls below the quantile is Binomial(n, p)). lo is the largest rank
// whose value lies at or below the quantile with probability 1 - alpha;
// hi the smallest whose value lies at or above it with that probability.
// lo is 0 when no call is low enough for a lower bound, and hi is n+1
// when the calls are too few for an upper one (p^n > alpha: a p95 needs
// ln(alpha)/ln(0.95) calls, MinCallsForQuantile).
func QuantileRanks(n int64, p, alpha float64) (lo, hi int64) {
	if n <= 0 {
		return 0, 1
	}
	d := moremath.BinomialDist{N: int(n), P: p}
	// cdf(k) is P(fewer than k calls lie below the quantile): the chance
	// that the k-th smallest call lies above it.
	cdf := func(k int64) float64 { return d.CDF(float64(k - 1)) }
	// lo: the largest k with cdf(k) <= alpha (cdf grows with k).
	a, b := int64(0), n
	for a < b {
		m := (a + b + 1) / 2
		if cdf(m) <= alpha {
			a = m
		} else {
			b = m - 1
		}
	}
	lo = a
	// hi: the smallest k with cdf(k) >= 1 - alpha, n+1 when none.
	a, b = 1, n+1
	for a < b {
		m := (a + b) / 2
		if cdf(m) >= 1-alpha {
			b = m
		} else {
			a = m + 1
		}
	}
	return lo, a
}

// MinCallsForQuantile is the fewest calls for the p-quantile's upper
// bound at one-sided level alpha to exist (QuantileRanks' hi <= n): the
// n with p^n <= alpha. A p95 at 2.5% needs 72 calls; at 0.025%, 162.
func MinCallsForQuantile(p, alpha float64) int64 {
	if p <= 0 || alpha <= 0 || alpha >= 1 {
		return 1
	}
	return int64(math.Ceil(math.Log(alpha)/math.Log(p) - 1e-9))
}

// CallsAlpha is the one-sided level of each run's bounds (QuantileBounds,
// MeanBounds) when tests changes are judged at once, two-sided level
// alpha for the family: Bonferroni's correction. A change claimed of one
// figure needs a candidate run's lower bound above a control run's upper
// bound, which, when the two runs measured the same thing, happens only
// when one of the two bounds misses (2·CallsAlpha); over tests figures
// that is at most alpha/2, the one-sided rate at which an A/A comparison
// shows any change of any figure from the sampling error of its calls.
func CallsAlpha(alpha float64, tests int) float64 {
	return alpha / float64(4*max(1, tests))
}

// Bounds are a run's figure bounded by its calls: Low may be 0 and High
// +Inf when the calls are too few for a bound.
type Bounds struct {
	Low, High float64
}

// MeanBounds are the bounds of a run's mean from its n calls with
// standard deviation sd, each one-sided at alpha: the delta method on the
// logarithm (the mean times exp(∓z·sd/(mean·√n))), so that the bounds
// stay positive.
func MeanBounds(mean, sd float64, n int64, alpha float64) Bounds {
	if mean <= 0 || n < 2 {
		return Bounds{Low: 0, High: math.Inf(1)}
	}
	se := sd / mean / math.Sqrt(float64(n))
	w := math.Exp(normalQuantile(1-alpha) * se)
	return Bounds{Low: mean / w, High: mean * w}
}

// CallsInterval is Effect's rank interval over the runs with each run's
// figure taken at its bounds: the k-th smallest of the ratios of a
// candidate run's lower bound to a control run's upper bound, and the
// k-th largest of the ratios of upper to lower. It holds the runs' own
// rank interval, widened by what the calls of each run can carry: a
// conservative union of the two uncertainties (the spread between runs
// at alpha, the calls' at the bounds' level). ok is false with too few
// runs for a rank interval at alpha.
func CallsInterval(x, y []Bounds, alpha float64) (low, high float64, ok bool) {
	k, _ := rankK(len(x), len(y), alpha)
	if k == 0 {
		return 0, math.Inf(1), false
	}
	lows := make([]float64, 0, len(x)*len(y))
	highs := make([]float64, 0, len(x)*len(y))
	for _, a := range x {
		for _, b := range y {
			lows = append(lows, ratioOf(b.Low, a.High))
			highs = append(highs, ratioOf(b.High, a.Low))
		}
	}
	slices.Sort(lows)
	slices.Sort(highs)
	return lows[k-1], highs[len(highs)-k], true
}

// ratioOf is a/b for bounds: 0 over anything (or anything over +Inf) is
// 0, anything positive over 0 (or +Inf over anything) is +Inf.
func ratioOf(a, b float64) float64 {
	switch {
	case a <= 0 || math.IsInf(b, 1):
		return 0
	case b <= 0 || math.IsInf(a, 1):
		return math.Inf(1)
	}
	return a / b
}

// NormalQuantile is the p-quantile of the standard normal distribution.
func NormalQuantile(p float64) float64 { return normalQuantile(p) }
