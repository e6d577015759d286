package compare

import "testing"

// BenchmarkRuns is one comparison of five rounds a side of runsMeans'
// queries with histograms: the noise pooling, every look's evidence and
// the resolution read the same runs' histograms.
func BenchmarkRuns(b *testing.B) {
	base := sideRuns(b, "A", 1, 5, 0.05, runsMeans, nil, nil)
	cand := sideRuns(b, "B", 2, 5, 0.05, runsMeans, nil, nil)
	b.ResetTimer()
	for b.Loop() {
		if _, err := Runs(base, cand, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
