package judge

import (
	"errors"
	"math"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// levelResult is a replay's result at k: a side replayed at k times a
// workload of 1000 statements per second for 10 s, half of them a lookup
// whose p95 is lookupP95 ms, half an orders query that stays at 0.9 ms.
func levelResult(k, lookupP95 float64) *results.Result {
	wall := 10.0
	n := int64(1000 * k * wall)
	return &results.Result{
		Kind:       results.KindReplay,
		Statements: results.StatementCounts{Total: n, Executed: n},
		Queries: []querystats.Row{
			{Fingerprint: "lookup", Query: "SELECT id FROM customers WHERE email = $1", Calls: n / 2,
				Latency: querystats.Latency{TimedCalls: n / 2, TotalMS: float64(n) / 2 * lookupP95 / 2, MeanMS: lookupP95 / 2, P50MS: lookupP95 / 2, P95MS: lookupP95, P99MS: lookupP95 * 1.2}},
			{Fingerprint: "orders", Query: "SELECT sum(total) FROM orders WHERE customer_id = $1", Calls: n / 2,
				Latency: querystats.Latency{TimedCalls: n / 2, TotalMS: float64(n) / 2 * 0.5, MeanMS: 0.5, P50MS: 0.5, P95MS: 0.9, P99MS: 1}},
		},
		Replay: &results.Replay{Speed: k, WallSeconds: wall, ClientCPUSeconds: 0.5},
	}
}

// TestLevelsThreeLoadLevels: three rounds at k = 1 are the baseline; at
// 2x the lookup's p95 grows by 20%, within +50% and the 1x rounds' own
// spread, and the level holds; at 4x it triples and the level breaks
// the p95 rule on the lookup, the target being the bound of both.
func TestLevelsThreeLoadLevels(t *testing.T) {
	slo, err := ParseSLO(DefaultSLO)
	if err != nil {
		t.Fatal(err)
	}
	v, err := Levels([]Level{
		LevelOf(1, levelResult(1, 1.0), levelResult(1, 1.02), levelResult(1, 0.98)),
		LevelOf(2, levelResult(2, 1.2)),
		LevelOf(4, levelResult(4, 3.0)),
	}, slo, 2)
	if err != nil {
		t.Fatal(err)
	}
	b := v.Baseline
	if b.Rounds != 3 || b.StatementsPerS != 1000 || len(b.Queries) != 2 {
		t.Fatalf("baseline %+v: want 3 rounds at 1000 statements/s, both queries judged", b)
	}
	if len(v.Levels) != 2 || v.Levels[0].K != 2 || v.Levels[1].K != 4 {
		t.Fatalf("levels %+v: want 2x then 4x", v.Levels)
	}
	held := v.Levels[0].Verdict
	if !held.Held || len(held.Broken) != 0 || math.Abs(held.AchievedK-2) > 1e-9 || held.Bound != BoundTarget || held.Margin > 0 {
		t.Errorf("2x: %+v, want held at 2.00x achieved, bound by the target", held)
	}
	if held.Closest == nil || held.Closest.Fingerprint != "lookup" || held.Closest.Metric != SLOMetricP95 {
		t.Errorf("2x: closest %+v, want the lookup's p95", held.Closest)
	}
	broke := v.Levels[1].Verdict
	if broke.Held || math.Abs(broke.AchievedK-4) > 1e-9 || broke.Bound != BoundTarget || broke.Margin <= 0 {
		t.Errorf("4x: %+v, want broken at 4.00x achieved, bound by the target", broke)
	}
	if len(broke.Broken) != 1 || broke.Broken[0].Metric != SLOMetricP95 || broke.Broken[0].Fingerprint != "lookup" ||
		broke.Broken[0].Base != 1.0 || broke.Broken[0].Value != 3.0 {
		t.Errorf("4x: broken %+v, want the lookup's p95 alone, 1 ms at 1x, 3 ms at 4x", broke.Broken)
	}
	for _, lv := range v.Levels {
		if len(lv.Rounds) != 1 || lv.Rounds[0].Held != lv.Verdict.Held {
			t.Errorf("%gx: rounds %+v, want the one round's verdict", lv.K, lv.Rounds)
		}
	}
}

// A level of several rounds is each round judged, and the level's
// verdict is its worst: it held only if every round held.
func TestLevelsWorstRound(t *testing.T) {
	slo, _ := ParseSLO(DefaultSLO)
	v, err := Levels([]Level{
		LevelOf(3, levelResult(3, 1.1), levelResult(3, 2.5), levelResult(3, 1.2)),
		LevelOf(1, levelResult(1, 1.0), levelResult(1, 1.0)),
	}, slo, 2)
	if err != nil {
		t.Fatal(err)
	}
	if v.Baseline.Rounds != 2 || len(v.Levels) != 1 {
		t.Fatalf("%+v: want a baseline of 2 rounds and one level judged", v)
	}
	lv := v.Levels[0]
	if len(lv.Rounds) != 3 || !lv.Rounds[0].Held || lv.Rounds[1].Held || !lv.Rounds[2].Held {
		t.Errorf("rounds %+v: want held, broken, held", lv.Rounds)
	}
	if lv.Verdict.Held || lv.Verdict.Margin != lv.Rounds[1].Margin {
		t.Errorf("level %+v: want the broken round's verdict", lv.Verdict)
	}
}

// Without a level at k = 1 there is nothing to judge the others
// against: refused, as are a level without rounds and a k that is not a
// load factor.
func TestLevelsRefused(t *testing.T) {
	slo, _ := ParseSLO(DefaultSLO)
	_, err := Levels([]Level{LevelOf(2, levelResult(2, 1.2)), LevelOf(4, levelResult(4, 3))}, slo, 2)
	if !errors.Is(err, ErrNoBaselineLevel) {
		t.Errorf("no k = 1: err %v, want ErrNoBaselineLevel", err)
	}
	if _, err := Levels(nil, slo, 2); !errors.Is(err, ErrNoBaselineLevel) {
		t.Errorf("no level: err %v, want ErrNoBaselineLevel", err)
	}
	for name, levels := range map[string][]Level{
		"a level without rounds": {LevelOf(1, levelResult(1, 1)), {K: 2}},
		"k = 0":                  {LevelOf(1, levelResult(1, 1)), LevelOf(0, levelResult(1, 1))},
		"k NaN":                  {LevelOf(1, levelResult(1, 1)), LevelOf(math.NaN(), levelResult(1, 1))},
	} {
		if _, err := Levels(levels, slo, 2); err == nil || errors.Is(err, ErrNoBaselineLevel) {
			t.Errorf("%s: err %v, want the level refused", name, err)
		}
	}
}
