package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// TestCalibrationSynthetic checks perfectInside and withinNoise on
// synthetic forecasts and truths of known noise: a forecast as good as
// its 90% interval claims, beside a truth measured with rounds of its
// own, lands inside as often as perfectInside says and within both
// noises about 90% of the time; one biased by 1.5 its interval's
// half-width is within noise clearly less often.
func TestCalibrationSynthetic(t *testing.T) {
	const (
		trials = 20000
		level  = 0.90
		rounds = 3    // the truth's, a side
		sdF    = 0.10 // the forecast's log noise
		sdR    = 0.12 // a truth round's log noise
	)
	z := stats.NormalQuantile((1 + level) / 2)
	rng := rand.New(rand.NewPCG(7, 58))
	for _, tc := range []struct {
		name       string
		bias       float64 // in the forecast's interval half-widths
		wantWithin func(rate float64) bool
	}{
		{"unbiased", 0, func(r float64) bool { return r > 0.86 && r < 0.94 }},
		{"biased", 1.5, func(r float64) bool { return r < 0.75 }},
	} {
		var inside, within, told int
		var perfect float64
		for range trials {
			const trueLog = 1.0 // a true ratio of e
			fc := trueLog + tc.bias*z*sdF + rng.NormFloat64()*sdF
			low, high := math.Exp(fc-z*sdF), math.Exp(fc+z*sdF)
			ctl, cand := make([]float64, rounds), make([]float64, rounds)
			for i := range rounds {
				ctl[i] = math.Exp(rng.NormFloat64() * sdR)
				cand[i] = math.Exp(trueLog + rng.NormFloat64()*sdR)
			}
			truth := median(cand) / median(ctl)
			sd, ok := truthSD(ctl, cand)
			if !ok {
				t.Fatal("truthSD: no noise from 3 rounds a side")
			}
			p, ok := perfectInside(low, high, level, sd)
			if !ok {
				t.Fatal("perfectInside: not told")
			}
			perfect += p
			if low <= truth && truth <= high {
				inside++
			}
			if w, ok := withinNoise(math.Exp(fc), low, high, level, truth, sd); ok {
				told++
				if w {
					within++
				}
			}
		}
		insideRate, perfectRate, withinRate := float64(inside)/trials, perfect/trials, float64(within)/float64(told)
		t.Logf("%s: inside %.3f, perfectInside %.3f, within noise %.3f", tc.name, insideRate, perfectRate, withinRate)
		if told != trials {
			t.Errorf("%s: withinNoise told %d of %d", tc.name, told, trials)
		}
		if !tc.wantWithin(withinRate) {
			t.Errorf("%s: within noise in %.3f of trials", tc.name, withinRate)
		}
		if tc.bias == 0 && math.Abs(insideRate-perfectRate) > 0.06 {
			t.Errorf("unbiased: inside %.3f, but perfectInside said %.3f", insideRate, perfectRate)
		}
		if tc.bias == 0 && insideRate > 0.85 {
			t.Errorf("unbiased: inside %.3f; the truth's noise should hold it under the interval's 90%%", insideRate)
		}
	}
}

// TestCalibrationEdges: no figure where there is nothing to tell it from.
func TestCalibrationEdges(t *testing.T) {
	if _, ok := truthSD([]float64{1}, []float64{2}); ok {
		t.Error("truthSD from one round a side")
	}
	if _, ok := truthSD([]float64{1, 0}, []float64{2, 3}); ok {
		t.Error("truthSD with a round of 0")
	}
	if _, ok := perfectInside(0, 2, 0.9, 0.1); ok {
		t.Error("perfectInside without a low end")
	}
	if p, ok := perfectInside(1, 2, 0.9, 0); !ok || math.Abs(p-0.9) > 1e-9 {
		t.Errorf("perfectInside with an exact truth: %v %v, want the level", p, ok)
	}
	if _, ok := withinNoise(1.5, 1, 2, 0.9, 1.4, 0); ok {
		t.Error("withinNoise without the truth's noise")
	}
	// 3x against an interval 1.4-1.6 with a little truth noise: not within.
	if w, ok := withinNoise(1.5, 1.4, 1.6, 0.9, 3, 0.05); !ok || w {
		t.Errorf("withinNoise(1.5 (1.4-1.6), truth 3): %v %v", w, ok)
	}
}

// TestTruthBefore: the rounds before the rehearsal are whole pairs, half
// of them or just over, so that as many control rounds as candidate
// rounds run on each side of the rehearsal.
func TestTruthBefore(t *testing.T) {
	for _, tc := range []struct {
		rounds  int
		bracket bool
		want    int
	}{
		{5, true, 6}, {10, true, 10}, {3, true, 4}, {1, true, 2}, {2, true, 2},
		{5, false, 10}, {3, false, 6},
	} {
		got := truthBefore(tc.rounds, tc.bracket)
		if got != tc.want {
			t.Errorf("truthBefore(%d, %v) = %d, want %d", tc.rounds, tc.bracket, got, tc.want)
		}
		if got%2 != 0 {
			t.Errorf("truthBefore(%d, %v) = %d: not whole pairs", tc.rounds, tc.bracket, got)
		}
		ctl := 0
		for i := range got {
			if (i+i/2)%2 == 0 {
				ctl++
			}
		}
		if ctl*2 != got {
			t.Errorf("truthBefore(%d, %v) = %d: %d control rounds before the rehearsal", tc.rounds, tc.bracket, got, ctl)
		}
	}
}
