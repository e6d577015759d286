package headroom_test

import (
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/judge"
)

// The load factors a search climbs before anything breaks.
func ExampleLadder() {
	fmt.Println(headroom.Ladder(16))
	// Output: [1 1.5 2 3 4 6 8 12 16]
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
		s.Record(headroom.Trial{K: k, Achieved: k, Held: held, Margin: margin, Bound: judge.BoundTarget})
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
