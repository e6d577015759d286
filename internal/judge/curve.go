package judge

import (
	"math"

	"github.com/pgrehearse/pgrehearse/internal/stepcurve"
)

// A step curve (a sweep's configurations, each measured at growing
// client counts, each count repeated) is judged here too, so that a sweep
// claims a peak, a knee, a cliff or a difference between configurations
// by the judge's rules: every claim against the noise of one step over
// the curves compared (stepcurve.CurveNoise), none without repeats.
type (
	// CurveLevel is one load level of a curve and its steps' readings.
	CurveLevel = stepcurve.Level
	// CurveDiff is one level's readings of two curves compared.
	CurveDiff = stepcurve.Diff
	// CurvePeak is the level with the highest median throughput.
	CurvePeak = stepcurve.Peak
	// CurveKnee is where more load stops paying.
	CurveKnee = stepcurve.Knee
	// CurveBreak is where a curve's margin crosses its limit.
	CurveBreak = stepcurve.Break
)

// CurveNoiseUnmeasured says that curves measured repeat steps per level
// are compared without the noise between steps measured: with one step
// each, nothing says how far two steps of one level differ, so no ratio,
// knee or cliff can be told from noise, and none is claimed.
func CurveNoiseUnmeasured(curves, repeat int) bool {
	return curves > 1 && repeat < 2
}

// Curves judges step curves against the noise of one step over all of
// them (stepcurve.CurveNoise): its floor is every comparison's least,
// so that a level whose few steps lay close by chance is not judged by
// that alone.
type Curves struct {
	opts  stepcurve.Options
	sigma float64
}

// NewCurves is the judge of the curves given, their noise pooled.
func NewCurves(curves ...[]CurveLevel) Curves {
	sigma, floor := stepcurve.CurveNoise(curves...)
	return Curves{opts: stepcurve.Options{Floor: floor}, sigma: sigma}
}

// Peak is the peak of levels and the levels within noise of it
// (stepcurve.FindPeak); nil without a reading.
func (c Curves) Peak(levels []CurveLevel) *CurvePeak { return stepcurve.FindPeak(levels, c.opts) }

// Knee is the knee of levels (stepcurve.FindKnee), found only when a
// later level's power is lower beyond noise; nil without levels.
func (c Curves) Knee(levels []CurveLevel) *CurveKnee { return stepcurve.FindKnee(levels, c.opts) }

// Compare compares readings b with readings a (stepcurve.Compare), Same
// ("~") when the difference cannot be told from noise.
func (c Curves) Compare(a, b []float64) CurveDiff { return stepcurve.Compare(a, b, c.opts) }

// CliffZ is how many standard errors of its mean margin a level's
// throughput must be below the cliff's threshold to be called the cliff
// (stepcurve.BreakOptions.Z): one reading just under the threshold is
// not a cliff.
const CliffZ = 2

// CliffNoiseFloor is the least noise of one step's throughput the
// cliff's interval assumes, on the margin's scale (stepcurve.BreakOptions):
// 0.15 of ln(1/0.8) is about 3% of throughput.
const CliffNoiseFloor = 0.15

// CurveRule is the rule a step curve (a sweep's throughput by client
// count) is judged by: its cliff is where throughput falls below
// CliffRatio times the peak's (CurveRule.Cliff).
type CurveRule struct {
	// CliffRatio is the share of the peak's throughput below which a
	// level after the peak has fallen off (0.8); the rule finds no cliff
	// unless it is between 0 and 1.
	CliffRatio float64
}

// Cliff is where throughput falls off after the peak of levels: the
// break of the curve (stepcurve.FindBreak) at which it falls below ratio
// (r.CliffRatio) times the peak's. Each step after the peak is read as
// a margin, 0 at ratio times the peak's throughput, -1 at the peak's, above 0 below the
// ratio; the cliff is the first level whose every step is below the
// ratio and whose mean margin is beyond the noise (CliffZ standard
// errors, the noise from the repeats over the whole curve, at least
// CliffNoiseFloor), and the interval is the bracket between it and the
// last level above the ratio, widened by that noise. peak is nil without
// readings; b.Found is false when no level fell off (or ratio is not
// between 0 and 1).
func (r CurveRule) Cliff(levels []CurveLevel) (peak *CurvePeak, b CurveBreak) {
	ratio := r.CliffRatio
	peak = NewCurves(levels).Peak(levels)
	if peak == nil || !(ratio > 0 && ratio < 1) || peak.Throughput <= 0 {
		return peak, CurveBreak{}
	}
	scale := math.Log(1 / ratio)
	var rs []stepcurve.Reading
	refRounds, refFound := 0, false
	for _, l := range levels {
		if l.X == peak.X && !refFound {
			refRounds, refFound = len(l.Throughput), true
		}
		if l.X < peak.X {
			continue
		}
		for _, tps := range l.Throughput {
			m := 10.0 // no throughput at all: far past the limit
			if tps > 0 {
				m = math.Log(peak.Throughput/tps)/scale - 1
			}
			if l.X == peak.X {
				m = -1
			}
			rs = append(rs, stepcurve.Reading{X: l.X, Margin: m, Held: m <= 0})
		}
	}
	// The noise of a step's margin: at least the floor, and the noise of
	// the steps' throughput over every level, the peak's included.
	sigma, _ := stepcurve.CurveNoise(levels)
	return peak, stepcurve.FindBreak(rs, stepcurve.BreakOptions{Ref: peak.X, RefRounds: refRounds, NoiseFloor: max(CliffNoiseFloor, sigma/scale), Z: CliffZ})
}
