package main

import (
	"math"

	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// The truth is itself measured: a few rounds a side of the application,
// whose ratio moves from run to run. A forecast whose interval holds the
// true ratio as often as it claims still misses that measured truth
// more often, by as much as the truth's own noise. perfectInside says
// how often: the yardstick's ceiling, printed beside the count of rows
// inside so that a reader can tell a forecast's fault from the truth's.

// medianEfficiency is the standard error of a median of normal samples
// over that of their mean (sqrt(pi/2)): the truth's ratio is of medians.
var medianEfficiency = math.Sqrt(math.Pi / 2)

// truthSD is the standard deviation of the log of the truth's ratio of
// medians, from its rounds: the two sides' log figures pooled about
// their own means. ok is false without two rounds on a side or with a
// figure of 0 or below.
func truthSD(ctl, cand []float64) (sd float64, ok bool) {
	logs := func(v []float64) ([]float64, bool) {
		out := make([]float64, len(v))
		for i, x := range v {
			if x <= 0 {
				return nil, false
			}
			out[i] = math.Log(x)
		}
		return out, true
	}
	lc, okC := logs(ctl)
	lk, okK := logs(cand)
	if !okC || !okK {
		return 0, false
	}
	pooled, ok := stats.PooledSD([][]float64{lc, lk})
	if !ok {
		return 0, false
	}
	return medianEfficiency * pooled * math.Sqrt(1/float64(len(ctl))+1/float64(len(cand))), true
}

// perfectInside is the probability that a measured truth lies inside a
// forecast's interval [low, high] at level when the forecast is exactly
// as good as the interval claims (unbiased, its interval's width its
// own noise) and the truth's log ratio carries noise of truthSD: the
// difference of the two is normal with both variances, and the interval
// is as wide as the forecast's alone. The interval's log half-width
// gives the forecast's noise. ok is false without an interval.
func perfectInside(low, high, level, truthSD float64) (p float64, ok bool) {
	if low <= 0 || high <= low || level <= 0 || level >= 1 {
		return 0, false
	}
	z := stats.NormalQuantile((1 + level) / 2)
	half := math.Log(high/low) / 2
	sdF := half / z
	sd := math.Hypot(sdF, truthSD)
	if sd == 0 {
		return 1, true
	}
	return math.Erf(half / sd / math.Sqrt2), true
}

// withinNoise says whether a forecast and the measured truth differ by
// no more than their two noises allow at the forecast's level: the log
// difference against z times the hypotenuse of the forecast's noise
// (its interval's half-width on the truth's side, over z) and the
// truth's. Under a forecast as good as its interval claims it holds at
// that level, where inside (the truth within the interval alone) holds
// less often by the truth's noise. ok is false without an interval or a
// truth's noise.
func withinNoise(ratio, low, high, level, truth, truthSD float64) (within, ok bool) {
	if ratio <= 0 || truth <= 0 || low <= 0 || high < ratio || low > ratio || level <= 0 || level >= 1 || truthSD <= 0 {
		return false, false
	}
	z := stats.NormalQuantile((1 + level) / 2)
	half := math.Log(ratio / low)
	if truth > ratio {
		half = math.Log(high / ratio)
	}
	return math.Abs(math.Log(truth/ratio)) <= z*math.Hypot(half/z, truthSD), true
}
