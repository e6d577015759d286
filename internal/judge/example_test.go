package judge_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/judge"
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
	rules, _ := compare.ParseRules([]string{"p95>+20%"})
	v, err := judge.Judge(context.Background(), base, cand, judge.Options{
		Compare: compare.Options{MinCalls: 1, Rules: rules},
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
