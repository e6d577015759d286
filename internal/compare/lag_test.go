package compare

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// lagQuery is one query of lagRun: n calls around meanUS, errs of them
// failed.
type lagQuery struct {
	n      int
	meanUS float64
	errs   int
}

// lagRun is a result of one run of the queries; lagP99MS >= 0 makes it a
// replay at speed 1 with that schedule lag p99 (maxLagMS its recorded
// threshold, nil for a result from before it was recorded), < 0 the
// analysis of a log.
func lagRun(t *testing.T, name string, seed uint64, qs map[string]lagQuery, lagP99MS float64, maxLagMS *float64) *Run {
	t.Helper()
	return lagRunBy(t, name, seed, qs, lagP99MS, maxLagMS, &results.LagSources{TargetMS: 10, ReplayerMS: 90})
}

// lagRunBy is lagRun with its lateness split as src says.
func lagRunBy(t *testing.T, name string, seed uint64, qs map[string]lagQuery, lagP99MS float64, maxLagMS *float64, src *results.LagSources) *Run {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 5))
	s := querystats.NewSet()
	var total, failed int64
	for _, fp := range sortedKeys(qs) {
		x := qs[fp]
		for i := range x.n {
			s.AddAt(fp, "SELECT "+fp, 1_700_000_000_000_000+int64(i)*1000, int64(x.meanUS*(0.5+r.ExpFloat64()*0.5)), i < x.errs)
		}
		total += int64(x.n)
		failed += int64(x.errs)
	}
	rows, err := s.Rows(querystats.RowOptions{Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	res := results.New(results.KindAnalysis, LatencyServerLog)
	if lagP99MS >= 0 {
		res = results.New(results.KindReplay, LatencyServerLog)
		res.Replay.Speed, res.Replay.WallSeconds = 1, 10
		res.Lag = &results.Distribution{Count: total, P50: lagP99MS / 10, P99: lagP99MS, Max: 1.5 * lagP99MS}
		res.MaxLagMS = maxLagMS
		res.LagSources = src
	}
	res.Source, res.Queries = name, rows
	res.Statements = results.StatementCounts{Total: total, Executed: total - failed, Failed: failed}
	return res
}

// TestLaggedReplayLatencyNotJudged: one run a side, a query 20x slower
// in the candidate. When a replay of the comparison fell behind its
// schedule beyond its threshold (lag p99 9.6 s against 100 ms, by the rule
// its own warning uses), the 20x is no regression and breaks no latency
// rule: it is listed as not judged (lag), the verdict is incomplete and
// names the lagging run; errors are still judged. Within the threshold,
// with a threshold of 0 (never), or when the lateness was the target's
// (the regression itself holding its sessions), the regression is called
// as before.
func TestLaggedReplayLatencyNotJudged(t *testing.T) {
	ms := func(v float64) *float64 { return &v }
	base := map[string]lagQuery{"slow": {2000, 1000, 0}, "same": {2000, 500, 0}, "errs": {2000, 300, 0}}
	cand := map[string]lagQuery{"slow": {2000, 20000, 0}, "same": {2000, 500, 0}, "errs": {2000, 300, 0}}
	candErrs := map[string]lagQuery{"slow": {2000, 20000, 0}, "same": {2000, 500, 0}, "errs": {2000, 300, 400}}
	cases := []struct {
		name       string
		base, cand *Run
		want       VerdictStatus
		slow       Status
		lagged     []Side
		broken     []Metric
	}{
		{"candidate lagged beyond the default threshold", lagRun(t, "log", 1, base, -1, nil), lagRun(t, "replay", 2, cand, 9600, nil),
			VerdictIncomplete, StatusNotJudgedLag, []Side{SideCandidate}, nil},
		{"candidate lagged beyond its recorded threshold", lagRun(t, "log", 1, base, -1, nil), lagRun(t, "replay", 2, cand, 9600, ms(100)),
			VerdictIncomplete, StatusNotJudgedLag, []Side{SideCandidate}, nil},
		{"baseline replay lagged", lagRun(t, "replay A", 1, base, 300, ms(100)), lagRun(t, "replay B", 2, cand, 5, ms(100)),
			VerdictIncomplete, StatusNotJudgedLag, []Side{SideBaseline}, nil},
		{"errors still judged", lagRun(t, "log", 1, base, -1, nil), lagRun(t, "replay", 2, candErrs, 9600, ms(100)),
			VerdictFail, StatusNotJudgedLag, []Side{SideCandidate}, []Metric{MetricErrors}},
		{"lag within the threshold keeps the power", lagRun(t, "log", 1, base, -1, nil), lagRun(t, "replay", 2, cand, 40, ms(100)),
			VerdictFail, StatusRegressed, nil, []Metric{MetricP95}},
		{"lag exactly at the threshold is within it", lagRun(t, "log", 1, base, -1, nil), lagRun(t, "replay", 2, cand, 100, ms(100)),
			VerdictFail, StatusRegressed, nil, []Metric{MetricP95}},
		{"a replay told to tolerate more lag", lagRun(t, "log", 1, base, -1, nil), lagRun(t, "replay", 2, cand, 500, ms(1000)),
			VerdictFail, StatusRegressed, nil, []Metric{MetricP95}},
		{"--max-lag 0: never doubtful", lagRun(t, "log", 1, base, -1, nil), lagRun(t, "replay", 2, cand, 9600, ms(0)),
			VerdictFail, StatusRegressed, nil, []Metric{MetricP95}},
		// Late because the target was slower: the regression itself (a
		// dropped index's lookup holds its session past the next due
		// time), called as before.
		{"lag that was the target's", lagRun(t, "log", 1, base, -1, nil),
			lagRunBy(t, "replay", 2, cand, 9600, ms(100), &results.LagSources{TargetMS: 96, ReplayerMS: 4}),
			VerdictFail, StatusRegressed, nil, []Metric{MetricP95}},
		{"lag whose source is not known", lagRun(t, "log", 1, base, -1, nil), lagRunBy(t, "replay", 2, cand, 9600, ms(100), nil),
			VerdictIncomplete, StatusNotJudgedLag, []Side{SideCandidate}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := Compare(c.base, c.cand, Options{Rules: mustRules(t, "p95>+50%", "errors>+1pp")})
			if err != nil {
				t.Fatal(err)
			}
			slow := rep.Query("slow")
			if slow == nil || slow.Status != c.slow || slow.Effects.Mean.Ratio < 15 {
				t.Fatalf("the 20x query: %+v, want %s", slow, c.slow)
			}
			var broken []Metric
			for _, b := range rep.Verdict.Broken {
				broken = append(broken, b.Metric)
				if b.Fingerprint == "slow" && c.lagged != nil {
					t.Errorf("the query not judged broke %s", b.Rule)
				}
			}
			if rep.Verdict.Status != c.want || !slices.Equal(broken, c.broken) {
				t.Errorf("verdict %s, broken %v; want %s, %v", rep.Verdict.Status, broken, c.want, c.broken)
			}
			nj := rep.Verdict.LatencyNotJudged
			if c.lagged == nil {
				if nj != nil || len(rep.NotJudgedLag) != 0 || rep.Verdict.NotJudgedLag != 0 || rep.Verdict.Regressions != 1 ||
					!slices.Equal(rep.RegressionsByAddedTime, []string{"slow"}) {
					t.Errorf("latency judged: not judged %+v %v, regressions %d %v", nj, rep.NotJudgedLag, rep.Verdict.Regressions, rep.RegressionsByAddedTime)
				}
				return
			}
			var sides []Side
			if nj != nil {
				for _, r := range nj.Runs {
					sides = append(sides, r.Side)
					if r.LagP99MS <= r.MaxLagMS || r.MaxLagMS != 100 || r.Run == "" {
						t.Errorf("lagged run %+v", r)
					}
				}
			}
			if nj == nil || nj.Reason != NotJudgedReplayLagged || !slices.Equal(sides, c.lagged) {
				t.Fatalf("latency not judged: %+v, want the %v side's lag", nj, c.lagged)
			}
			// Listed as not judged, never as a regression, never both.
			if !slices.Equal(rep.NotJudgedLag, []string{"slow"}) || rep.Verdict.NotJudgedLag != 1 || len(rep.RegressionsByAddedTime) != 0 ||
				len(rep.RegressionsByFactor) != 0 || rep.Verdict.Regressions+rep.Verdict.TailRegressions != 0 || rep.Verdict.Worst != "" ||
				slow.Regressed != "" || !slices.Contains(slow.Reasons, ReasonReplayLagged) || slow.Changed == "" {
				t.Errorf("not judged %v (%d), regressions %v %v (%d), worst %q; slow %s %v regressed %q changed %q", rep.NotJudgedLag, rep.Verdict.NotJudgedLag,
					rep.RegressionsByAddedTime, rep.RegressionsByFactor, rep.Verdict.Regressions, rep.Verdict.Worst, slow.Status, slow.Reasons, slow.Regressed, slow.Changed)
			}
			if q := rep.Query("same"); q.Status.Regression() || q.Status == StatusNotJudgedLag {
				t.Errorf("the unchanged query: %s", q.Status)
			}
		})
	}
}

// TestLaggedRoundsNoiseMeasured: with three runs a side the noise is
// measured (the baseline's own lagging runs widen its floor), and a
// lagging run does not stop the latency from being judged.
func TestLaggedRoundsNoiseMeasured(t *testing.T) {
	base := sideRuns(t, "A", 1, 3, 0.03, runsMeans, nil, nil)
	cand := sideRuns(t, "B", 2, 3, 0.03, runsMeans, map[string]float64{"c": 1.5}, nil)
	for _, r := range cand {
		r.Kind, r.Replay = results.KindReplay, &results.Replay{Speed: 1, WallSeconds: 10, Lag: &results.Distribution{Count: 10, P99: 9600, Max: 9600}}
	}
	rep, err := Runs(base, cand, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Noise.Measured || rep.Verdict.LatencyNotJudged != nil || rep.Query("c").Status != StatusRegressed || rep.Verdict.Status != VerdictRegressions {
		t.Errorf("noise measured %v, not judged %+v, c %s, verdict %s", rep.Noise.Measured, rep.Verdict.LatencyNotJudged, rep.Query("c").Status, rep.Verdict.Status)
	}
}
