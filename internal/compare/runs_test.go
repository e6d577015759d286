package compare

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sideRuns makes n runs of queries whose mean latency per run varies by
// sigma on the log scale (run-to-run noise: each run of each query its
// own factor), scaled by shift[fp] when set; tail[fp] makes one call in
// 10 take that many µs.
func sideRuns(t testing.TB, name string, seed uint64, n int, sigma float64, means map[string]float64, shift map[string]float64, tail map[string]int64) []*Run {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	var runs []*Run
	for i := range n {
		qs := map[string]queryDist{}
		for _, fp := range sortedKeys(means) {
			m := means[fp] * math.Exp(sigma*r.NormFloat64())
			if s, ok := shift[fp]; ok {
				m *= s
			}
			d := expAround(m)
			if us, ok := tail[fp]; ok {
				d = withTail(d, 10, us)
			}
			qs[fp] = queryDist{n: 2000, d: d}
		}
		runs = append(runs, runOfQueries(t, fmt.Sprintf("%s%d.json", name, i+1), seed*100+uint64(i), qs))
	}
	return runs
}

var runsMeans = map[string]float64{"a": 300, "b": 900, "c": 2500, "d": 200, "e": 5000, "f": 1200}

// TestRunsKnownShift: three runs a side, a 30% slowdown of one query and
// nothing else; the slowed query alone regresses, its interval over the
// runs at 90% excluding 1, with the baseline's runs as its noise floor.
func TestRunsKnownShift(t *testing.T) {
	base := sideRuns(t, "A", 1, 3, 0.03, runsMeans, nil, nil)
	cand := sideRuns(t, "B", 2, 3, 0.03, runsMeans, map[string]float64{"c": 1.3}, nil)
	rep, err := Runs(base, cand, Options{Rules: mustRules(t, "mean>+20%")})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Noise.Measured || !rep.Verdict.NoiseMeasured || rep.Noise.BaselineRuns != 3 || math.Abs(rep.Noise.Level-0.9) > 1e-9 || hasWarning(rep, WarnNoiseNotMeasured) {
		t.Errorf("noise %+v", rep.Noise)
	}
	if rep.Baseline.RunCount() != 3 || len(rep.Baseline.Files) != 3 || rep.Baseline.Spread == nil {
		t.Errorf("baseline summary %+v", rep.Baseline)
	}
	for _, q := range rep.Queries {
		checkLabel(t, q.Fingerprint, &q)
		want := StatusUnchanged
		if q.Fingerprint == "c" {
			want = StatusRegressed
		}
		if q.Status != want && !(want == StatusUnchanged && q.Status == StatusSmallChange) {
			t.Errorf("%s: %s %v, want %s; mean %+v", q.Fingerprint, q.Status, q.Reasons, want, q.Effects.Mean)
		}
		if len(q.Baseline.Runs) != 3 || q.Baseline.Spread == nil {
			t.Errorf("%s: baseline figures without their runs: %+v", q.Fingerprint, q.Baseline)
		}
	}
	c := rep.Query("c")
	if m := c.Effects.Mean; m.Interval != IntervalRuns || m.Low <= 1 || m.Ratio < 1.2 || m.Ratio > 1.4 || !m.NoiseMeasured || m.NoiseFloor <= 1 {
		t.Errorf("c's mean %+v", m)
	}
	if rep.Verdict.Status != VerdictFail || len(rep.Verdict.Broken) != 1 || rep.Verdict.Broken[0].Fingerprint != "c" {
		t.Errorf("verdict %+v", rep.Verdict)
	}
}

// TestRunsTailRegressed: a query whose mean fell while its slowest calls
// got slower is a tail regression, ranked by what its tail added, never
// a regression of its mean.
func TestRunsTailRegressed(t *testing.T) {
	means := map[string]float64{"q": 1000, "r": 500}
	base := sideRuns(t, "A", 5, 3, 0.02, means, nil, map[string]int64{"q": 3000})
	cand := sideRuns(t, "B", 6, 3, 0.02, means, map[string]float64{"q": 0.6}, map[string]int64{"q": 6000})
	rep, err := Runs(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := rep.Query("q")
	checkLabel(t, "q", q)
	if q.Status != StatusTailRegressed || q.Regressed != MetricP95 || q.TailAddedMS <= 0 || q.Effects.Mean.Change == ChangeSlower {
		t.Errorf("q: %s, regressed %s, tail added %.0f ms, mean %+v, p95 %+v", q.Status, q.Regressed, q.TailAddedMS, q.Effects.Mean, q.Effects.P95)
	}
	if rep.Verdict.TailRegressions != 1 || rep.Verdict.Regressions != 0 || rep.Verdict.Worst != "q" || rep.Verdict.Status != VerdictRegressions {
		t.Errorf("verdict %+v", rep.Verdict)
	}
}

// TestRunsAAFalsePositives: A against A, three runs a side, run-to-run
// noise of 3% (what replay rounds show on a quiet machine) and of 10%:
// the share of queries called regressions, measured through the whole
// comparison (floors included), against the level of 5% a side.
//
// With rules on the p50 and the p99, whose thresholds are set low so as
// not to hide anything, a query that breaks one is a regression of that
// figure: the share then counts what those rules fail on too (before,
// the same rules failed the run with the queries labelled unchanged).
func TestRunsAAFalsePositives(t *testing.T) {
	for _, tc := range []struct {
		sigma float64
		rules []string
	}{{0.03, nil}, {0.10, nil}, {0.03, []string{"p50>+1%", "p99>+1%"}}, {0.10, []string{"p50>+1%", "p99>+1%"}}} {
		sigma := tc.sigma
		rules := mustRules(t, tc.rules...)
		var queries, regs, changed int
		for trial := range 60 {
			base := sideRuns(t, "A", uint64(1000+trial), 3, sigma, runsMeans, nil, nil)
			cand := sideRuns(t, "B", uint64(5000+trial), 3, sigma, runsMeans, nil, nil)
			rep, err := Runs(base, cand, Options{Rules: rules})
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range rep.Queries {
				queries++
				if q.Status.Regression() {
					regs++
				}
				if q.Effects.Mean.Change != ChangeNone {
					changed++
				}
			}
		}
		fpr := float64(regs) / float64(queries)
		t.Logf("A/A, 3 runs a side, sigma %.2f, rules %v: %d of %d queries regressed (%.4f), mean interval excluding 1 for %.4f",
			sigma, tc.rules, regs, queries, fpr, float64(changed)/float64(queries))
		if fpr > 0.05 {
			t.Errorf("sigma %.2f: false-positive rate %.4f above the level 0.05", sigma, fpr)
		}
		if sigma < 0.05 && regs > 0 {
			t.Errorf("sigma %.2f: %d false regressions", sigma, regs)
		}
	}
}

// TestRunsPower: a 20% slowdown of every query, three runs a side; the
// share found, through the whole comparison (without the ms floor, which
// a 20% change of the 0.2 ms query does not reach by design).
func TestRunsPower(t *testing.T) {
	shift := map[string]float64{}
	for fp := range runsMeans {
		shift[fp] = 1.2
	}
	for _, sigma := range []float64{0.03, 0.10} {
		var queries, found int
		for trial := range 40 {
			base := sideRuns(t, "A", uint64(2000+trial), 3, sigma, runsMeans, nil, nil)
			cand := sideRuns(t, "B", uint64(6000+trial), 3, sigma, runsMeans, shift, nil)
			rep, err := Runs(base, cand, Options{MinEffectMS: -1})
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range rep.Queries {
				queries++
				if q.Status == StatusRegressed {
					found++
				}
			}
		}
		power := float64(found) / float64(queries)
		t.Logf("20%% slower, 3 runs a side, sigma %.2f: %d of %d found (%.4f)", sigma, found, queries, power)
		if sigma < 0.05 && power < 0.9 {
			t.Errorf("sigma %.2f: power %.4f", sigma, power)
		}
	}
}

// TestTwoRunsFewCallsTail: two runs a side measure no noise, so the
// default floors apply; a p95 resting on three calls of 48 must also
// carry its own sampling error, or a few slow calls of one run cross the
// p95's floor of 3.1x (END's p95, 3.28x over 48 calls, was once called a
// tail regression that way). A tail that grew over thousands of calls is
// still found.
func TestTwoRunsFewCallsTail(t *testing.T) {
	around := func(us int64) dist {
		return func(r *rand.Rand, _ int) int64 { return us - 50 + r.Int64N(100) }
	}
	runs := func(name string, seed uint64, n int, d dist) []*Run {
		return []*Run{runOf(t, name+"1.json", seed, n, d), runOf(t, name+"2.json", seed+1, n, d)}
	}
	for _, c := range []struct {
		name      string
		n         int
		base, cnd dist
		want      Status
	}{
		{"three slow calls of 48", 48, around(1000), withTail(around(1000), 16, 3600), StatusSmallChange},
		{"a tail of thousands of calls", 2000, around(1000), withTail(around(1000), 16, 5000), StatusTailRegressed},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Runs(runs("A", 1, c.n, c.base), runs("B", 7, c.n, c.cnd), Options{})
			if err != nil {
				t.Fatal(err)
			}
			q := rep.Query("q")
			checkLabel(t, "q", q)
			p95 := q.Effects.P95
			if q.Status != c.want && !(c.want == StatusSmallChange && q.Status == StatusUnchanged) {
				t.Errorf("%s %v, want %s; p95 %.2fx (%.2f-%.2f), floor %.2f, noise measured %v",
					q.Status, q.Reasons, c.want, p95.Ratio, p95.Low, p95.High, p95.Floor, p95.NoiseMeasured)
			}
			if rep.Noise.Measured {
				t.Errorf("two runs a side measured the noise: %+v", rep.Noise)
			}
		})
	}
}

// TestSlowerWhileBusier: beside a regression that keeps the candidate's
// server busy (query a, 100x, tens of seconds of server time a run over
// runs of 2 s), a query slowed by a twentieth of that or less is slower
// while busier, not a regression; one that added more stays a
// regression; without a dominant regression nothing is relabelled. A
// query that breaks a latency rule (b's mean, 1.5x, breaks mean>+20%,
// not mean>+80%) stays a regression: never both not counted and
// breaking a rule.
func TestSlowerWhileBusier(t *testing.T) {
	for _, c := range []struct {
		name   string
		rules  string
		shift  map[string]float64
		want   map[string]Status
		busier int
	}{
		{"beside a dominant regression", "", map[string]float64{"a": 100, "b": 1.5, "e": 3},
			map[string]Status{"a": StatusRegressed, "b": StatusSlowerWhileBusier, "e": StatusRegressed}, 1},
		{"beside it, under a rule", "mean>+80%", map[string]float64{"a": 100, "b": 1.5, "e": 3},
			map[string]Status{"a": StatusRegressed, "b": StatusSlowerWhileBusier, "e": StatusRegressed}, 1},
		{"beside it, breaking a rule", "mean>+20%", map[string]float64{"a": 100, "b": 1.5, "e": 3},
			map[string]Status{"a": StatusRegressed, "b": StatusRegressed, "e": StatusRegressed}, 0},
		{"no dominant regression", "", map[string]float64{"b": 1.5, "c": 1.3},
			map[string]Status{"b": StatusRegressed, "c": StatusRegressed}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := sideRuns(t, "A", 11, 3, 0.02, runsMeans, nil, nil)
			cand := sideRuns(t, "B", 12, 3, 0.02, runsMeans, c.shift, nil)
			for _, r := range cand {
				// Runs of 2 s, as the calls' start times say.
				r.FirstTime, r.LastTime = 1_700_000_000_000_000, 1_700_000_002_000_000
			}
			var rules []Rule
			if c.rules != "" {
				var err error
				if rules, err = parseRules([]string{c.rules}); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := Runs(base, cand, Options{Rules: rules})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range rep.Verdict.Broken {
				if q := rep.Query(b.Fingerprint); q == nil || !q.Status.Regression() {
					t.Errorf("%s broken by %s, which is no regression (%v)", b.Rule, b.Fingerprint, q.Status)
				}
			}
			for fp, want := range c.want {
				q := rep.Query(fp)
				checkLabel(t, fp, q)
				if q.Status != want {
					t.Errorf("%s: %s %v, want %s; added %.0f ms a run", fp, q.Status, q.Reasons, want, q.AddedMS)
				}
				if want == StatusSlowerWhileBusier && q.BusierWith != "a" {
					t.Errorf("%s: slower beside %q, want a", fp, q.BusierWith)
				}
			}
			if rep.Verdict.SlowerWhileBusier != c.busier || len(rep.SlowerWhileBusier) != c.busier || slices.Contains(rep.RegressionsByAddedTime, "b") == (c.busier == 1) {
				t.Errorf("verdict %+v, slower while busier %v, regressions %v", rep.Verdict, rep.SlowerWhileBusier, rep.RegressionsByAddedTime)
			}
		})
	}
}
