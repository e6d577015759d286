package stats_test

import (
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// Compare two samples: a query's mean latency (ms) in three runs on the
// control and three on the candidate. Each value is one run; the test is
// over the runs. With three runs per side the rank interval is
// [min y / max x, max y / min x] at exactly 90%, its shorter side about
// the ratio widened to the longer side's factor, and the change counts
// only when that interval excludes 1 and the ratio passes the floor
// (the larger of the effect floor and the control's own spread).
func ExampleEffect() {
	control := []float64{10.1, 9.8, 10.3}
	candidate := []float64{13.0, 12.6, 13.4}
	r := stats.Effect(control, candidate, stats.Options{MinEffect: 0.10})
	fmt.Printf("ratio %.3f, %.0f%% interval [%.3f, %.3f]\n", r.Ratio, 100*r.Level, r.Low, r.High)
	fmt.Printf("noise floor %.3f (measured %t), floor %.3f\n", r.Noise, r.NoiseMeasured, r.Floor)
	fmt.Printf("higher %t, beyond the floor %t, p %.2f\n", r.Change == stats.Higher, r.Beyond, r.P)

	// The same control against itself moved by less than its noise:
	// the interval holds 1, no change can be told.
	same := stats.Effect(control, []float64{10.0, 10.4, 9.9}, stats.Options{MinEffect: 0.10})
	fmt.Printf("ratio %.3f, interval [%.3f, %.3f], same %t\n", same.Ratio, same.Low, same.High, same.Change == stats.Same)
	// Output:
	// ratio 1.287, 90% interval [1.212, 1.367]
	// noise floor 1.051 (measured true), floor 1.100
	// higher true, beyond the floor true, p 0.10
	// ratio 0.990, interval [0.924, 1.061], same true
}

// The median of a figure over rounds and its spread, the "±" shown with
// it: the largest distance of a round from the median, relative to it.
func ExampleSpread() {
	rounds := []float64{4.1, 4.0, 4.3, 3.9, 4.2}
	fmt.Printf("%.2f ms ±%.1f%%\n", stats.Median(rounds), 100*stats.Spread(rounds))
	// Output: 4.10 ms ±4.9%
}
