package compare

import (
	"fmt"
	"math"
	"os"
	"testing"
)

// Rounds added while a regression's mean is wide (WideMeans) narrow it
// and keep to what the rounds can carry: on synthetic rehearsals whose
// rounds vary by sigma 0.4 on the log scale (a saturated core's short
// queries), a true 2x on one query comes out with an interval at most
// the width asked or the budget spent, the interval holds the true 2x
// about as often as its 90% says, and the false-positive rate of
// identical sides stays at about 5% though rounds are added for width
// too.
func TestWideMeansNarrowTheForecast(t *testing.T) {
	seeds := 6
	if os.Getenv("PGREHEARSE_LONG") != "" {
		seeds = 100
	}
	const sigma, wide, maxRounds = 0.4, DefaultWidth, 12
	var held, narrowed, widerAt3, failedAA, regressedAA, undecidedAA, undecidedAA0 int
	// The forecast's error, |log(ratio/2)| summed, at 3 rounds a side
	// and at the end.
	var err3, errEnd float64
	for seed := range uint64(seeds) {
		name := fmt.Sprintf("seed %d", seed+1)
		at3, _ := widthRehearsal(t, seed+1, sigma, map[string]float64{"b": 2}, "mean>+50%", 3, wide)
		rep, n := widthRehearsal(t, seed+1, sigma, map[string]float64{"b": 2}, "mean>+50%", maxRounds, wide)
		checkVerdict(t, name, rep)
		b, b3 := rep.Query("b"), at3.Query("b")
		if b == nil || b3 == nil || b.Effects == nil || b3.Effects == nil {
			t.Fatalf("%s: b not compared", name)
		}
		e, e3 := b.Effects.Of(MetricMean), b3.Effects.Of(MetricMean)
		err3, errEnd = err3+math.Abs(math.Log(e3.Ratio/2)), errEnd+math.Abs(math.Log(e.Ratio/2))
		if width(e3.Low, e3.High) > wide {
			widerAt3++
		}
		if w := width(e.Low, e.High); w <= wide {
			narrowed++
		} else if n < maxRounds && (b.Status.Regression() || b.Status == StatusSlowerWhileBusier) {
			t.Errorf("%s: b (%s) stopped at %d rounds a side with its mean's interval %.2f-%.2f (%.1fx wide), budget left", name, b.Status, n, e.Low, e.High, w)
		}
		if e.Low <= 2 && 2 <= e.High {
			held++
		}
		for _, w := range rep.WideMeans(wide) {
			if q := rep.Query(w.Fingerprint); q == nil || !q.Status.Regression() && q.Status != StatusSlowerWhileBusier || w.Width() <= wide {
				t.Errorf("%s: wide %+v of a query %v", name, w, q)
			}
		}
		aa, _ := widthRehearsal(t, seed+1, sigma, nil, "mean>+50%", maxRounds, wide)
		checkVerdict(t, name+" A/A", aa)
		if aa.Verdict.Status == VerdictFail {
			failedAA++
		}
		if aa.Verdict.Regressions+aa.Verdict.TailRegressions > 0 {
			regressedAA++
		}
		// Rounds added for width must not leave identical sides
		// undecided more often than rounds until decided alone.
		if aa.Verdict.Status == VerdictUndecided {
			undecidedAA++
		}
		if aa0, _ := widthRehearsal(t, seed+1, sigma, nil, "mean>+50%", maxRounds, 0); aa0.Verdict.Status == VerdictUndecided {
			undecidedAA0++
		}
	}
	t.Logf("2x: wider than %.0fx at 3 rounds a side %d of %d, narrowed %d, the interval held 2x %d, mean error of the ratio x%.2f at 3 rounds a side, x%.2f at the end; A/A: %d failed, %d regressed, %d undecided (%d without rounds for width)",
		wide, widerAt3, seeds, narrowed, held, math.Exp(err3/float64(seeds)), math.Exp(errEnd/float64(seeds)), failedAA, regressedAA, undecidedAA, undecidedAA0)
	if errEnd >= err3 {
		t.Errorf("the rounds added left the forecast's error at x%.2f, against x%.2f at 3 rounds a side", math.Exp(errEnd/float64(seeds)), math.Exp(err3/float64(seeds)))
	}
	if widerAt3 == 0 {
		t.Errorf("no rehearsal's 2x was wider than %.0fx at 3 rounds a side: the test tests nothing", wide)
	}
	if held < seeds*3/4 {
		t.Errorf("the interval held the true 2x in %d of %d rehearsals, want about 90%%", held, seeds)
	}
	if undecidedAA > undecidedAA0+1+seeds*3/100 {
		t.Errorf("A/A: %d of %d undecided with rounds added for width, %d without", undecidedAA, seeds, undecidedAA0)
	}
	if failedAA > 1+seeds*6/100 || regressedAA > 1+seeds*6/100 {
		t.Errorf("A/A: %d of %d failed and %d regressed, want at most about 5%%", failedAA, seeds, regressedAA)
	}
}

// WideMeans names only regressions, only beyond the factor, and none
// when off.
func TestWideMeansWho(t *testing.T) {
	rep, _ := widthRehearsal(t, 3, 0.4, map[string]float64{"b": 2}, "mean>+50%", 3, 0)
	for _, f := range []float64{0, 1, 0.5} {
		if w := rep.WideMeans(f); w != nil {
			t.Errorf("factor %g: %+v, want none (off)", f, w)
		}
	}
	for _, w := range rep.WideMeans(1.01) {
		q := rep.Query(w.Fingerprint)
		if !q.Status.Regression() && q.Status != StatusSlowerWhileBusier {
			t.Errorf("%s is %s: not a regression", w.Fingerprint, q.Status)
		}
		if e := q.Effects.Of(MetricMean); w.Low != e.Low || w.Ratio != e.Ratio || w.Width() <= 1.01 {
			t.Errorf("%+v against its effect %+v", w, e)
		}
	}
	big := rep.WideMeans(1e9)
	if len(big) != 0 {
		t.Errorf("factor 1e9: %+v", big)
	}
}
