package headroom_test

import (
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
)

// The load factors a search climbs before anything breaks.
func ExampleLadder() {
	fmt.Println(headroom.Ladder(16))
	// Output: [1 1.5 2 3 4 6 8 12 16]
}

// An SLO as --slo reads it: each query's p95 within +50% of its own at
// 1x, the error rate within 0.1 percentage points.
func ExampleParseSLO() {
	slo, err := headroom.ParseSLO("p95<+50%,errors<+0.1pp")
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

// A search driven by hand: a target whose steps hold up to 2.5x.
func ExampleSearch() {
	s := headroom.NewSearch(headroom.Search{MaxK: 8, BaseRounds: 1, BoundaryRounds: 1})
	for {
		k, done := s.Next()
		if done {
			break
		}
		held := k <= 2.5
		margin := -0.5
		if !held {
			margin = 0.5
		}
		s.Record(headroom.Trial{K: k, Achieved: k, Held: held, Margin: margin, Bound: headroom.BoundTarget})
	}
	var ks []float64
	for _, t := range s.Trials() {
		ks = append(ks, t.K)
	}
	a := s.Answer()
	fmt.Println(ks)
	fmt.Printf("held at %g, broke at %g\n", a.AskedLo, a.AskedHi)
	// Output:
	// [1 1.5 2 3 2.45 2.71]
	// held at 2.45, broke at 2.71
}
