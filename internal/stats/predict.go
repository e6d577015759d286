package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// What the application will see, and what the rounds could tell (issue
// 76). An interval over the rounds speaks for the mean of those rounds:
// with more rounds it narrows towards the true change, while one run of
// the application (an hour on the control, the next on the candidate)
// varies by the rounds' own spread however many rounds were run. A
// forecast of 2.29x (2.19-2.40) against an application's 2.76x, whose
// own round pairs ranged 1.39-3.66, was a right mean and a wrong promise
// about the next run. PredictInterval is that promise; MinDetectable and
// RankDetectable say how small a change the rounds could tell from none.

// DefaultPower is the chance at which a change of the size
// MinDetectable states is told from none: 80%, the usual design power.
const DefaultPower = 0.80

// PredictInterval is the interval, at two-sided level alpha, of the
// ratio one more run a side would show: the figure of a next run of the
// candidate over that of a next run of the control, each as long as
// these rounds. x are the control's runs, y the candidate's (positive).
//
// Derivation. On the log scale each run's figure is its side's level
// plus an error of variance σ² (the rounds' drift and the run's own
// calls), the same on both sides (the change scales, it does not
// spread), errors independent. With m control runs and n candidate
// runs, the change's estimate is D = mean(log y) - mean(log x), of
// variance σ²(1/m + 1/n). The next pair of runs shows D* = log y* -
// log x*, of variance 2σ², independent of D. So D* - D has mean 0 and
// variance σ²(2 + 1/m + 1/n): the mean's own uncertainty plus the pair's
// spread. σ² is estimated by s², the runs' variance about their side's
// mean pooled over both sides, with m + n - 2 degrees of freedom and
// independent of D and D* under normality, so (D* - D) / (s·√(2 + 1/m +
// 1/n)) is Student's t with m + n - 2 degrees of freedom, and
//
//	D ± t(1 - alpha/2; m+n-2) · s · √(2 + 1/m + 1/n)
//
// holds D* with probability 1 - alpha exactly for normal logs. A truth
// that is itself the mean of k pairs varies by 2σ²/k, less than one
// pair: the interval holds it at least as often. ratio is exp(D), the
// ratio of the geometric means. ok is false with fewer than one run a
// side or fewer than three in all (no degree of freedom for s).
func PredictInterval(x, y []float64, alpha float64) (ratio, low, high float64, ok bool) {
	m, n := len(x), len(y)
	if m == 0 || n == 0 || m+n < 3 || alpha <= 0 || alpha >= 1 {
		return 1, 0, math.Inf(1), false
	}
	lx, ly := logsOf(x), logsOf(y)
	mx, my := meanOf(lx), meanOf(ly)
	var ss float64
	for _, l := range lx {
		ss += (l - mx) * (l - mx)
	}
	for _, l := range ly {
		ss += (l - my) * (l - my)
	}
	df := m + n - 2
	s := math.Sqrt(ss / float64(df))
	d := my - mx
	w := tQuantile(1-alpha/2, df) * s * math.Sqrt(2+1/float64(m)+1/float64(n))
	return math.Exp(d), math.Exp(d - w), math.Exp(d + w), true
}

// LogSD is the standard deviation of a run's logarithm about its side's
// mean, pooled over both sides (x the control's runs, y the
// candidate's), with its degrees of freedom; false without one.
func LogSD(x, y []float64) (sd float64, df int, ok bool) {
	sd, ok = PooledSD([][]float64{logsOf(x), logsOf(y)})
	if !ok {
		return 0, 0, false
	}
	return sd, len(x) + len(y) - 2, true
}

// MinDetectable is the smallest ratio above 1 that an interval of
// standard error se on the log scale (df degrees of freedom; 0 for a
// known se), one-sided level alpha, tells from 1 with chance power:
// exp((t(1-alpha) + z(power))·se). The estimate of a true ratio of that
// size lies z(power)·se above the interval's reach, so its interval
// clears 1 in power of the trials; the same figure is the threshold an
// identical candidate's interval ends under with chance power. +Inf
// without a standard error.
func MinDetectable(se float64, df int, alpha, power float64) float64 {
	if !(se >= 0) || math.IsInf(se, 1) || alpha <= 0 || alpha >= 0.5 || power <= 0 || power >= 1 {
		return math.Inf(1)
	}
	q := normalQuantile(1 - alpha)
	if df > 0 {
		q = tQuantile(1-alpha, df)
	}
	return math.Exp((q + normalQuantile(power)) * se)
}

// FamilySE is the standard error of the log-ratio of FamilyInterval:
// √(Σ(τ² + v)/n² of each side). ok is false without runs on a side or a
// pooled noise; +Inf when a run's calls are too few for a bound.
func FamilySE(x, y LogRuns, noise RoundNoise) (se float64, ok bool) {
	if len(x.Logs) == 0 || len(y.Logs) == 0 || noise.DF == 0 {
		return math.Inf(1), false
	}
	v := func(r LogRuns) float64 {
		n := float64(len(r.Logs))
		var s float64
		for i := range r.Logs {
			s += noise.Tau2 + r.Vars[i]
		}
		return s / (n * n)
	}
	t := v(x) + v(y)
	if math.IsInf(t, 1) || math.IsNaN(t) {
		return math.Inf(1), true
	}
	return math.Sqrt(t), true
}

// RankDetectable is the smallest change, in standard deviations of a
// run's logarithm, that Effect's rank interval (mirrored about the
// ratio) over m and n runs at two-sided level alpha tells from none with
// chance power, for normal logs: exp(sd·RankDetectable) is the ratio.
// The interval moves with a change as a whole (every pairwise ratio, and
// the ratio of the medians, scale by it), so a change δ is told exactly
// when the identical sides' interval reaches down less than δ below 1
// on the log scale: δ is the power-quantile of that reach over
// identical sides, drawn here (a fixed seed, 4000 draws, kept per m, n
// and alpha). +Inf with too few runs for a rank interval at alpha.
func RankDetectable(m, n int, alpha, power float64) float64 {
	key := detectKey{m, n, alpha, power}
	if v, ok := rankDetect.Load(key); ok {
		return v.(float64)
	}
	d := rankDetectableOf(m, n, alpha, power)
	rankDetect.Store(key, d)
	return d
}

type detectKey struct {
	m, n         int
	alpha, power float64
}

var rankDetect sync.Map

// rankDraws is how many identical pairs of sides RankDetectable draws:
// its quantile at 80% is then within about 2% of the true one.
const rankDraws = 4000

func rankDetectableOf(m, n int, alpha, power float64) float64 {
	k, _ := rankK(m, n, alpha)
	if k == 0 || power <= 0 || power >= 1 {
		return math.Inf(1)
	}
	r := rand.New(rand.NewPCG(76, uint64(m*1000+n)))
	x, y := make([]float64, m), make([]float64, n)
	diffs := make([]float64, m*n)
	reach := make([]float64, rankDraws)
	for i := range reach {
		for j := range x {
			x[j] = r.NormFloat64()
		}
		for j := range y {
			y[j] = r.NormFloat64()
		}
		for a := range x {
			for b := range y {
				diffs[a*n+b] = y[b] - x[a]
			}
		}
		slices.Sort(diffs)
		low, high := diffs[k-1], diffs[len(diffs)-k]
		d := Median(y) - Median(x)
		if d < low || d > high {
			d = Median(diffs)
		}
		f := math.Max(d-low, high-d)
		reach[i] = -math.Min(low, d-f)
	}
	slices.Sort(reach)
	return reach[min(len(reach)-1, int(math.Ceil(power*float64(len(reach))))-1)]
}

func logsOf(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Log(math.Max(x, 1e-9))
	}
	return out
}

func meanOf(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
