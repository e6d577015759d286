package judge_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// run is a replay's result with two queries: a lookup of meanMS a call
// and a report of 20 ms, each timed 400 times by the target's log.
func run(name string, meanMS float64) *results.Result {
	row := func(fp string, mean float64) map[string]any {
		return map[string]any{"fingerprint": fp, "query": "SELECT " + fp, "calls": 400, "timed_calls": 400,
			"total_ms": 400 * mean, "mean_ms": mean, "p50_ms": mean, "p95_ms": mean * 1.2, "p99_ms": mean * 1.5, "max_ms": mean * 2}
	}
	b, _ := json.Marshal(map[string]any{"kind": "replay", "speed": 1, "wall_seconds": 10, "latency_source": "server_log",
		"statements": map[string]int64{"total": 800, "executed": 800},
		"queries":    []map[string]any{row("lookup", meanMS), row("report", 20)}})
	res, err := results.Decode(b, name)
	if err != nil {
		panic(err)
	}
	return res
}

// Three rounds a side, the candidate's lookup four times slower: the
// verdict names it, and each part is reported as soon as it is known.
func ExampleJudge() {
	base := judge.NewRuns([]*results.Result{run("control 1", 1.0), run("control 2", 1.02), run("control 3", 0.98)})
	cand := judge.NewRuns([]*results.Result{run("candidate 1", 4.0), run("candidate 2", 4.1), run("candidate 3", 3.9)})
	rules, _ := judge.ParsePairRules([]string{"p95>+20%"})
	v, err := judge.Judge(context.Background(), base, cand, judge.Options{
		MinCalls: 1, Rules: rules,
		OnStage: func(s judge.Stage, v *judge.Verdict) error {
			fmt.Println("stage:", s)
			return nil
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("verdict:", v.Comparison.Verdict.Status)
	for _, q := range v.Comparison.Queries {
		if q.Fingerprint == "lookup" {
			fmt.Println("lookup:", q.Status)
		}
	}
	// Output:
	// stage: compared
	// verdict: fail
	// lookup: regressed
}

// An SLO as --slo reads it: each query's p95 within +50% of its own at
// 1x, the error rate within 0.1 percentage points.
func ExampleParseSLO() {
	slo, err := judge.ParseSLO("p95<+50%,errors<+0.1pp")
	if err != nil {
		panic(err)
	}
	for _, r := range slo.Rules {
		fmt.Printf("%s: ratio %g, pp %g\n", r.Metric, r.Ratio, r.PP)
	}
	// Output:
	// p95: ratio 1.5, pp 0
	// errors: ratio 0, pp 0.1
}

// step is a replay at k times a workload of 1000 statements per second,
// for 10 s: a lookup of p95 lookupP95 ms, then a report that stays at
// 4 ms, half the statements each.
func step(k, lookupP95 float64) *results.Result {
	n := int64(1000 * k * 10)
	return &results.Result{
		Kind:       results.KindReplay,
		Statements: results.StatementCounts{Total: n, Executed: n},
		Queries: []querystats.Row{
			{Fingerprint: "lookup", Query: "SELECT id FROM customers WHERE email = $1", Calls: n / 2,
				Latency: querystats.Latency{TimedCalls: n / 2, TotalMS: float64(n) / 2 * lookupP95 / 2, MeanMS: lookupP95 / 2, P50MS: lookupP95 / 2, P95MS: lookupP95}},
			{Fingerprint: "report", Query: "SELECT sum(total) FROM orders", Calls: n / 2,
				Latency: querystats.Latency{TimedCalls: n / 2, TotalMS: float64(n) / 2 * 3, MeanMS: 3, P50MS: 3, P95MS: 4}},
		},
		Replay: &results.Replay{Speed: k, WallSeconds: 10},
	}
}

// A side's three load levels judged at once: its three rounds at 1x are
// the baseline, 2x holds each query's p95 within +50%, and 4x triples
// the lookup's.
func ExampleLevels() {
	slo, err := judge.ParseSLO("p95<+50%,errors<+0.1pp")
	if err != nil {
		panic(err)
	}
	v, err := judge.Levels([]judge.Level{
		judge.LevelOf(1, step(1, 1.0), step(1, 1.02), step(1, 0.98)),
		judge.LevelOf(2, step(2, 1.2)),
		judge.LevelOf(4, step(4, 3.0)),
	}, slo, 2)
	if err != nil {
		panic(err)
	}
	fmt.Printf("baseline: %d rounds, %.0f statements/s\n", v.Baseline.Rounds, v.Baseline.StatementsPerS)
	for _, l := range v.Levels {
		sv := l.Verdict
		fmt.Printf("%gx: held %v, achieved %.2fx, bound by the %s\n", l.K, sv.Held, sv.AchievedK, sv.Bound)
		for _, b := range sv.Broken {
			fmt.Printf("  broke %s of %s: %.2f ms at 1x, %.2f ms, limit %.2f ms\n", b.Metric, b.Fingerprint, b.Base, b.Value, b.Limit)
		}
	}
	// Output:
	// baseline: 3 rounds, 1000 statements/s
	// 2x: held true, achieved 2.00x, bound by the target
	// 4x: held false, achieved 4.00x, bound by the target
	//   broke p95 of lookup: 1.00 ms at 1x, 3.00 ms, limit 1.56 ms
}
