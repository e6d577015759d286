package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/judge"
)

// TestHeld: a step falls behind when it processed less than 90% of the
// transactions asked or its mean schedule lag passed 100 ms.
func TestHeld(t *testing.T) {
	for _, c := range []struct {
		asked, tps, lag float64
		want            bool
	}{
		{1000, 995, 2, true},
		{1000, 900, 100, true},
		{1000, 899, 2, false},
		{1000, 1000, 100.5, false},
	} {
		if got := held(c.asked, c.tps, c.lag); got != c.want {
			t.Errorf("held(%v, %v, %v) = %v, want %v", c.asked, c.tps, c.lag, got, c.want)
		}
	}
	// The mean lag weighs each transaction, failed ones left out.
	txs := map[string][]txSample{"a": {{lagMS: 10}}, "b": {{lagMS: 1}, {lagMS: 1}, {lagMS: 1}, {lagMS: 50, failed: true}}}
	if got := meanLagOf(txs); got != 13.0/4 {
		t.Errorf("meanLagOf = %v, want %v", got, 13.0/4)
	}
	if got := meanLagOf(nil); got != 0 {
		t.Errorf("meanLagOf nothing = %v", got)
	}
}

// samples are n transactions of ms each.
func samples(n int, ms float64) []txSample {
	s := make([]txSample, n)
	for i := range s {
		s[i] = txSample{appMS: ms}
	}
	return s
}

// TestJudgeStep: headroom's SLO on the application's transaction types,
// against three identical 1x rounds (100 "lookup" at 10 ms, 10 "report"
// at 30 ms): a p95 1.6x broke it, 1.4x held, a p95 grown by less than
// the least effect held however large its ratio, a type of too few
// calls is not judged, and a step that fell behind broke whatever its
// latencies.
func TestJudgeStep(t *testing.T) {
	slo, err := judge.ParseSLO(judge.DefaultSLO)
	if err != nil {
		t.Fatal(err)
	}
	m := stepMeasurement(map[string][]txSample{"lookup": samples(100, 10), "report": samples(10, 30)}, 10)
	b := judge.NewBaseline([]judge.Measurement{m, m, m}, slo)
	if len(b.Queries) != 1 || b.Queries[0].Fingerprint != "lookup" {
		t.Fatalf("baseline judges %+v, want lookup alone (report: too few calls)", b.Queries)
	}
	withTiny := stepMeasurement(map[string][]txSample{"lookup": samples(100, 10), "tiny": samples(100, 0.1)}, 10)
	if bt := judge.NewBaseline([]judge.Measurement{withTiny}, slo); len(bt.Queries) != 1 || bt.Queries[0].Fingerprint != "lookup" {
		t.Fatalf("baseline judges %+v, want lookup alone (tiny: too small a share)", bt.Queries)
	}
	// tiny is judged only when its share is enough: a baseline of its
	// own.
	bTiny := judge.NewBaseline([]judge.Measurement{stepMeasurement(map[string][]txSample{"tiny": samples(100, 0.1)}, 10)}, slo)
	for _, c := range []struct {
		name   string
		b      judge.Baseline
		txs    map[string][]txSample
		keptUp bool
		held   bool
		metric judge.SLOMetric
	}{
		{"p95 1.6x", b, map[string][]txSample{"lookup": samples(100, 16), "report": samples(10, 30)}, true, false, judge.SLOMetricP95},
		{"p95 1.4x", b, map[string][]txSample{"lookup": samples(100, 14), "report": samples(10, 30)}, true, true, ""},
		{"few calls 3x", b, map[string][]txSample{"lookup": samples(100, 10), "report": samples(10, 90)}, true, true, ""},
		{"below the least effect", bTiny, map[string][]txSample{"tiny": samples(100, 0.16)}, true, true, ""},
		{"fell behind", b, map[string][]txSample{"lookup": samples(100, 10), "report": samples(10, 30)}, false, false, behindMetric},
	} {
		t.Run(c.name, func(t *testing.T) {
			// k = 2, twice the transactions per second of 1x.
			st := capacityStep{K: 2, Asked: 22, TPS: 22, KeptUp: c.keptUp}
			if !c.keptUp {
				st.TPS = 15
			}
			if !c.keptUp {
				st.LagMS = 150
			}
			v := judgeStep(c.b, stepMeasurement(c.txs, 5), st, slo)
			if v.Held != c.held {
				t.Fatalf("held = %v, want %v: %+v", v.Held, c.held, v)
			}
			if c.held && v.Margin > 0 {
				t.Errorf("held with margin %v", v.Margin)
			}
			if !c.held && (len(v.Broken) == 0 || v.Broken[0].Metric != c.metric || v.Margin <= 0) {
				t.Errorf("broken %+v (margin %v), want %s first", v.Broken, v.Margin, c.metric)
			}
			// Behind by its mean lag of 150 ms: half again the 100 allowed.
			if !c.keptUp && math.Abs(v.Margin-0.5) > 1e-9 {
				t.Errorf("fell behind with margin %v, want 0.5 (its lag's)", v.Margin)
			}
		})
	}
}

// TestStepMeasurement: each transaction type's quantiles, the errors and
// the rate.
func TestStepMeasurement(t *testing.T) {
	var ss []txSample
	for i := 1; i <= 100; i++ {
		ss = append(ss, txSample{appMS: float64(i), lagMS: float64(i) / 10})
	}
	ss = append(ss, txSample{failed: true})
	m := stepMeasurement(map[string][]txSample{"a": ss}, 10)
	q := m.Queries[0]
	if q.P50MS != 50 || q.P95MS != 95 || q.P99MS != 99 || q.MeanMS != 50.5 || q.TimedCalls != 100 || q.Calls != 101 {
		t.Errorf("query %+v", q)
	}
	if m.Statements != 101 || m.Failed != 1 || m.StatementsPerS != 10 || math.Abs(m.ErrorRate-100.0/101) > 1e-9 || m.LagP99MS != 9.9 {
		t.Errorf("measurement %+v", m)
	}
}

// TestCapacityTruth: on a synthetic application whose p95 grows as
// 1/(1-k/kmax), the SLO's +50% over its 1x is crossed at
// kmax(1-(1-1/kmax)/1.5): the truth's bracket is within headroom's
// resolution, its interval holds the crossing and its estimate is
// within 15% of it; the throughput capacity is where it fell behind
// (past 0.8 kmax, where it is asked more than it can do).
func TestCapacityTruth(t *testing.T) {
	slo, err := judge.ParseSLO(judge.DefaultSLO)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kmax, maxK    float64
		heldK, brokeK float64
		atLeast       bool
	}{
		{kmax: 9, maxK: 8, heldK: 6, brokeK: 8},
		{kmax: 15, maxK: 16, heldK: 12, brokeK: 16},
		{kmax: 4, maxK: 8, heldK: 3, brokeK: 4},
		{kmax: 60, maxK: 4, heldK: 4, atLeast: true},
	} {
		const rate = 100.0
		crossing := c.kmax * (1 - (1-1/c.kmax)/1.5)
		run := func(k float64) (capacityStep, judge.Measurement, error) {
			p95 := 10 / (1 - k/c.kmax)
			st := capacityStep{K: k, Asked: k * rate, TPS: k * rate, KeptUp: k <= 0.8*c.kmax}
			// 200 transactions at k times the rate: 2/k seconds.
			return st, stepMeasurement(map[string][]txSample{"t": samples(200, p95)}, 200/(k*rate)), nil
		}
		cs, err := capacityTruth(sideControl, c.maxK, slo, run)
		if err != nil {
			t.Fatal(err)
		}
		a := cs.Truth
		if cs.HeldK != c.heldK || cs.BrokeK != c.brokeK {
			t.Errorf("kmax %g: throughput held %g, fell behind at %g; want %g, %g", c.kmax, cs.HeldK, cs.BrokeK, c.heldK, c.brokeK)
		}
		base := 0
		for _, st := range cs.Steps {
			if st.Base {
				base++
			} else if st.Verdict == nil && st.K <= a.AskedHi {
				t.Errorf("kmax %g: step at %gx unjudged", c.kmax, st.K)
			}
		}
		if base != headroom.DefaultBaseRounds {
			t.Errorf("kmax %g: %d base rounds", c.kmax, base)
		}
		if c.atLeast {
			if !a.AtLeast || a.Lo != c.maxK {
				t.Errorf("kmax %g: truth %+v, want at least %g", c.kmax, a, c.maxK)
			}
			continue
		}
		if a.AtLeast || a.Lo > crossing || a.Hi < crossing || a.AskedHi/a.AskedLo > headroom.DefaultResolution+1e-9 {
			t.Errorf("kmax %g: truth %.3f-%.3f (bracket %g-%g), want around %.3f, bracketed within %g", c.kmax, a.Lo, a.Hi, a.AskedLo, a.AskedHi, crossing, headroom.DefaultResolution)
		}
		if math.Abs(a.Holds/crossing-1) > 0.15 {
			t.Errorf("kmax %g: estimate %.3f, want within 15%% of %.3f", c.kmax, a.Holds, crossing)
		}
		if want := a.Holds * rate; math.Abs(cs.TruthTPS-want) > 1e-6*want {
			t.Errorf("kmax %g: throughput at the estimate %v, want %v", c.kmax, cs.TruthTPS, want)
		}
	}
}

// TestCapacityLines: the truth under the SLO beside headroom's answer
// and their ratio, within or outside 0.80-1.25, the throughput capacity
// labelled; a result from before the SLO as it was.
func TestCapacityLines(t *testing.T) {
	r := capacityResult{SLO: "p95<+50%,errors<+0.1pp", Sides: []capacitySide{
		{Side: sideControl, HeldK: 3, BrokeK: 4, Truth: &headroom.Answer{Holds: 2.5, Lo: 2.4, Hi: 2.7}, TruthTPS: 1250, Headroom: &headroom.Answer{Holds: 2.8, Lo: 2.5, Hi: 3.1}},
		{Side: sideCand, HeldK: 8, Truth: &headroom.Answer{Holds: 2, Lo: 1.9, Hi: 2.1}, TruthTPS: 1000, Headroom: &headroom.Answer{Holds: 3, Lo: 2.8, Hi: 3.2}},
		{Side: "third", HeldK: 0, BrokeK: 1, Truth: &headroom.Answer{Holds: 8, Lo: 8, AtLeast: true}, TruthTPS: 4000},
		// 1x kept up in some rounds only (the quiet run's half-CPU shop).
		{Side: "fourth", HeldK: 0, BrokeK: 1.22, Truth: &headroom.Answer{Holds: 1.04, Lo: 1, Hi: 1.15}, TruthTPS: 376, Headroom: &headroom.Answer{Holds: 1.41, Lo: 1.35, Hi: 1.45}},
	}}
	old := capacityResult{Sides: []capacitySide{
		{Side: sideControl, HeldK: 3, BrokeK: 4, Headroom: &headroom.Answer{Holds: 2.8, Lo: 2.5, Hi: 3.1}},
		{Side: sideCand, HeldK: 8, Headroom: &headroom.Answer{Lo: 7.6, AtLeast: true}},
		{Side: "other", HeldK: 0, BrokeK: 1},
	}}
	// A result.json's capacity from before the SLO reads as it was
	// written: its steps' "held" is the throughput test's.
	var oldJSON capacityResult
	if err := json.Unmarshal([]byte(`{"sides":[{"side":"control","steps":[{"k":1,"asked_tps":400,"tps":399,"mean_lag_ms":1,"held":true},{"k":1.5,"asked_tps":600,"tps":500,"mean_lag_ms":90,"held":false}],"held_k":1,"broke_k":1.5}],"headroom_command":["headroom"],"headroom_exit_code":0}`), &oldJSON); err != nil {
		t.Fatal(err)
	}
	if st := oldJSON.Sides[0].Steps; !st[0].KeptUp || st[1].KeptUp || st[0].Verdict != nil {
		t.Errorf("old steps read as %+v", st)
	}
	for _, c := range []struct {
		r    capacityResult
		want []string
	}{
		{oldJSON, []string{"capacity, control (times the application's rate): true held 1x, fell behind at 1.5x; headroom none"}},
		{r, []string{
			"capacity, control (times the application's rate): under p95<+50%,errors<+0.1pp true 2.50x (2.40x-2.70x) at 1250 transactions/s, headroom 2.80x (2.50x-3.10x): headroom/true 1.12, within 0.80-1.25; throughput (until it fell behind) held 3x, fell behind at 4x",
			"capacity, candidate (times the application's rate): under p95<+50%,errors<+0.1pp true 2.00x (1.90x-2.10x) at 1000 transactions/s, headroom 3.00x (2.80x-3.20x): headroom/true 1.50, outside 0.80-1.25; throughput (until it fell behind) held 8x (the largest tried)",
			"capacity, third (times the application's rate): under p95<+50%,errors<+0.1pp true at least 8.00x at 4000 transactions/s, headroom none: no ratio (an answer missing, or only a lower bound); throughput (until it fell behind) fell behind at 1x",
			"capacity, fourth (times the application's rate): under p95<+50%,errors<+0.1pp true 1.04x (1.00x-1.15x) at 376 transactions/s, headroom 1.41x (1.35x-1.45x): headroom/true 1.36, outside 0.80-1.25; throughput (until it fell behind) held no k in every round, fell behind at 1.22x",
		}},
		{old, []string{
			"capacity, control (times the application's rate): true held 3x, fell behind at 4x; headroom 2.80x (2.50x-3.10x)",
			"capacity, candidate (times the application's rate): true held 8x (the largest tried); headroom at least 7.60x",
			"capacity, other (times the application's rate): true fell behind at 1x; headroom none",
		}},
	} {
		got := c.r.lines()
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
		}
	}
}

// TestThroughputCapacity: a k whose rounds disagree is neither held nor
// fallen behind.
func TestThroughputCapacity(t *testing.T) {
	step := func(k float64, keptUp bool) capacityStep { return capacityStep{K: k, KeptUp: keptUp} }
	for _, c := range []struct {
		steps         []capacityStep
		heldK, brokeK float64
	}{
		{[]capacityStep{step(1, true), step(2, true), step(3, false)}, 2, 3},
		{[]capacityStep{step(1, true), step(1.5, true), step(2, false), step(1.73, true), step(1.86, false), step(1.86, true), step(2, true), step(3, false), step(3, false)}, 1.73, 3},
		{[]capacityStep{step(1, true), step(4, true)}, 4, 0},
		{[]capacityStep{step(1, false), step(1, false)}, 0, 1},
	} {
		if h, b := throughputCapacity(c.steps); h != c.heldK || b != c.brokeK {
			t.Errorf("%+v: held %g, fell behind at %g; want %g, %g", c.steps, h, b, c.heldK, c.brokeK)
		}
	}
}

// TestStepClients: the capacity's truth keeps -clients at every k, or
// with -capacity-clients runs k times them, rounded up.
func TestStepClients(t *testing.T) {
	for _, tc := range []struct {
		scaled bool
		k      float64
		want   int
	}{{false, 3, 8}, {true, 1, 8}, {true, 1.5, 12}, {true, 2.1, 17}} {
		if got := (options{clients: 8, capacityClients: tc.scaled}).stepClients(tc.k); got != tc.want {
			t.Errorf("scaled %v, k %v: %d clients, want %d", tc.scaled, tc.k, got, tc.want)
		}
	}
}
