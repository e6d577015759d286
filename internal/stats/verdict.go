package stats

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// The verdict's interval over the rounds (issue 76 item 4: an identical
// candidate should PASS mean>+10% and p95>+20% within the rehearsal's
// budget). The rank interval (Effect) is exact whatever the rounds'
// distribution, and pays for it: with three or four rounds a side its
// order cannot go below the widest (k = 1), and at a later look's level
// (0.10/5) four rounds a side have none at all (MinAlpha(4, 4) = 0.029).
// Rounds' figures are close to lognormal (docs/noise-measured.md), and
// Student's t with Welch's degrees of freedom on their logarithms uses
// every round's distance rather than its rank: through the budget it
// PASSes identical candidates and FAILs real changes more often, at a
// false-positive rate still within the looks' Bonferroni bound
// (TestVerdictIntervalDesigns). It loses everything to one slow round
// (the round's variance widens the interval past any threshold), which
// the guard takes back: a side's round more than OutlierMADs robust
// standard deviations from its side's median is left out of the
// interval that clears a rule, once the side has four rounds or more.

// MinVerdictRounds is the fewest rounds a side VerdictInterval judges:
// the fewest a rank interval at the default level needs, the fewest the
// design was measured with.
const MinVerdictRounds = 3

// OutlierMADs is the guard's distance, in robust standard deviations
// (1.4826 median absolute deviations of the side's logarithms), beyond
// which a round is an outlier.
const OutlierMADs = 3.5

// Interval is a ratio of the candidate's rounds to the control's with
// its interval at Level.
type Interval struct {
	// Ratio is the ratio of the sides' geometric means.
	Ratio, Low, High float64
	// Level is the interval's nominal confidence, 1 - alpha (exact for
	// lognormal rounds).
	Level float64
	// Dropped counts the rounds the outlier guard left out (0 or 1 a
	// side).
	Dropped int
}

// WelchInterval is the ratio of the candidate's rounds y to the
// control's x with its interval at two-sided level alpha: Student's t
// with Welch's degrees of freedom (rounded down) on the rounds'
// logarithms, values under min counted as min. ok is false with fewer
// than MinVerdictRounds a side.
func WelchInterval(x, y []float64, alpha, min float64) (Interval, bool) {
	if len(x) < MinVerdictRounds || len(y) < MinVerdictRounds || alpha <= 0 || alpha >= 1 {
		return Interval{Ratio: 1, High: math.Inf(1)}, false
	}
	if min <= 0 {
		min = 1e-9
	}
	return welch(logsOf(clampAll(x, min)), logsOf(clampAll(y, min)), alpha), true
}

// GuardedWelchInterval is WelchInterval with the outlier guard: on each
// side of four rounds or more, the round farthest from its side's median
// on the log scale is left out when it lies more than OutlierMADs robust
// standard deviations from it.
func GuardedWelchInterval(x, y []float64, alpha, min float64) (Interval, bool) {
	if len(x) < MinVerdictRounds || len(y) < MinVerdictRounds || alpha <= 0 || alpha >= 1 {
		return Interval{Ratio: 1, High: math.Inf(1)}, false
	}
	if min <= 0 {
		min = 1e-9
	}
	lx, dx := withoutOutlier(logsOf(clampAll(x, min)))
	ly, dy := withoutOutlier(logsOf(clampAll(y, min)))
	in := welch(lx, ly, alpha)
	in.Dropped = dx + dy
	return in, true
}

func welch(lx, ly []float64, alpha float64) Interval {
	m, n := float64(len(lx)), float64(len(ly))
	vx, vy := sampleVar(lx)/m, sampleVar(ly)/n
	d := meanOf(ly) - meanOf(lx)
	in := Interval{Ratio: math.Exp(d), Level: 1 - alpha}
	se := math.Sqrt(vx + vy)
	if se == 0 {
		in.Low, in.High = in.Ratio, in.Ratio
		return in
	}
	df := (vx + vy) * (vx + vy) / (vx*vx/(m-1) + vy*vy/(n-1))
	w := tQuantileCached(1-alpha/2, max(1, int(math.Floor(df)))) * se
	in.Low, in.High = math.Exp(d-w), math.Exp(d+w)
	return in
}

// withoutOutlier is logs without its outlier (the guard), and how many
// it left out.
func withoutOutlier(logs []float64) ([]float64, int) {
	if len(logs) < 4 {
		return logs, 0
	}
	med := Median(logs)
	dev := make([]float64, len(logs))
	worst := 0
	for i, v := range logs {
		dev[i] = math.Abs(v - med)
		if dev[i] > dev[worst] {
			worst = i
		}
	}
	mad := 1.4826 * Median(dev)
	if mad == 0 || dev[worst] <= OutlierMADs*mad {
		return logs, 0
	}
	return slices.Delete(slices.Clone(logs), worst, worst+1), 1
}

// tQuantileCached is tQuantile, kept: the verdict asks for the same few
// levels and degrees of freedom for every query and figure it judges.
func tQuantileCached(p float64, df int) float64 {
	key := tKey{p, df}
	if v, ok := tQuantiles.Load(key); ok {
		return v.(float64)
	}
	v := tQuantile(p, df)
	tQuantiles.Store(key, v)
	return v
}

var tQuantiles sync.Map

type tKey struct {
	p  float64
	df int
}

// ClearsReach is, in standard deviations of a round's logarithm, how far
// above no change the interval that clears a rule (the rank interval of
// Effect, mirrored, or GuardedWelchInterval, whichever ends lower) ends
// for identical sides of m and n normal rounds at two-sided level alpha,
// at its quantile power: exp(sd·ClearsReach) is the tightest threshold
// identical sides clear with chance power. Drawn as RankDetectable is (a
// fixed seed, 4000 draws, kept per m, n and alpha); +Inf with fewer than
// MinVerdictRounds a side, or neither interval.
func ClearsReach(m, n int, alpha, power float64) float64 {
	key := detectKey{m, n, alpha, power}
	if v, ok := clearsReach.Load(key); ok {
		return v.(float64)
	}
	d := clearsReachOf(m, n, alpha, power)
	clearsReach.Store(key, d)
	return d
}

var clearsReach sync.Map

func clearsReachOf(m, n int, alpha, power float64) float64 {
	if m < MinVerdictRounds || n < MinVerdictRounds || power <= 0 || power >= 1 {
		return math.Inf(1)
	}
	k, _ := rankK(m, n, alpha)
	r := rand.New(rand.NewPCG(764, uint64(m*1000+n)))
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
		high := math.Inf(1)
		if k > 0 {
			// Effect's mirrored rank interval on the logarithms, as
			// rankDetectableOf draws it.
			for a := range x {
				for b := range y {
					diffs[a*n+b] = y[b] - x[a]
				}
			}
			slices.Sort(diffs)
			low, hi := diffs[k-1], diffs[len(diffs)-k]
			d := Median(y) - Median(x)
			if d < low || d > hi {
				d = Median(diffs)
			}
			high = d + math.Max(d-low, hi-d)
		}
		lx, _ := withoutOutlier(x)
		ly, _ := withoutOutlier(y)
		high = math.Min(high, math.Log(welch(lx, ly, alpha).High))
		reach[i] = high
	}
	slices.Sort(reach)
	return reach[min(len(reach)-1, int(math.Ceil(power*float64(len(reach))))-1)]
}

// AdjacentPairs pairs each round of y (the candidate's) with the round
// of x (the control's) beside it in time: the rounds of both sides in
// the order of their start times xAt and yAt (any unit), each taken
// with the next when that is the other side's and neither is paired
// yet. In a rehearsal's order (control, candidate, candidate, control,
// control, ...) that is (x1, y1), (y2, x2), (x3, y3), ...: disjoint
// pairs, each of two rounds run one after the other, so that a drift of
// the machine slower than a round moves both of a pair alike. Each pair
// is (index in x, index in y). ok is false, and no pairs, where the
// order is unknown (a start time missing, 0, or shared by two rounds),
// where some round has no neighbour of the other side to pair with, or
// with fewer than MinVerdictRounds pairs.
func AdjacentPairs(xAt, yAt []int64) (pairs [][2]int, ok bool) {
	if len(xAt) != len(yAt) || len(xAt) < MinVerdictRounds {
		return nil, false
	}
	type round struct {
		at int64
		y  bool
		i  int
	}
	all := make([]round, 0, len(xAt)+len(yAt))
	for i, at := range xAt {
		all = append(all, round{at, false, i})
	}
	for i, at := range yAt {
		all = append(all, round{at, true, i})
	}
	slices.SortFunc(all, func(a, b round) int { return cmp.Compare(a.at, b.at) })
	for i, r := range all {
		if r.at <= 0 || i > 0 && all[i-1].at == r.at {
			return nil, false
		}
	}
	for i := 0; i+1 < len(all); i += 2 {
		a, b := all[i], all[i+1]
		if a.y == b.y {
			return nil, false
		}
		if a.y {
			a, b = b, a
		}
		pairs = append(pairs, [2]int{a.i, b.i})
	}
	return pairs, true
}

// PairedAlphaShare is the share of the comparison's level the paired
// interval clears a rule at (PairedInterval at alpha·PairedAlphaShare:
// 98% where Welch's is 90%). Beside the rank and the guarded Welch
// interval at alpha, a paired interval at alpha too PASSed more
// changes just beyond the threshold (1.12x on +10%: 0.164 of
// rehearsals against 0.103); at a fifth of it, 0.108, and 1.2x as
// often as before, while identical candidates under a drift of the
// machine PASS far more often (TestVerdictPairedDesigns,
// docs/noise-measured.md).
const PairedAlphaShare = 0.2

// PairedInterval is the ratio of the candidate's rounds y to the
// control's x with its interval at two-sided level alpha over the pairs
// of rounds run beside each other (AdjacentPairs): Student's t with
// n-1 degrees of freedom on the n pairs' differences of logarithms,
// values under min counted as min. A drift of the machine from round to
// round is in each side's spread, and so in Welch's interval, but not
// in a pair's difference: where it dominates the rounds' noise the
// paired interval is the narrower. The rounds' own noise counts twice
// in a difference, and n-1 degrees of freedom are half Welch's: without
// drift it is the wider. Every round is in one pair, so its ratio is
// Welch's. No outlier guard: from four pairs, leaving out the farthest
// difference made identical candidates' intervals too narrow (one
// stored A/A's 0.865-0.970 at 90%). ok is false without pairs for
// every round, or fewer than MinVerdictRounds.
func PairedInterval(x, y []float64, pairs [][2]int, alpha, min float64) (Interval, bool) {
	if len(pairs) < MinVerdictRounds || len(pairs) != len(x) || len(pairs) != len(y) || alpha <= 0 || alpha >= 1 {
		return Interval{Ratio: 1, High: math.Inf(1)}, false
	}
	if min <= 0 {
		min = 1e-9
	}
	d := make([]float64, len(pairs))
	for i, p := range pairs {
		if p[0] < 0 || p[0] >= len(x) || p[1] < 0 || p[1] >= len(y) {
			return Interval{Ratio: 1, High: math.Inf(1)}, false
		}
		d[i] = math.Log(math.Max(y[p[1]], min)) - math.Log(math.Max(x[p[0]], min))
	}
	m := meanOf(d)
	in := Interval{Ratio: math.Exp(m), Level: 1 - alpha}
	se := math.Sqrt(sampleVar(d) / float64(len(d)))
	if se == 0 {
		in.Low, in.High = in.Ratio, in.Ratio
		return in, true
	}
	w := tQuantileCached(1-alpha/2, len(d)-1) * se
	in.Low, in.High = math.Exp(m-w), math.Exp(m+w)
	return in, true
}

// PairedLogSD is the standard deviation of the pairs' differences of
// logarithms (PairedInterval's spread) of the rounds x and y paired by
// pairs; ok is false where PairedInterval would give no interval.
func PairedLogSD(x, y []float64, pairs [][2]int) (float64, bool) {
	if len(pairs) < MinVerdictRounds || len(pairs) != len(x) || len(pairs) != len(y) {
		return 0, false
	}
	d := make([]float64, len(pairs))
	for i, p := range pairs {
		if p[0] < 0 || p[0] >= len(x) || p[1] < 0 || p[1] >= len(y) || x[p[0]] <= 0 || y[p[1]] <= 0 {
			return 0, false
		}
		d[i] = math.Log(y[p[1]]) - math.Log(x[p[0]])
	}
	return math.Sqrt(sampleVar(d)), true
}

// PairedReach is, in standard deviations of a pair's difference of
// logarithms, how far above no change PairedInterval over n pairs of
// identical sides at two-sided level alpha ends, at its quantile power:
// exp(sd·PairedReach) is the tightest threshold the paired interval
// clears identical sides under with chance power. Drawn as ClearsReach
// is (a fixed seed, 4000 draws, kept per n and alpha); +Inf with fewer
// than MinVerdictRounds pairs.
func PairedReach(n int, alpha, power float64) float64 {
	key := detectKey{n, 0, alpha, power}
	if v, ok := pairedReach.Load(key); ok {
		return v.(float64)
	}
	d := pairedReachOf(n, alpha, power)
	pairedReach.Store(key, d)
	return d
}

var pairedReach sync.Map

func pairedReachOf(n int, alpha, power float64) float64 {
	if n < MinVerdictRounds || alpha <= 0 || alpha >= 1 || power <= 0 || power >= 1 {
		return math.Inf(1)
	}
	r := rand.New(rand.NewPCG(765, uint64(n)))
	q := tQuantileCached(1-alpha/2, n-1)
	d := make([]float64, n)
	reach := make([]float64, rankDraws)
	for i := range reach {
		for j := range d {
			d[j] = r.NormFloat64()
		}
		reach[i] = meanOf(d) + q*math.Sqrt(sampleVar(d)/float64(n))
	}
	slices.Sort(reach)
	return reach[min(len(reach)-1, int(math.Ceil(power*float64(len(reach))))-1)]
}
