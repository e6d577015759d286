package judge

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// The case: a candidate with 200 partial indexes on a table
// written row by row. Its INSERT stalls on 3% of its calls (its mean
// 17x, its p95 as at 1x), while a range read of the same table, whose
// sessions wait on its pages, grows only in its tail (p95 +30%) and
// takes the most time.
const (
	culpritInsert = "INSERT INTO events (account_id, kind, payload) VALUES ($1, $2, $3)"
	culpritRange  = "SELECT id, kind FROM events WHERE account_id = $1 AND created_at > $2"
)

// culpritRound is one round of the case, at 1x or stepped, its figures
// jittered by round; the step lags behind the log's pace, waiting on the
// target.
func culpritRound(t *testing.T, round int, stepped bool) *results.Result {
	t.Helper()
	s := querystats.NewSet()
	jitter := 1 + 0.01*float64(round)
	const inserts, reads = 1200, 400
	for i := range inserts {
		us := int64(200 * jitter)
		if stepped && i%100 < 3 {
			us = 106_000
		}
		s.AddAt("insert", culpritInsert, 1_700_000_000_000_000+int64(i)*1000, us, false)
	}
	for i := range reads {
		// 5 to 20 ms, its slowest 10% stretched to 30 ms when stepped.
		ms := 5 + 15*float64(i)/reads
		if stepped && i >= reads*9/10 {
			ms = 20 + 100*float64(i-reads*9/10)/reads
		}
		s.AddAt("range", culpritRange, 1_700_000_000_000_000+int64(i)*1000, int64(ms*1000*jitter), false)
	}
	rows, err := s.Rows(querystats.RowOptions{Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	res := results.New(results.KindReplay, results.LatencyClient)
	res.Source, res.Queries = fmt.Sprintf("round%d-%v.json", round, stepped), rows
	n := int64(inserts + reads)
	res.Statements = results.StatementCounts{Total: n, Executed: n}
	res.Replay = &results.Replay{Speed: 1, WallSeconds: 16, Lag: &results.Distribution{Count: n, P99: 13}}
	if stepped {
		res.Replay.Speed, res.Replay.WallSeconds = 2, 8.4
		res.Replay.Lag = &results.Distribution{Count: n, P99: 400}
		res.Replay.LagSources = &results.LagSources{TargetMS: 900, ReplayerMS: 10}
	}
	return res
}

// TestCulpritAgreesWithCompare: the step's culprit is the query that
// added the most time over its own 1x (the INSERT), not the one the
// sessions waited on most (the range read, evidence beside it); and
// rehearse's comparison of the same rounds ranks the same query first.
func TestCulpritAgreesWithCompare(t *testing.T) {
	slo, err := ParseSLO(DefaultSLO)
	if err != nil {
		t.Fatal(err)
	}
	var base, step []*results.Result
	for r := range 3 {
		base = append(base, culpritRound(t, r, false))
		step = append(step, culpritRound(t, r, true))
	}
	lv := LevelOf(2, step...)
	for i := range lv.Rounds {
		for j := range lv.Rounds[i].Queries {
			if q := &lv.Rounds[i].Queries[j]; q.Fingerprint == "range" {
				q.Waits = []Wait{{Event: "IO:DataFileRead", Share: 0.7}}
			}
		}
	}
	v, err := Levels([]Level{LevelOf(1, base...), lv}, slo, 2)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := compare.Runs(base, step, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.RegressionsByAddedTime) == 0 || rep.RegressionsByAddedTime[0] != "insert" {
		t.Fatalf("compare ranks %v first, want the INSERT", rep.RegressionsByAddedTime)
	}
	ins := rep.Query("insert")
	for i, rv := range v.Levels[0].Rounds {
		if rv.Held || len(rv.Broken) == 0 || rv.Broken[0].Metric != SLOMetricLag {
			t.Fatalf("round %d: %+v, want a lag break", i+1, rv)
		}
		c, w := rv.Broken[0].Cause, rv.Broken[0].WaitedMost
		if c == nil || c.Fingerprint != "insert" || c.Metric != SLOMetricMean {
			t.Errorf("round %d: cause %+v, want the INSERT's mean", i+1, c)
		} else if c.Value/c.Base < 15 || math.Abs(c.AddedMS/ins.ImpactMS-1) > 0.05 {
			t.Errorf("round %d: the INSERT %.1fx adding %.0f ms, want about 17x and compare's %.0f ms", i+1, c.Value/c.Base, c.AddedMS, ins.ImpactMS)
		}
		if w == nil || w.Fingerprint != "range" || len(w.Waits) == 0 {
			t.Errorf("round %d: waited most %+v, want the range read with its waits", i+1, w)
		}
	}
	// Every regression compare ranks is a culprit of the step, in
	// compare's order. (The step may name more: it has no histogram to
	// bound a tail by its calls, as compare does.)
	var got []string
	for _, c := range Culprits(v.Baseline, lv.Rounds[0], slo) {
		if slices.Contains(rep.RegressionsByAddedTime, c.Fingerprint) {
			got = append(got, c.Fingerprint)
		}
	}
	if !slices.Equal(got, rep.RegressionsByAddedTime) {
		t.Errorf("culprits among compare's regressions %v, compare's regressions by added time %v", got, rep.RegressionsByAddedTime)
	}
}

// TestCulpritsWithinNoise: a query whose figures grew within the spread of
// its own 1x rounds, or by less than the SLO's milliseconds, is no
// culprit, however much time it takes.
func TestCulpritsWithinNoise(t *testing.T) {
	slo, err := ParseSLO(DefaultSLO)
	if err != nil {
		t.Fatal(err)
	}
	b := NewBaseline([]Measurement{measurement(100, 2, 0.5), measurement(100, 2.4, 0.5)}, slo)
	for _, tc := range []struct {
		name   string
		factor float64
		want   int
	}{
		{"within the 1x rounds' spread", 1.25, 0},
		{"beyond it", 1.5, 1},
	} {
		if cs := Culprits(b, measurement(200, b.Queries[0].P95MS*tc.factor, 0.5), slo); len(cs) != tc.want {
			t.Errorf("%s: culprits %+v, want %d", tc.name, cs, tc.want)
		}
	}
	m := measurement(200, 2.2, 0.5)
	m.Queries[0].MeanMS = b.Queries[0].MeanMS + 0.1 // 10% up, but 0.1 ms
	if cs := Culprits(b, m, slo); len(cs) != 0 {
		t.Errorf("0.1 ms a call: culprits %+v, want none", cs)
	}
}

// TestStepLatencyBreakCulprit: a range read whose p95 breaks the SLO by
// the most is the first rule broken, and the INSERT that added more time
// over its 1x is named beside it as the culprit; a rule broken by the
// culprit itself names no other.
func TestStepLatencyBreakCulprit(t *testing.T) {
	slo, err := ParseSLO(DefaultSLO)
	if err != nil {
		t.Fatal(err)
	}
	round := func(insMean, rngP95 float64) Measurement {
		return Measurement{StatementsPerS: 100, Queries: []Query{
			{Fingerprint: "range", Query: culpritRange, Latency: querystats.Latency{TimedCalls: 400, TotalMS: 5000, MeanMS: 12.5, P95MS: rngP95}},
			{Fingerprint: "insert", Query: culpritInsert, Latency: querystats.Latency{TimedCalls: 1200, TotalMS: 1200 * insMean, MeanMS: insMean, P95MS: 0.4}},
		}}
	}
	b := NewBaseline([]Measurement{round(0.2, 20), round(0.2, 20)}, slo)
	v := Step(b, round(3.4, 32), 1, slo, 2)
	if v.Held || len(v.Broken) == 0 || v.Broken[0].Fingerprint != "range" {
		t.Fatalf("%+v: want the range read's p95 broken", v)
	}
	if c := v.Broken[0].Cause; c == nil || c.Fingerprint != "insert" || math.Abs(c.AddedMS-3840) > 1 {
		t.Errorf("cause %+v: want the INSERT, 3840 ms added", c)
	}
	v = Step(b, round(0.2, 32), 1, slo, 2)
	if len(v.Broken) == 0 || v.Broken[0].Cause != nil {
		t.Errorf("%+v: the range read broke and added the most: no other cause", v)
	}
}
