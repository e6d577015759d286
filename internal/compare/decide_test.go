package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// rehearsal is a synthetic rehearsal for decide's tests: rounds of a few
// queries whose figures vary from round to round by sigma on the log
// scale (a busy machine), the candidate's scaled by shift.
type rehearsal struct {
	sides
	sigma float64
	means map[string]float64
	shift map[string]float64
}

// sides are a synthetic rehearsal's runs of each side, in order, drawn
// by r.
type sides struct {
	t          testing.TB
	r          *rand.Rand
	base, cand []*Run
	seq        uint64
}

// add makes the next run, of queries qs, named by prefix and its number,
// on the candidate's side or the baseline's.
func (s *sides) add(cand bool, prefix string, qs map[string]queryDist) {
	s.seq++
	run := runOfQueries(s.t, fmt.Sprintf("%s%d.json", prefix, s.seq), s.r.Uint64(), qs)
	if cand {
		s.cand = append(s.cand, run)
	} else {
		s.base = append(s.base, run)
	}
}

// verdicts count rehearsals by their verdict.
type verdicts struct{ failed, undecided, passed int }

func (v *verdicts) count(s VerdictStatus) {
	switch s {
	case VerdictFail:
		v.failed++
	case VerdictUndecided:
		v.undecided++
	default:
		v.passed++
	}
}

func (h *rehearsal) round(cand bool) {
	qs := map[string]queryDist{}
	for _, fp := range sortedKeys(h.means) {
		m := h.means[fp] * math.Exp(h.sigma*h.r.NormFloat64())
		if s, ok := h.shift[fp]; ok && cand {
			m *= s
		}
		qs[fp] = queryDist{n: 100, d: expAround(m)}
	}
	h.add(cand, "r", qs)
}

// decideRehearsal runs 3 rounds a side, then adds one a side while a
// query is undecided, up to maxRounds a side, as rehearse.Run does, and
// returns the last look's comparison.
func decideRehearsal(t *testing.T, seed uint64, sigma float64, shift map[string]float64, rules string, maxRounds int) *Report {
	rep, _ := widthRehearsal(t, seed, sigma, shift, rules, maxRounds, 0)
	return rep
}

// widthRehearsal is decideRehearsal that also adds rounds while a query
// that regressed has a mean's interval wider than width (WideMeans;
// 0: off), and returns the rounds a side it ran.
func widthRehearsal(t *testing.T, seed uint64, sigma float64, shift map[string]float64, rules string, maxRounds int, width float64) (*Report, int) {
	h := &rehearsal{sides: sides{t: t, r: rand.New(rand.NewPCG(seed, 58))}, sigma: sigma, shift: shift,
		means: map[string]float64{"a": 2000, "b": 5000, "c": 12000}}
	for range 3 {
		h.round(false)
		h.round(true)
	}
	looks := 1 + maxRounds - 3
	for look := 1; ; look++ {
		rep, err := Runs(h.base, h.cand, Options{Rules: mustRules(t, rules), Look: look, Looks: looks})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.MoreRoundsWouldTell() && len(rep.WideMeans(width)) == 0 || look == looks {
			return rep, len(h.base)
		}
		h.round(look%2 == 1)
		h.round(look%2 == 0)
	}
}

// Rounds until decided hold the false-positive rate: on A/A rehearsals
// (no change) under a busy machine's noise, with rounds added while a
// query is undecided, no rule is broken and no query regresses in more
// than about 5% of the rehearsals (family-wise over their queries); a
// true 2x comes out broken or undecided, never "no change"; and no query
// is ever labelled "~" with an interval that holds the rule's threshold;
// nor undecided with the comparison's own interval (at Alpha) ending at
// or under it.
func TestDecideFalsePositivesAndPower(t *testing.T) {
	// make test runs a few seeds, for the invariants (a 2x never passes,
	// no "~" holds the threshold); make test-long (PGREHEARSE_LONG=1)
	// runs enough to measure the rates: 120 seeds took 48 s on a loaded
	// 2-core machine (A/A: 0 failed, 0 regressed, 31 undecided, 89
	// passed; 2x: 105 failed, 15 undecided, 0 passed; with the rank
	// interval alone, before the rounds' Welch interval cleared and
	// confirmed rules, 42 and 78 of the A/A, 106 and 14 of the 2x,
	// 71 s). When the later
	// looks cleared a rule only at their own level (LookAlpha), A/A was
	// 90 undecided and 30 passed, the 2x 104 failed and 16 undecided.
	seeds := 4
	if os.Getenv("PGREHEARSE_LONG") != "" {
		seeds = 120
	}
	type tally struct {
		verdicts
		regressed int
	}
	run := func(shift map[string]float64) tally {
		var n tally
		for seed := range uint64(seeds) {
			rep := decideRehearsal(t, seed+1, 0.25, shift, "p95>+50%,mean>+50%", 8)
			checkVerdict(t, fmt.Sprintf("shift %v seed %d", shift, seed+1), rep)
			n.count(rep.Verdict.Status)
			if rep.Verdict.Regressions+rep.Verdict.TailRegressions > 0 {
				n.regressed++
			}
			for _, u := range rep.Verdict.Undecided {
				q := rep.Query(u.Fingerprint)
				if u.High <= u.Threshold && u.Low > 1 || q == nil || q.Status.Regression() && u.High <= u.Threshold {
					t.Errorf("seed %d: undecided %+v, query %v: its interval decides", seed+1, u, q)
				}
				if q != nil && q.Effects.Of(u.Metric).High <= u.Threshold {
					t.Errorf("seed %d: undecided %+v, but the comparison's interval %.2f-%.2f ends under the threshold", seed+1, u, q.Effects.Of(u.Metric).Low, q.Effects.Of(u.Metric).High)
				}
				if q != nil && q.Status == StatusUndecided && !slices.Contains(q.Reasons, ReasonMayBreakRule) {
					t.Errorf("seed %d: undecided %s without its reason: %v", seed+1, q.Fingerprint, q.Reasons)
				}
			}
			for _, q := range rep.Queries {
				if q.Status != StatusUnchanged && q.Status != StatusSmallChange {
					continue
				}
				for _, m := range []Metric{MetricMean, MetricP95} {
					if e := q.Effects.Of(m); verdictHigh(e) > 1.5 && q.Baseline != nil && figureOf(q.Baseline, m)*0.5 >= DefaultMinEffectMS {
						t.Errorf("shift %v seed %d: %s is %s with its %s interval %.2f-%.2f (cleared by %+v) holding 1.5x", shift, seed+1, q.Fingerprint, q.Status, m, e.Low, e.High, e.Cleared)
					}
				}
			}
		}
		return n
	}
	aa := run(nil)
	t.Logf("A/A: %+v of %d", aa, seeds)
	if aa.failed > 1+seeds*6/100 || aa.regressed > 1+seeds*6/100 {
		t.Errorf("A/A: %d of %d rehearsals failed and %d regressed, want at most about 5%%", aa.failed, seeds, aa.regressed)
	}
	x2 := run(map[string]float64{"b": 2})
	t.Logf("2x: %+v of %d", x2, seeds)
	if x2.passed > 0 {
		t.Errorf("a true 2x passed %d of %d rehearsals", x2.passed, seeds)
	}
	if x2.failed < (seeds+1)/2 {
		t.Errorf("a true 2x failed only %d of %d rehearsals", x2.failed, seeds)
	}
}

// A rule broken where the noise is not measured (two rounds a side: the
// default floors judged it) waits while rounds may be added, and fails
// at the last look the budget allows.
func TestDecideNoiseNotMeasuredWaits(t *testing.T) {
	h := &rehearsal{sides: sides{t: t, r: rand.New(rand.NewPCG(7, 58))}, sigma: 0.02, shift: map[string]float64{"b": 10},
		means: map[string]float64{"a": 2000, "b": 5000}}
	for range 2 {
		h.round(false)
		h.round(true)
	}
	for _, tc := range []struct {
		look, looks int
		want        VerdictStatus
	}{{1, 2, VerdictUndecided}, {1, 1, VerdictFail}, {0, 0, VerdictFail}} {
		rep, err := Runs(h.base, h.cand, Options{Rules: mustRules(t, "mean>+50%"), Look: tc.look, Looks: tc.looks})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Verdict.Status != tc.want || rep.Noise.Measured {
			t.Errorf("look %d of %d: verdict %s, noise measured %v; want %s", tc.look, tc.looks, rep.Verdict.Status, rep.Noise.Measured, tc.want)
		}
		if q := rep.Query("b"); tc.want == VerdictUndecided && (q.Status != StatusUndecided || !slices.ContainsFunc(rep.Verdict.Undecided, func(u Undecided) bool { return u.Fingerprint == "b" })) {
			t.Errorf("look %d of %d: b is %s, undecided %+v", tc.look, tc.looks, q.Status, rep.Verdict.Undecided)
		}
	}
}

// verdictHigh is the high end of the interval the verdict cleared
// figure e's rules on: the rounds' Welch interval where it cleared one
// that e's own held (Effect.Cleared), else e's.
func verdictHigh(e *Effect) float64 {
	if e.Cleared != nil {
		return e.Cleared.High
	}
	return e.High
}
