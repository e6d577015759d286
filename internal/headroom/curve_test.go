package headroom

import (
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/judge"
)

// A side's throughput grows with k up to 3x, where the target
// saturates and latency starts to grow: the peak spans 3x to 6x (within
// noise of each other), and the knee, where statements per second over
// latency is highest, is 3x, the finder sweep's client counts use.
func TestPeakAndKnee(t *testing.T) {
	var steps []Step
	add := func(k, x, ms float64) {
		steps = append(steps, Step{K: k, Measurement: &judge.Measurement{StatementsPerS: x, MeanMS: ms}})
	}
	for _, r := range []float64{0.98, 1, 1.02} {
		add(1, 100*r, 1*r)
	}
	add(1.5, 150, 1)
	add(2, 200, 1.02)
	add(3, 300, 1.05)
	add(3, 296, 1.07)
	add(4, 310, 2.2)
	add(6, 305, 4.1)
	p, k := peakAndKnee(steps)
	if p == nil || p.K != 4 || p.Lo != 3 || p.Hi != 6 {
		t.Errorf("peak %+v, want 4x, 3-6x within noise", p)
	}
	if k == nil || !k.Found || k.K != 3 || k.Lo != 3 || k.Hi != 3 || k.UpTo != 6 {
		t.Errorf("knee %+v, want 3x, found", k)
	}
	if p, k := peakAndKnee(steps[:3]); p != nil || k != nil {
		t.Errorf("one k: %+v %+v, want none", p, k)
	}
}
