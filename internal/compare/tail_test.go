package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// gridCalls are n calls of a lognormal query (median 1 ms, log-deviation
// 0.4) on a deterministic grid of its quantiles, times round; the calls
// above the share keep of them are times tail too.
func gridCalls(n int, round, keep, tail float64) dist {
	return func(_ *rand.Rand, i int) int64 {
		u := (float64(i) + 0.5) / float64(n)
		v := 1000 * round * math.Exp(0.4*stats.NormalQuantile(u))
		if u > keep {
			v *= tail
		}
		return int64(v)
	}
}

// TestTailOnItsCalls: the A/A report called a tail of 494 calls
// 1.61x slower (1.32-2.39) over three rounds a side. A p95 judged with
// the calls it rests on: the slowest 7% of calls 1.6x slower in every
// candidate round is within what 494 calls a round can tell (their
// order statistics bracket the p95 from the bulk's top to the tail), so
// not a regression; the same change over 10,000 calls a round is one;
// over 60 calls the tail has too few calls for a bound at all, and is
// said so, never a regression. No rule fails on a tail that is not one.
func TestTailOnItsCalls(t *testing.T) {
	rounds := []float64{1, 1.02, 0.98}
	for _, tt := range []struct {
		calls  int
		status Status
		reason Reason
	}{
		{494, StatusSmallChange, ReasonWithinCallsNoise},
		{10000, StatusTailRegressed, ""},
		{60, StatusSmallChange, ReasonTailTooFewCalls},
	} {
		var base, cand []*Run
		for i, f := range rounds {
			base = append(base, runOf(t, fmt.Sprint("base", i), uint64(i), tt.calls, gridCalls(tt.calls, f, 2, 1)))
			cand = append(cand, runOf(t, fmt.Sprint("cand", i), uint64(i), tt.calls, gridCalls(tt.calls, f*1.01, 0.93, 1.6)))
		}
		rep, err := Runs(base, cand, Options{Rules: mustRules(t, "p95>+20%")})
		if err != nil {
			t.Fatal(err)
		}
		q := rep.Query("q")
		p95 := q.Effects.P95
		if p95.Change != ChangeSlower || !p95.Beyond || p95.Ratio < 1.4 {
			t.Fatalf("%d calls: the runs should show the p95 slower beyond the floors: %+v", tt.calls, p95)
		}
		if q.Status != tt.status || (tt.reason != "" && (len(q.Reasons) != 1 || q.Reasons[0] != tt.reason)) {
			t.Errorf("%d calls: %s %v, want %s %s; p95 %+v calls %+v", tt.calls, q.Status, q.Reasons, tt.status, tt.reason, p95, p95.Calls)
		}
		if broke := rep.Verdict.Status == VerdictFail; broke != (tt.status == StatusTailRegressed) {
			t.Errorf("%d calls: verdict %s with %s", tt.calls, rep.Verdict.Status, q.Status)
		}
		switch tt.reason {
		case ReasonTailTooFewCalls:
			if p95.Calls == nil || !p95.Calls.TooFewCalls || p95.Calls.MinCalls != stats.MinCallsForQuantile(0.95, p95.Calls.Alpha) || p95.Calls.Tests != 2 {
				t.Errorf("%d calls: evidence %+v", tt.calls, p95.Calls)
			}
		case ReasonWithinCallsNoise:
			if p95.Calls == nil || p95.Calls.TooFewCalls || p95.Calls.Low > 1 || p95.Calls.High < p95.High {
				t.Errorf("%d calls: evidence %+v", tt.calls, p95.Calls)
			}
		default:
			if p95.Calls != nil {
				t.Errorf("%d calls: evidence %+v on a regression", tt.calls, p95.Calls)
			}
		}
	}
}

// TestRunsAAFamily: A against A through the whole comparison, with the
// calls' histograms: rehearsals of 50 queries of 200 to 1,000 calls a
// round, three rounds a side, rounds that differ only by which calls were
// slow. Before the calls' evidence a rehearsal in three or so showed a
// regression (internal/stats' TestAAAnyRegression: 38%); with it, none
// may. The count the runs alone would have called is logged beside.
func TestRunsAAFamily(t *testing.T) {
	const rehearsals = 5
	r := rand.New(rand.NewPCG(45, 4))
	var withRuns, withCalls, held int
	for h := range rehearsals {
		type shape struct {
			n         int
			mu, sigma float64
		}
		shapes := map[string]shape{}
		for i := range 50 {
			shapes[fmt.Sprintf("q%02d", i)] = shape{n: 200 + r.IntN(800), mu: math.Log(1000 + 9000*r.Float64()), sigma: 0.3 + 0.9*r.Float64()}
		}
		side := func(name string, seed uint64) []*Run {
			var runs []*Run
			for i := range 3 {
				qs := map[string]queryDist{}
				for fp, s := range shapes {
					qs[fp] = queryDist{n: s.n, d: func(r *rand.Rand, _ int) int64 {
						return int64(math.Exp(s.mu + s.sigma*r.NormFloat64()))
					}}
				}
				runs = append(runs, runOfQueries(t, fmt.Sprintf("%s%d.json", name, i), seed+uint64(i), qs))
			}
			return runs
		}
		rep, err := Runs(side("A", uint64(1000*h)), side("B", uint64(1000*h+500)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		runsSaid, callsSaid := false, false
		for _, q := range rep.Queries {
			if q.Status.Regression() {
				callsSaid = true
			}
			if q.Effects != nil && (q.Effects.Mean.Calls != nil || q.Effects.P95.Calls != nil) {
				runsSaid = true
				held++
			}
		}
		if callsSaid {
			withCalls++
		}
		if callsSaid || runsSaid {
			withRuns++
		}
	}
	t.Logf("A/A rehearsals of 50 queries with a regression: %d of %d with the calls' evidence, %d of %d by the runs alone (%d figures held back)", withCalls, rehearsals, withRuns, rehearsals, held)
	if withCalls > 0 {
		t.Errorf("%d of %d A/A rehearsals of 50 queries showed a regression", withCalls, rehearsals)
	}
}

// TestRoundNoisePooled: a query 1.12x slower in every candidate round,
// its calls many enough to carry it, is a regression when the
// rehearsal's other queries move about 2% from round to round, and
// within the rounds' noise when they move about 7% (its own three rounds
// cannot tell: they span 4% either way). The noise is pooled over
// every query judged (CallsEvidence.RoundNoise).
func TestRoundNoisePooled(t *testing.T) {
	for _, tt := range []struct {
		others []float64
		status Status
	}{
		{[]float64{1, 1.02, 0.98}, StatusRegressed},
		{[]float64{1, 1.08, 0.93}, StatusSmallChange},
	} {
		own := []float64{1, 1.02, 0.98}
		side := func(name string, change float64, seed uint64) []*Run {
			var runs []*Run
			for i := range 3 {
				qs := map[string]queryDist{"q": {5000, gridCalls(5000, 5*own[i]*change, 2, 1)}}
				for j := range 9 {
					// The others' rounds in another order on each
					// side and for each query.
					f := tt.others[(i+j+int(seed))%3]
					qs[fmt.Sprintf("o%d", j)] = queryDist{5000, gridCalls(5000, f*(1+0.1*float64(j)), 2, 1)}
				}
				runs = append(runs, runOfQueries(t, fmt.Sprintf("%s%d", name, i), seed+uint64(i), qs))
			}
			return runs
		}
		rep, err := Runs(side("base", 1, 0), side("cand", 1.12, 1), Options{})
		if err != nil {
			t.Fatal(err)
		}
		q := rep.Query("q")
		mean := q.Effects.Mean
		if mean.Change != ChangeSlower || !mean.Beyond {
			t.Fatalf("others %v: the runs should show the mean slower beyond the floors: %+v", tt.others, mean)
		}
		if q.Status != tt.status {
			t.Errorf("others %v: %s %v, want %s; calls %+v", tt.others, q.Status, q.Reasons, tt.status, mean.Calls)
			continue
		}
		if tt.status == StatusRegressed {
			continue
		}
		ev := mean.Calls
		if len(q.Reasons) != 1 || q.Reasons[0] != ReasonWithinRoundNoise || ev == nil || ev.Low <= 1 || ev.FamilyLow > 1 ||
			ev.RoundNoise < 1.04 || ev.RoundNoiseDF != 40 || ev.Tests != 20 {
			t.Errorf("others %v: reasons %v, evidence %+v", tt.others, q.Reasons, ev)
		}
	}
}
