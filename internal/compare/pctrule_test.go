package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// pctQuery is a query of pctRounds: its server time per call (the mean of
// levelRound's distribution, whose p95 is about twice it) and the
// overhead the log adds to every call, in µs.
type pctQuery struct{ serverUS, overheadUS float64 }

// pctRounds are n rounds of queries qs, each with calls calls a round, its
// times in each round scaled by a factor of its own (the rounds' noise,
// sigma on the log scale), beside a 20 ms report of 1,000 calls that
// holds the run's time, so that the queries stay under both per-call
// floors, their p95s too; with pg_stat_statements' time of each and the
// log's histograms (levelRound).
func pctRounds(t testing.TB, name string, r *rand.Rand, n, calls int, sigma float64, qs map[string]pctQuery) []*Run {
	var runs []*Run
	for i := range n {
		lq := map[string]levelQuery{"report": {serverUS: 20000, overheadUS: 200, clientUS: 300, calls: 1000}}
		for _, fp := range sortedKeys(qs) {
			f := math.Exp(sigma * r.NormFloat64())
			lq[fp] = levelQuery{serverUS: qs[fp].serverUS * f, overheadUS: qs[fp].overheadUS * f, clientUS: 300, calls: calls}
		}
		runs = append(runs, levelRound(t, fmt.Sprintf("%s-%d", name, i+1), r.Uint64(), lq))
	}
	return runs
}

// lookupSides are n rounds a side of a lookup of 43 µs a call at the
// server (its p95 about 0.09 ms) behind 0.2 ms of logged overhead, twice
// slower at the server on the candidate in every round (the rounds 1%
// apart): the log's p95 reads 0.29 -> 0.37 ms, 1.3x, while the server's
// tail doubled.
func lookupSides(t testing.TB, n int) (base, cand []*Run) {
	r := rand.New(rand.NewPCG(1, 583))
	base = pctRounds(t, "control", r, n, 2000, 0.01, map[string]pctQuery{"lookup": {43, 200}})
	cand = pctRounds(t, "candidate", r, n, 2000, 0.01, map[string]pctQuery{"lookup": {86, 200}})
	return base, cand
}

// A percentile rule reads the log's figure with its per-call overhead
// taken out too (issue 58 item 3): a lookup whose p95 doubled at the
// server reads 1.3x in the log, behind 0.2 ms of overhead a call, and
// passed p95>+50% on the log's figure alone (a missed regression); the
// figure without the overhead, 2x over its whole interval and its calls'
// evidence, breaks it, and the broken rule says so with that figure and
// the overhead taken out. The lookup is a tail regression with the
// reason, never a small change beside the failed verdict. At a later
// look the rule is confirmed on the same figure's interval, undecided
// (named so) where the rounds cannot reach that look's level yet.
func TestPercentileRuleWithoutOverhead(t *testing.T) {
	base, cand := lookupSides(t, 3)
	rules := mustRules(t, "p95>+50%")
	for _, look := range []int{0, 1} {
		rep, err := Runs(base, cand, Options{Rules: rules, Look: look, Looks: 6 * look})
		if err != nil {
			t.Fatal(err)
		}
		q := rep.Query("lookup")
		raw := q.Effects.P95
		if !within(raw.Ratio, 1.3, 1.08) || raw.DeltaMS >= DefaultMinEffectMS || !raw.carried() {
			t.Fatalf("the log's p95 %.2fx (%.2f-%.2f), +%.3f ms, carried %v: want about 1.3x under the ms floor, carried by its calls",
				raw.Ratio, raw.Low, raw.High, raw.DeltaMS, raw.carried())
		}
		lv := q.Levels
		if lv == nil || !within(lv.OverheadMS, 0.2, 1.1) || lv.LogP50 == nil || lv.LogP95 == nil || lv.LogP99 == nil {
			t.Fatalf("levels %+v: want the overhead measured and the percentiles without it", lv)
		}
		if rep.Verdict.Status != VerdictFail || len(rep.Verdict.Broken) != 1 {
			t.Fatalf("look %d: verdict %s, broken %+v, undecided %+v: want p95>+50%% broken by the lookup", look, rep.Verdict.Status, rep.Verdict.Broken, rep.Verdict.Undecided)
		}
		b := rep.Verdict.Broken[0]
		w := b.WithoutOverhead
		if w == nil || !b.UnderFloors || b.Level != LevelLog || b.Baseline != q.Baseline.P95MS || b.Candidate != q.Candidate.P95MS {
			t.Fatalf("broken %+v (without the overhead %+v): want the log's own figures and the one without the overhead", b, w)
		}
		if w.OverheadMS != lv.OverheadMS || w.CandidateOverheadMS < w.OverheadMS || !within(w.Candidate/w.Baseline, 2, 1.15) ||
			math.Abs(w.Baseline-(b.Baseline-w.OverheadMS)) > 1e-9 {
			t.Errorf("without the overhead %+v: want the p95 less %.3f ms, about 2x", w, lv.OverheadMS)
		}
		if e := lv.LogP95; e.Low <= 1.5 || e.evidence == nil || e.evidence.Low <= 1.5 || e.evidence.FamilyLow <= 1.5 {
			t.Errorf("broken under the floors on %.2fx (%.2f-%.2f), evidence %+v: not wholly beyond 1.5", e.Ratio, e.Low, e.High, e.evidence)
		}
		if q.Status != StatusTailRegressed || q.Regressed != MetricP95 || !slices.Contains(q.Reasons, ReasonBreaksRuleWithoutOverhead) {
			t.Errorf("lookup %s on %q, reasons %v", q.Status, q.Regressed, q.Reasons)
		}
		checkLabel(t, "lookup", q)
		checkVerdict(t, "lookup", rep)
		if r := rep.Query("report"); r.Status.Regression() {
			t.Errorf("the untouched report regressed: %s", r.Status)
		}
	}

	// A later look confirms on the figure that broke the rule: the
	// rank interval over three rounds a side cannot reach the second
	// look's level (undecided, the figure named as the one without the
	// overhead); their Welch interval can, and seven rounds' can.
	rep, err := Runs(base, cand, Options{Rules: rules, Look: 2, Looks: 6, rankOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if u := rep.Verdict.Undecided; rep.Verdict.Status != VerdictUndecided || len(u) != 1 || u[0].OverheadMS == 0 || u[0].Metric != MetricP95 || u[0].Ratio < 1.5 {
		t.Errorf("second look of 3 rounds a side, rank interval: %s, undecided %+v", rep.Verdict.Status, u)
	}
	checkVerdict(t, "second look", rep)
	if rep, err = Runs(base, cand, Options{Rules: rules, Look: 2, Looks: 6}); err != nil {
		t.Fatal(err)
	}
	if rep.Verdict.Status != VerdictFail || len(rep.Verdict.Broken) != 1 || rep.Verdict.Broken[0].WithoutOverhead == nil {
		t.Errorf("second look of 3 rounds a side: %s, broken %+v, undecided %+v", rep.Verdict.Status, rep.Verdict.Broken, rep.Verdict.Undecided)
	}
	checkVerdict(t, "second look", rep)
	base, cand = lookupSides(t, 7)
	if rep, err = Runs(base, cand, Options{Rules: rules, Look: 5, Looks: 6}); err != nil {
		t.Fatal(err)
	}
	if rep.Verdict.Status != VerdictFail || len(rep.Verdict.Broken) != 1 || rep.Verdict.Broken[0].WithoutOverhead == nil {
		t.Errorf("fifth look of 7 rounds a side: %s, broken %+v, undecided %+v", rep.Verdict.Status, rep.Verdict.Broken, rep.Verdict.Undecided)
	}
	checkVerdict(t, "fifth look", rep)
}

// Without pg_stat_statements no overhead is measured, and a percentile
// rule reads the log's figure alone, as before: the same lookup's 1.3x
// does not break p95>+50%. A candidate whose log carries more overhead a
// call than the control's (another version's protocol), its server time
// the same, is no slower without the overhead: each side's own is taken
// out where the candidate's is the larger, never the control's alone
// (which would read 1.4x and break p95>+20%).
func TestPercentileRuleOverheadUnmeasured(t *testing.T) {
	base, cand := lookupSides(t, 3)
	for _, r := range append(slices.Clone(base), cand...) {
		r.Evidence = nil
	}
	rep, err := Runs(base, cand, Options{Rules: mustRules(t, "p95>+50%")})
	if err != nil {
		t.Fatal(err)
	}
	q := rep.Query("lookup")
	if q.Levels == nil || q.Levels.OverheadMS != 0 || q.Levels.LogP95 != nil || q.Levels.WithoutOverhead(MetricP95) != nil {
		t.Errorf("without pg_stat_statements: levels %+v", q.Levels)
	}
	if rep.Verdict.Status == VerdictFail || len(rep.Verdict.Broken) > 0 || slices.Contains(q.Reasons, ReasonBreaksRuleWithoutOverhead) || q.Status.Regression() {
		t.Errorf("without pg_stat_statements: %s, lookup %s %v, broken %+v", rep.Verdict.Status, q.Status, q.Reasons, rep.Verdict.Broken)
	}
	checkVerdict(t, "unmeasured", rep)

	r := rand.New(rand.NewPCG(2, 583))
	base = pctRounds(t, "control", r, 3, 2000, 0.01, map[string]pctQuery{"lookup": {43, 200}})
	cand = pctRounds(t, "candidate", r, 3, 2000, 0.01, map[string]pctQuery{"lookup": {43, 240}})
	if rep, err = Runs(base, cand, Options{Rules: mustRules(t, "p95>+20%")}); err != nil {
		t.Fatal(err)
	}
	q = rep.Query("lookup")
	lv := q.Levels
	if lv == nil || !within(lv.CandidateOverheadMS, 0.24, 1.1) || lv.LogP95 == nil || !within(lv.LogP95.Ratio, 1, 1.1) {
		t.Fatalf("candidate's overhead 0.24 ms: levels %+v, p95 without it %+v", lv, lv.LogP95)
	}
	if rep.Verdict.Status == VerdictFail || slices.Contains(q.Reasons, ReasonBreaksRuleWithoutOverhead) {
		t.Errorf("more overhead on the candidate, same server time: %s, broken %+v", rep.Verdict.Status, rep.Verdict.Broken)
	}
	checkVerdict(t, "candidate's overhead", rep)
}

// The false-positive rate of a percentile rule read without the log's
// overhead: identical sides of eight tiny queries (0.02-0.09 ms a call at
// the server, their p95s 0.04-0.18 ms, behind 0.2 ms of logged overhead,
// each round's times, overhead included, scaled by its own factor) at
// round-to-round noise of 10%, three rounds a side, under p95>+20%: the
// figure without the overhead is 2-3 times as noisy as the log's own,
// and breaks the rule in no more comparisons than the family's level
// allows (alpha/2 one-sided, 5%, with the slack the package's other rate
// tests give). The same queries twice slower at the server, the rounds
// 3% apart, are found, more of them than on the log's figure alone. make
// test runs 10 seeds (about a second); PGREHEARSE_LONG=1 200 (23 s): A/A
// 0 of 200 failed; 2x 1443 of 1600 queries broke the rule, 994 of them on
// the figure without the overhead alone.
func TestPercentileRuleWithoutOverheadRates(t *testing.T) {
	seeds := 10
	if os.Getenv("PGREHEARSE_LONG") != "" {
		seeds = 200
	}
	tiny := func(shift float64) map[string]pctQuery {
		qs := map[string]pctQuery{}
		for _, us := range []float64{20, 30, 40, 50, 60, 70, 80, 90} {
			qs[fmt.Sprintf("t%03.0f", us)] = pctQuery{us * shift, 200}
		}
		return qs
	}
	// The first look of a rehearsal's (a report's breaks the same).
	opts := Options{Rules: mustRules(t, "p95>+20%"), Look: 1, Looks: 6}
	var failed, byLess, undecided, found, foundLess int
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed+1, 584))
		base := pctRounds(t, "control", r, 3, 1000, 0.10, tiny(1))
		rep, err := Runs(base, pctRounds(t, "candidate", r, 3, 1000, 0.10, tiny(1)), opts)
		if err != nil {
			t.Fatal(err)
		}
		checkVerdict(t, fmt.Sprintf("A/A seed %d", seed+1), rep)
		if rep.Verdict.Status == VerdictFail {
			failed++
		}
		if slices.ContainsFunc(rep.Verdict.Broken, func(b Broken) bool { return b.WithoutOverhead != nil }) {
			byLess++
		}
		if slices.ContainsFunc(rep.Verdict.Undecided, func(u Undecided) bool { return u.OverheadMS > 0 }) {
			undecided++
		}
		quiet := pctRounds(t, "control", r, 3, 1000, 0.03, tiny(1))
		if rep, err = Runs(quiet, pctRounds(t, "candidate", r, 3, 1000, 0.03, tiny(2)), opts); err != nil {
			t.Fatal(err)
		}
		checkVerdict(t, fmt.Sprintf("2x seed %d", seed+1), rep)
		for _, b := range rep.Verdict.Broken {
			if b.Fingerprint != "report" {
				found++
				if b.WithoutOverhead != nil {
					foundLess++
				}
			}
		}
	}
	t.Logf("A/A: %d of %d comparisons failed, %d on a figure without the overhead, %d undecided on one; 2x: %d of %d tiny queries broke p95>+20%%, %d on the figure without the overhead",
		failed, seeds, byLess, undecided, found, 8*seeds, foundLess)
	if failed > 1+seeds*6/100 || byLess > 1+seeds*6/100 {
		t.Errorf("A/A: %d of %d comparisons failed, %d on a figure without the overhead: want at most about 5%%", failed, seeds, byLess)
	}
	if foundLess == 0 || found < 8*seeds/2 {
		t.Errorf("2x: %d of %d tiny queries broke p95>+20%%, %d without the overhead", found, 8*seeds, foundLess)
	}
}
