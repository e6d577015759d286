package headroom

import (
	"math"
	"testing"
)

// TestFitUSL: throughput made by a known USL (with 2% noise) gives back
// its coefficients and its peak.
func TestFitUSL(t *testing.T) {
	want := USL{Lambda: 1000, Sigma: 0.05, Kappa: 0.02}
	var ps []Point
	noise := []float64{1.01, 0.99, 1.02, 0.98, 1.0, 1.01, 0.99, 1.0}
	for i, k := range []float64{1, 1.5, 2, 3, 4, 6, 8, 12} {
		ps = append(ps, Point{K: k, X: want.Predict(k) * noise[i]})
	}
	got, ok := FitUSL(ps)
	if !ok {
		t.Fatal("no fit")
	}
	truePeak := math.Sqrt((1 - want.Sigma) / want.Kappa)
	t.Logf("fit %+v; true peak at %.2f", got, truePeak)
	if math.Abs(got.Lambda-1000) > 50 || math.Abs(got.PeakK-truePeak)/truePeak > 0.15 || got.R2 < 0.95 {
		t.Errorf("fit %+v, want lambda ~1000 and the peak near %.2f", got, truePeak)
	}
}

// TestFitUSLLinear: throughput growing with the load has no peak, and
// fewer than three loads have no fit.
func TestFitUSLLinear(t *testing.T) {
	got, ok := FitUSL([]Point{{1, 100}, {2, 200}, {4, 400}, {8, 800}})
	if !ok || got.PeakK != 0 || got.Kappa > 1e-9 || math.Abs(got.Lambda-100) > 1 {
		t.Errorf("linear: %+v %v, want lambda 100, no peak", got, ok)
	}
	if _, ok := FitUSL([]Point{{1, 100}, {1, 101}, {2, 200}}); ok {
		t.Error("two loads fitted")
	}
}
