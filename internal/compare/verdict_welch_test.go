package compare

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// welchRehearsal runs a synthetic rehearsal of one query through Runs
// as rehearse.Run does: three rounds a side, then one a side while a
// rule is undecided, up to eight a side (the default budget, six
// looks), each look at its Look of Looks. The query's mean is 2 ms, 400
// calls a round drawn around it (their mean varies by 2.5% a round),
// each round's level moved by sigma on the log scale, the candidate's
// by ratio. rankOnly judges as before the rounds' Welch interval. It
// returns the last look's verdict and the rounds a side it ran.
func welchRehearsal(t *testing.T, seed uint64, sigma, ratio float64, rules string, rankOnly bool) (VerdictStatus, int) {
	const first, maxRounds = 3, 8
	s := sides{t: t, r: rand.New(rand.NewPCG(seed, 764))}
	round := func(cand bool) {
		m := 2000 * math.Exp(sigma*s.r.NormFloat64())
		if cand {
			m *= ratio
		}
		s.add(cand, "w", map[string]queryDist{"a": {n: 400, d: expAround(m)}})
	}
	for range first {
		round(false)
		round(true)
	}
	looks := 1 + maxRounds - first
	for look := 1; ; look++ {
		rep, err := Runs(s.base, s.cand, Options{Rules: mustRules(t, rules), Look: look, Looks: looks, rankOnly: rankOnly})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.MoreRoundsWouldTell() || look == looks {
			return rep.Verdict.Status, len(s.base)
		}
		round(look%2 == 1)
		round(look%2 == 0)
	}
}

// TestVerdictWelchThroughRuns measures, on the comparison's own code
// path (Runs, rule by rule, look by look), what the rounds' Welch
// interval changed in the verdict: an identical candidate, rounds 5%
// apart, must PASS mean>+10% and p95>+20% within the default budget at
// least as often as with the rank interval alone, and in most
// rehearsals; it never FAILs more often than the rank interval's
// verdict did, nor in more than a few in a hundred; a 1.5x and a 2x
// FAIL mean>+10% at least as often as before, and never PASS. make test
// runs two seeds of the new verdict (the invariants);
// PGREHEARSE_LONG=1 runs 200 seeds of both, for the rates
// (docs/noise-measured.md).
func TestVerdictWelchThroughRuns(t *testing.T) {
	seeds, both := 2, false
	if os.Getenv("PGREHEARSE_LONG") != "" {
		seeds, both = 200, true
	}
	type row struct {
		name   string
		sigma  float64
		ratio  float64
		rules  string
		rounds int
		verdicts
	}
	cases := []struct {
		name         string
		sigma, ratio float64
		rules        string
	}{
		{"identical, σ 0.05, mean>+10%", 0.05, 1, "mean>+10%"},
		{"identical, σ 0.05, p95>+20%", 0.05, 1, "p95>+20%"},
		{"1.5x, σ 0.10, mean>+10%", 0.10, 1.5, "mean>+10%"},
		{"2x, σ 0.10, mean>+10%", 0.10, 2, "mean>+10%"},
	}
	got := map[string]map[bool]*row{}
	for i, c := range cases {
		got[c.name] = map[bool]*row{}
		for _, rankOnly := range []bool{false, true} {
			if rankOnly && !both {
				continue
			}
			r := &row{name: c.name}
			for seed := range uint64(seeds) {
				v, n := welchRehearsal(t, uint64(100*i)+seed+1, c.sigma, c.ratio, c.rules, rankOnly)
				r.count(v)
				r.rounds += n
			}
			got[c.name][rankOnly] = r
			design := "welch"
			if rankOnly {
				design = "rank"
			}
			t.Logf("%-30s %-5s of %d: %d FAIL, %d PASS, %d undecided, %.1f rounds a side", c.name, design, seeds, r.failed, r.passed, r.undecided, float64(r.rounds)/float64(seeds))
		}
	}
	for _, c := range cases {
		now := got[c.name][false]
		if c.ratio >= 1.5 {
			if now.passed > 0 {
				t.Errorf("%s: PASSed %d of %d", c.name, now.passed, seeds)
			}
			if now.failed < seeds*9/10 {
				t.Errorf("%s: FAILed %d of %d", c.name, now.failed, seeds)
			}
			if old := got[c.name][true]; old != nil && now.failed < old.failed {
				t.Errorf("%s: FAILed %d of %d, the rank interval alone %d", c.name, now.failed, seeds, old.failed)
			}
			continue
		}
		if now.failed > 1+seeds*3/100 {
			t.Errorf("%s: FAILed %d of %d", c.name, now.failed, seeds)
		}
		if now.passed < seeds*2/3 {
			t.Errorf("%s: PASSed %d of %d", c.name, now.passed, seeds)
		}
		if old := got[c.name][true]; old != nil {
			if now.passed < old.passed {
				t.Errorf("%s: PASSed %d of %d, the rank interval alone %d", c.name, now.passed, seeds, old.passed)
			}
			if now.failed > old.failed+1+seeds/100 {
				t.Errorf("%s: FAILed %d of %d, the rank interval alone %d", c.name, now.failed, seeds, old.failed)
			}
		}
	}
}
