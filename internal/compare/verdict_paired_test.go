package compare

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// pairedRehearsal runs a synthetic rehearsal of one query through Runs
// as rehearse.Run does, in its order of rounds (control, candidate,
// candidate, control, ...): three rounds a side, then a pair while a
// rule is undecided, up to eight a side. The query's mean is 2 ms, 400
// calls a round drawn around it; the machine's speed takes a random
// step of sd walk a round (on the log scale, both sides alike), each
// round its own sigma; the candidate's moved by ratio. With timed, each
// run has its start time (results' StartedAt, in the order made), so
// that the comparison can pair them; without, none. It returns the last
// look's verdict and whether some rule was cleared by the paired
// interval.
func pairedRehearsal(t *testing.T, seed uint64, walk, sigma, ratio float64, rules string, timed bool) (VerdictStatus, bool) {
	const first, maxRounds = 3, 8
	s := sides{t: t, r: rand.New(rand.NewPCG(seed, 76))}
	level, made := 0.0, 0
	round := func(cand bool) {
		if made > 0 {
			level += walk * s.r.NormFloat64()
		}
		made++
		m := 2000 * math.Exp(level+sigma*s.r.NormFloat64())
		if cand {
			m *= ratio
		}
		s.add(cand, "p", map[string]queryDist{"a": {n: 400, d: expAround(m)}})
		if timed {
			runs := s.base
			if cand {
				runs = s.cand
			}
			runs[len(runs)-1].Replay = &results.Replay{StartedAt: results.Time(1_800_000_000_000_000 + int64(made)*20_000_000)}
		}
	}
	// control, candidate, candidate, control, control, candidate
	for _, cand := range []bool{false, true, true, false, false, true} {
		round(cand)
	}
	looks := 1 + maxRounds - first
	for look := 1; ; look++ {
		rep, err := Runs(s.base, s.cand, Options{Rules: mustRules(t, rules), Look: look, Looks: looks})
		if err != nil {
			t.Fatal(err)
		}
		paired := false
		for _, q := range rep.Queries {
			if q.Effects != nil {
				for _, e := range []*Effect{&q.Effects.Mean, &q.Effects.P95} {
					paired = paired || e.Cleared != nil && e.Cleared.Interval == ClearedPaired
				}
			}
		}
		if !rep.MoreRoundsWouldTell() || look == looks {
			return rep.Verdict.Status, paired
		}
		// The next pair continues the order: after three a side
		// (A B B A A B), B A, then A B, ...
		round(look%2 == 1)
		round(look%2 == 0)
	}
}

// TestVerdictPairedThroughRuns: on the comparison's own code path, the
// runs' start times pair each candidate round with the control round
// beside it, and an identical candidate on a drifting machine is
// cleared of mean>+10% by the paired interval where the unpaired ones
// leave it undecided; the same rounds without start times are judged as
// before (no paired clear); a 1.5x on the same machine is never PASSed.
// make test runs six seeds; PGREHEARSE_LONG=1 runs 100 and logs the
// rates.
func TestVerdictPairedThroughRuns(t *testing.T) {
	seeds := 6
	if os.Getenv("PGREHEARSE_LONG") != "" {
		seeds = 100
	}
	for _, c := range []struct {
		name         string
		walk, ratio  float64
		wantPairedOK bool
	}{
		{"identical, walk 0.08", 0.08, 1, true},
		{"1.5x, walk 0.08", 0.08, 1.5, false},
	} {
		var timed, untimed verdicts
		pairedClears := 0
		for seed := range uint64(seeds) {
			v, paired := pairedRehearsal(t, seed+1, c.walk, 0.02, c.ratio, "mean>+10%", true)
			timed.count(v)
			if paired {
				pairedClears++
			}
			v0, paired0 := pairedRehearsal(t, seed+1, c.walk, 0.02, c.ratio, "mean>+10%", false)
			untimed.count(v0)
			if paired0 {
				t.Errorf("%s seed %d: cleared by the paired interval without start times", c.name, seed+1)
			}
		}
		t.Logf("%s, %d seeds: timed %d PASS %d FAIL %d undecided (%d cleared by the paired interval); untimed %d PASS %d FAIL %d undecided",
			c.name, seeds, timed.passed, timed.failed, timed.undecided, pairedClears, untimed.passed, untimed.failed, untimed.undecided)
		if c.ratio > 1.1 {
			if timed.passed > 0 {
				t.Errorf("%s: PASSed %d of %d", c.name, timed.passed, seeds)
			}
			continue
		}
		if timed.passed < untimed.passed || timed.failed > untimed.failed || pairedClears == 0 || timed.passed < seeds/2 {
			t.Errorf("%s: timed %+v (%d paired clears), untimed %+v", c.name, timed, pairedClears, untimed)
		}
	}
}
