package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The verdict's interval, against the alternatives issue 76 names (item
// 4: an identical candidate should PASS mean>+10% and p95>+20% within
// the default budget). Each design is run through the rehearsal's
// sequential budget on synthetic round figures (lognormal, known
// change): three rounds a side judged at the two-sided level 0.10, then
// up to five added pairs, each look at 0.10/5 = 0.02 (LookAlpha of six
// looks); a rule "figure>+thr" PASSes at the first look whose interval
// ends under 1+thr, FAILs at the first whose interval starts above it.
// A round's figure is its side's level times exp(σ·Z) (the rounds'
// spread), the sides' rounds made in turn (control, candidate, ...), a
// drift moving the level of both by drift per round made, and an
// outlier round, when asked, the candidate's second round slower by
// 1.5x.
//
// The designs: "rank", the verdict's today (Effect: the exact
// Mann-Whitney interval on the logarithms, mirrored about the ratio);
// "welch", Student's t with Welch's degrees of freedom on the rounds'
// logarithms; "welch-trim", the same after dropping a side's round that
// lies more than 3.5 robust standard deviations (1.4826 MADs) from its
// side's median, when the side has four or more.

type verdictDesign func(x, y []float64, alpha float64) (low, high float64, ok bool)

func rankDesign(x, y []float64, alpha float64) (float64, float64, bool) {
	r := Effect(x, y, Options{Alpha: alpha})
	return r.Low, r.High, r.RankInterval
}

func welchDesign(x, y []float64, alpha float64) (float64, float64, bool) {
	in, ok := WelchInterval(x, y, alpha, 0)
	return in.Low, in.High, ok
}

func welchTrimDesign(x, y []float64, alpha float64) (float64, float64, bool) {
	in, ok := GuardedWelchInterval(x, y, alpha, 0)
	return in.Low, in.High, ok
}

type verdictCase struct {
	sigma, ratio, drift float64
	outlier             bool
	// maxSide is the budget's rounds a side; 0 means the default, 8
	// (three, then five added pairs).
	maxSide int
	// abba: the rounds in the rehearsal's order (control, candidate,
	// candidate, control, ...) rather than in turn; walk: the level of
	// both sides takes a random step of sd walk per round made (a
	// random walk of the machine's speed), beside the linear drift.
	abba bool
	walk float64
}

// lookDecider decides one look of a rule "figure>+thr" over the
// rounds so far: +1 FAIL, -1 PASS, 0 undecided; above reports whether
// the interval it read lay above 1 (a change claimed).
type lookDecider func(x, y []float64, look, looks int, thr float64) (verdict int, above bool)

// designLook is design d judged as issue 76's measurement did: the
// first look at 0.10, each later one at 0.10/(looks-1); PASS when the
// interval ends under thr, FAIL when it starts above it.
func designLook(d verdictDesign) lookDecider {
	return func(x, y []float64, look, looks int, thr float64) (int, bool) {
		a := 0.10
		if look > 1 {
			a /= float64(looks - 1)
		}
		low, high, ok := d(x, y, a)
		switch {
		case !ok:
			return 0, false
		case low > thr:
			return 1, low > 1
		case high < thr:
			return -1, low > 1
		}
		return 0, low > 1
	}
}

// verdictLook is a look as internal/compare's decide judges a latency
// rule (figureState), on the statistics it calls: broken when the
// rounds' effect at 0.10 (Effect, the rank interval) is slower beyond
// its floors (+10%, the control's spread) with its ratio beyond thr, at
// a later look only where the look's interval (at 0.10/(looks-1):
// WelchInterval, or with rankOnly the rank interval) starts above 1;
// clear when the effect's interval at 0.10 ends at or under thr, or
// (not rankOnly) GuardedWelchInterval's at 0.10 does. The calls' own
// evidence and the per-call floors are left out: the rounds' figures
// are the whole of it here (internal/compare's
// TestVerdictWelchThroughRuns runs the comparison itself).
//
// With paired, a rule is also cleared when PairedInterval at
// 0.10·PairedAlphaShare over the rounds paired index by index ends at
// or under thr: the pairs AdjacentPairs forms in either order
// sequentialVerdict makes rounds in ((x1, y1), (y2, x2), ... in the
// rehearsal's, (x1, y1), (x2, y2), ... in turn).
func verdictLook(rankOnly, paired bool) lookDecider {
	return verdictLookAt(rankOnly, paired, 0.10, 0.10*PairedAlphaShare)
}

// verdictLookAt is verdictLook with the guarded Welch interval that
// clears at two-sided level welchAlpha and the paired one at
// pairedAlpha.
func verdictLookAt(rankOnly, paired bool, welchAlpha, pairedAlpha float64) lookDecider {
	return func(x, y []float64, look, looks int, thr float64) (int, bool) {
		const alpha = 0.10
		e := Effect(x, y, Options{Alpha: alpha, MinEffect: 0.10})
		// above: the look claims the candidate slower, whatever thr.
		above := e.Change == Higher
		if above && look > 1 {
			la := alpha / float64(looks-1)
			low := 0.0
			if in, ok := WelchInterval(x, y, la, 0); ok && !rankOnly {
				low = in.Low
			} else if r := Effect(x, y, Options{Alpha: la}); rankOnly && r.RankInterval {
				low = r.Low
			}
			above = low > 1
		}
		if e.Change == Higher && e.Beyond && e.Ratio > thr {
			if above {
				return 1, true
			}
			return 0, false
		}
		if e.High <= thr {
			return -1, above
		}
		if in, ok := GuardedWelchInterval(x, y, welchAlpha, 0); ok && !rankOnly && in.High <= thr {
			return -1, above
		}
		if in, ok := PairedInterval(x, y, indexPairs(len(x)), pairedAlpha, 0); ok && paired && in.High <= thr {
			return -1, above
		}
		return 0, above
	}
}

// sequentialVerdict runs one rehearsal judged look by look by decide
// against rule threshold thr (a factor): +1 FAIL, -1 PASS, 0 UNDECIDED
// after the budget; above reports whether any look claimed a change.
func sequentialVerdict(r *rand.Rand, decide lookDecider, c verdictCase, thr float64) (verdict int, above bool) {
	const first = 3
	maxSide := 8
	if c.maxSide > 0 {
		maxSide = c.maxSide
	}
	looks := 1 + maxSide - first
	var x, y []float64
	t, level := 0.0, 0.0
	round := func(ratio float64) float64 {
		if t > 0 && c.walk > 0 {
			level += c.walk * r.NormFloat64()
		}
		v := ratio * math.Exp(c.sigma*r.NormFloat64()+c.drift*t+level)
		t++
		return v
	}
	candidate := func() {
		v := round(c.ratio)
		if c.outlier && len(y) == 1 {
			v *= 1.5
		}
		y = append(y, v)
	}
	for len(x) < maxSide {
		if c.abba && len(x)%2 == 1 {
			candidate()
			x = append(x, round(1))
		} else {
			x = append(x, round(1))
			candidate()
		}
		if len(x) < first {
			continue
		}
		v2, ab := decide(x, y, len(x)-first+1, looks, thr)
		above = above || ab
		if v2 != 0 {
			return v2, above
		}
	}
	return 0, above
}

type verdictRates struct{ fail, pass, above float64 }

func runVerdict(seed uint64, trials int, d lookDecider, c verdictCase, thr float64) verdictRates {
	r := rand.New(rand.NewPCG(seed, 76))
	var out verdictRates
	for range trials {
		v, above := sequentialVerdict(r, d, c, thr)
		switch v {
		case 1:
			out.fail++
		case -1:
			out.pass++
		}
		if above {
			out.above++
		}
	}
	n := float64(trials)
	return verdictRates{out.fail / n, out.pass / n, out.above / n}
}

// TestVerdictIntervalDesigns measures each design's false positives
// (an identical candidate's interval above 1 at any look, and FAIL of
// mean>+10%), its power (FAIL of a rule at +10% against 1.2x, 1.5x, 2x)
// and its chance to PASS an identical candidate on +10% and +20%, at
// rounds 3% to 10% apart, with drift and with an outlier round; and the
// same of the verdict as internal/compare judges it (verdictLook, on
// the statistics it calls), with the rounds' Welch intervals ("verdict")
// and without them ("verdict-rank", before issue 76 item 4). It asserts
// what a design must hold to be the verdict's: at most the nominal 10%
// (plus sampling tolerance) of identical candidates claimed changed, and
// no less power than the rank interval's against a 1.5x; and of the
// verdict: identical candidates claimed slower in at most 6% of
// rehearsals and FAILed in at most 1%, PASSed at least as often as
// before, an outlier round never FAILing them, and a 1.5x and a 2x
// FAILed at least as often as before (go test -v -run
// TestVerdictIntervalDesigns ./internal/stats prints the table; -long
// ten times the trials).
func TestVerdictIntervalDesigns(t *testing.T) {
	// make test: 600 trials, without the unguarded Welch design (the
	// verdict's later looks read it; "verdict" runs it), about as long
	// as the three designs at 2,000 before the verdict was measured.
	trials := 600
	type design struct {
		name string
		d    lookDecider
	}
	designs := []design{{"rank", designLook(rankDesign)}, {"welch-trim", designLook(welchTrimDesign)},
		{"verdict-rank", verdictLook(true, false)}, {"verdict", verdictLook(false, false)}}
	if *long {
		trials = 20000
		designs = slices.Insert(designs, 1, design{"welch", designLook(welchDesign)})
	}
	type row struct {
		name string
		c    verdictCase
		thr  float64
	}
	var rows []row
	for _, s := range []float64{0.03, 0.05, 0.08, 0.10} {
		rows = append(rows, row{fmt.Sprintf("A/A σ=%.2f +10%%", s), verdictCase{sigma: s, ratio: 1}, 1.10},
			row{fmt.Sprintf("A/A σ=%.2f +20%%", s), verdictCase{sigma: s, ratio: 1}, 1.20})
	}
	rows = append(rows,
		row{"A/A σ=0.05 drift 0.01/round +10%", verdictCase{sigma: 0.05, ratio: 1, drift: 0.01}, 1.10},
		row{"A/A σ=0.05 drift 0.03/round +10%", verdictCase{sigma: 0.05, ratio: 1, drift: 0.03}, 1.10},
		row{"A/A σ=0.05 outlier round +10%", verdictCase{sigma: 0.05, ratio: 1, outlier: true}, 1.10})
	// A larger budget: twelve rounds a side (nine added pairs, each
	// look at 0.10/9).
	rows = append(rows,
		row{"A/A σ=0.05 budget 12 +10%", verdictCase{sigma: 0.05, ratio: 1, maxSide: 12}, 1.10},
		row{"A/A σ=0.08 budget 12 +10%", verdictCase{sigma: 0.08, ratio: 1, maxSide: 12}, 1.10},
		row{"A/A σ=0.10 budget 12 +20%", verdictCase{sigma: 0.10, ratio: 1, maxSide: 12}, 1.20},
		row{"1.2x σ=0.10 budget 12 +10%", verdictCase{sigma: 0.10, ratio: 1.2, maxSide: 12}, 1.10})
	for _, ratio := range []float64{1.2, 1.5, 2} {
		rows = append(rows, row{fmt.Sprintf("%.1fx σ=0.10 +10%%", ratio), verdictCase{sigma: 0.10, ratio: ratio}, 1.10})
	}
	got := map[string]map[string]verdictRates{}
	t.Logf("%-34s %-12s %6s %6s %6s", "case (rule)", "design", "FAIL", "PASS", ">1")
	for i, rw := range rows {
		got[rw.name] = map[string]verdictRates{}
		for _, d := range designs {
			v := runVerdict(uint64(1000+i), trials, d.d, rw.c, rw.thr)
			got[rw.name][d.name] = v
			t.Logf("%-34s %-12s %6.3f %6.3f %6.3f", rw.name, d.name, v.fail, v.pass, v.above)
		}
	}
	// Sampling tolerance: four binomial standard errors at 10%.
	tol := 4 * math.Sqrt(0.1*0.9/float64(trials))
	aa := []string{"A/A σ=0.03 +10%", "A/A σ=0.05 +10%", "A/A σ=0.10 +10%", "A/A σ=0.05 drift 0.01/round +10%", "A/A σ=0.05 budget 12 +10%"}
	for _, d := range designs {
		if strings.HasPrefix(d.name, "verdict") {
			continue
		}
		for _, s := range aa {
			if v := got[s][d.name]; v.above > 0.10+tol || v.fail > 0.01 {
				t.Errorf("%s, %s: %.3f claimed changed (nominal 0.10), %.3f FAIL", s, d.name, v.above, v.fail)
			}
		}
		// An outlier round never makes an identical candidate FAIL.
		if v := got["A/A σ=0.05 outlier round +10%"][d.name]; v.fail > 0.01 {
			t.Errorf("%s: an outlier round FAILs an identical candidate in %.3f", d.name, v.fail)
		}
		if v := got["1.5x σ=0.10 +10%"][d.name]; v.fail < got["1.5x σ=0.10 +10%"]["rank"].fail-tol {
			t.Errorf("%s catches a 1.5x in %.3f, the rank interval in %.3f", d.name, v.fail, got["1.5x σ=0.10 +10%"]["rank"].fail)
		}
	}
	// The verdict: its false positives at its confidence, and no less
	// PASS of identical candidates nor power than before.
	tol6 := 4 * math.Sqrt(0.06*0.94/float64(trials))
	for _, rw := range rows {
		now, old := got[rw.name]["verdict"], got[rw.name]["verdict-rank"]
		if rw.c.ratio == 1 && rw.c.drift <= 0.01 {
			// Most of its FAILs of identical candidates are its first
			// look's, the rank interval's (the calls' evidence that
			// also holds them is left out here); the later looks'
			// Welch interval confirms a few more than the rank
			// interval did (0.025 against 0.021 at σ 0.08, -long).
			if now.above > 0.06+tol6 || now.fail > old.fail+0.01 {
				t.Errorf("%s: the verdict claims an identical candidate slower in %.3f, FAILs it in %.3f (before %.3f)", rw.name, now.above, now.fail, old.fail)
			}
			if now.pass < old.pass {
				t.Errorf("%s: the verdict PASSes an identical candidate in %.3f, before in %.3f", rw.name, now.pass, old.pass)
			}
		}
		if rw.c.ratio >= 1.5 && now.fail < old.fail-tol/4 {
			t.Errorf("%s: the verdict FAILs in %.3f, before in %.3f", rw.name, now.fail, old.fail)
		}
		// A change beyond the threshold cleared of it: the clearing
		// interval's miss on its upper side, at most its 5%.
		if rw.c.ratio > rw.thr && now.pass > 0.05 {
			t.Errorf("%s: the verdict PASSes in %.3f", rw.name, now.pass)
		}
	}
}

// TestGuardedWelchInterval: the guard leaves out one round far from its
// side's median, on a side of four rounds or more, and nothing else;
// the interval holds its ratio; fewer than three rounds a side give none.
func TestGuardedWelchInterval(t *testing.T) {
	for _, tc := range []struct {
		name    string
		x, y    []float64
		dropped int
		ok      bool
	}{
		{"three a side", []float64{10, 10.5, 9.8}, []float64{10.2, 9.9, 10.4}, 0, true},
		{"slow round of four", []float64{10, 10.5, 9.8, 10.1}, []float64{10.2, 9.9, 15, 10.4}, 1, true},
		{"slow round of three kept", []float64{10, 10.5, 9.8}, []float64{10.2, 15, 10.4}, 0, true},
		{"spread, no outlier", []float64{8, 9, 10, 11, 12}, []float64{8.5, 9.5, 10.5, 11.5}, 0, true},
		{"two rounds", []float64{10, 10.5}, []float64{10.2, 9.9, 10.4}, 0, false},
	} {
		in, ok := GuardedWelchInterval(tc.x, tc.y, 0.10, 0)
		plain, _ := WelchInterval(tc.x, tc.y, 0.10, 0)
		if ok != tc.ok || in.Dropped != tc.dropped {
			t.Errorf("%s: ok %v, dropped %d; want %v, %d", tc.name, ok, in.Dropped, tc.ok, tc.dropped)
			continue
		}
		if !ok {
			continue
		}
		if in.Low > in.Ratio || in.High < in.Ratio || in.Level != 0.90 {
			t.Errorf("%s: %+v", tc.name, in)
		}
		if tc.dropped == 0 && in != plain {
			t.Errorf("%s: guarded %+v, plain %+v", tc.name, in, plain)
		}
		if tc.dropped > 0 && in.High >= plain.High {
			t.Errorf("%s: guarded %+v not narrower than plain %+v", tc.name, in, plain)
		}
	}
}

// TestClearsReach: the interval that clears (the rank interval or the
// guarded Welch interval, whichever ends lower) reaches no further above
// 1 than the rank interval alone, and less far with more rounds.
func TestClearsReach(t *testing.T) {
	prev := math.Inf(1)
	ns := []int{3, 4, 5}
	if *long {
		ns = append(ns, 8, 12)
	}
	for _, n := range ns {
		c, r := ClearsReach(n, n, 0.10, 0.8), RankDetectable(n, n, 0.10, 0.8)
		t.Logf("%d rounds a side: clears at %.2f sd, the rank interval alone %.2f", n, c, r)
		if math.IsInf(c, 0) || c > r || c >= prev {
			t.Errorf("%d rounds a side: reach %.3f, the rank interval's %.3f, %.3f with fewer", n, c, r, prev)
		}
		prev = c
	}
	if !math.IsInf(ClearsReach(2, 3, 0.10, 0.8), 1) {
		t.Error("two rounds: a reach")
	}
}

// indexPairs pairs round i of each side with round i of the other, as
// AdjacentPairs does rounds made in turn or in the rehearsal's order.
func indexPairs(n int) [][2]int {
	p := make([][2]int, n)
	for i := range p {
		p[i] = [2]int{i, i}
	}
	return p
}

func pairedDesign(x, y []float64, alpha float64) (float64, float64, bool) {
	in, ok := PairedInterval(x, y, indexPairs(len(x)), alpha, 0)
	return in.Low, in.High, ok
}
