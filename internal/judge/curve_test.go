package judge

import "testing"

// TestCurveCliff: a curve whose throughput halves after its peak has its
// cliff at the first level below the ratio in every step, beyond the
// noise; an invalid ratio or a flat curve has none, and a curve without
// readings no peak.
func TestCurveCliff(t *testing.T) {
	curve := []CurveLevel{
		{X: 1, Throughput: []float64{100, 102, 99}},
		{X: 2, Throughput: []float64{190, 195, 192}},
		{X: 4, Throughput: []float64{200, 205, 198}},
		{X: 8, Throughput: []float64{185, 190, 188}},
		{X: 16, Throughput: []float64{100, 98, 103}},
	}
	peak, b := CurveRule{CliffRatio: 0.8}.Cliff(curve)
	if peak == nil || peak.X != 4 {
		t.Fatalf("peak %+v, want at 4", peak)
	}
	if !b.Found || b.AskedHi != 16 || b.AskedLo != 8 || !(b.Lo <= b.Estimate && b.Estimate <= b.Hi) {
		t.Errorf("cliff %+v, want found between 8 and 16", b)
	}
	if _, b := (CurveRule{CliffRatio: 1}).Cliff(curve); b.Found {
		t.Errorf("ratio 1: cliff %+v, want none", b)
	}
	flat := []CurveLevel{{X: 1, Throughput: []float64{100, 101}}, {X: 2, Throughput: []float64{99, 100}}}
	if _, b := (CurveRule{CliffRatio: 0.8}).Cliff(flat); b.Found {
		t.Errorf("flat curve: cliff %+v, want none", b)
	}
	if peak, _ := (CurveRule{CliffRatio: 0.8}).Cliff([]CurveLevel{{X: 1}}); peak != nil {
		t.Errorf("no readings: peak %+v, want none", peak)
	}
}

// TestCurveNoiseUnmeasured: curves compared with one step a level claim
// nothing; one curve, or repeats, may.
func TestCurveNoiseUnmeasured(t *testing.T) {
	for _, c := range []struct {
		curves, repeat int
		want           bool
	}{{2, 1, true}, {3, 1, true}, {2, 2, false}, {1, 1, false}} {
		if got := CurveNoiseUnmeasured(c.curves, c.repeat); got != c.want {
			t.Errorf("CurveNoiseUnmeasured(%d, %d) = %v, want %v", c.curves, c.repeat, got, c.want)
		}
	}
}
