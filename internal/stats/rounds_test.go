package stats

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestRoundsFalsePositivesAndPower: the A/A false-positive rate and the
// power on a 20% slowdown for every count of rounds a side from 2 to
// MaxD2Rounds (25), run-to-run spread 5% (sigma 0.05 on the log scale),
// the default level. "higher" is the share of trials whose interval lies
// above 1, "beyond floors" what a comparison calls a regression (above
// the effect floor, +10%, and the control's noise floor). The figures are
// docs/noise-measured.md's ("From 2 to 25 rounds").
func TestRoundsFalsePositivesAndPower(t *testing.T) {
	const sigma = 0.05
	fpTrials, pwTrials := trialsOf(2000), trialsOf(1000)
	var table strings.Builder
	var power3 float64
	fmt.Fprintf(&table, "rounds  level   A/A higher  lower   beyond floors   1.20x higher  beyond floors  (sigma %.2f; %d A/A trials, %d 1.20x trials)\n", sigma, fpTrials, pwTrials)
	for n := 2; n <= MaxD2Rounds; n++ {
		h, b, l := simulate(uint64(4500+n), fpTrials, n, n, sigma, 1, Options{MinEffect: 0.1})
		ph, pb, _ := simulate(uint64(4600+n), pwTrials, n, n, sigma, 1.2, Options{MinEffect: 0.1})
		level := Level(n, n, DefaultAlpha)
		fmt.Fprintf(&table, "%-7d %.4f  %.4f      %.4f  %.4f          %.4f        %.4f\n", n, level, h, l, b, ph, pb)
		if n >= 3 {
			// The exact interval misses on each side with
			// (1 - level)/2 at most: within four standard errors
			// of the simulation.
			side := (1 - level) / 2
			se := math.Sqrt(side * (1 - side) / float64(fpTrials))
			if level < 1-DefaultAlpha-1e-12 || h > side+4*se || l > side+4*se {
				t.Errorf("%d rounds: level %.4f, A/A higher %.4f, lower %.4f; want at most %.4f a side", n, level, h, l, side)
			}
		}
		// What is called a regression is what the test found beyond
		// the floors: never more than the test alone, and under 5%
		// of A/A comparisons of one figure, two rounds included
		// (whose interval is the ratio widened by their measured
		// noise, there being no rank interval at 0.10).
		if b > h || b > 0.05 {
			t.Errorf("%d rounds: A/A regression in %.4f of trials (higher %.4f), want at most 0.05 and the test's", n, b, h)
		}
		// More rounds never lose power: the noise floor of n rounds is
		// their range scaled to three's (d2), so 4 to 25 rounds find a
		// 20% change at least as often as three, within the
		// simulation's error; three find it in 80% at 5% noise (88%
		// with the exact rank interval; mirrored about the ratio,
		// 83%: docs/noise-measured.md).
		pse := math.Sqrt(0.25 / float64(pwTrials))
		switch {
		case n == 3 && pb < 0.80:
			t.Errorf("3 rounds: a 20%% slowdown called a regression in %.4f of trials, want 0.80", pb)
		case n == 3:
			power3 = pb
		case n > 3 && pb < power3-3*pse:
			t.Errorf("%d rounds: a 20%% slowdown called a regression in %.4f of trials, fewer than three rounds' %.4f", n, pb, power3)
		case n >= 6 && pb < 0.98:
			t.Errorf("%d rounds: a 20%% slowdown called a regression in %.4f of trials, want 0.98", n, pb)
		}
	}
	t.Logf("\n%s", table.String())
}
