// Package stepcurve finds the peak, the knee and the break of a step curve, with intervals from repeated steps.
//
// A step curve is a figure (throughput, a verdict's margin) measured at
// growing load levels (a sweep's client counts, a headroom's load factors
// k), each level measured once or several times (repeated steps). Every
// answer comes with
// an interval from the repeats, and none is called when its interval does
// not allow it: two readings within noise of each other are not told
// apart, as benchstat prints "~".
//
//   - FindPeak: the level with the highest median throughput, and the
//     levels whose throughput cannot be told from it (its interval).
//   - FindKnee: where more load stops paying, the level at which
//     throughput over latency (Kleinrock's power) is highest; called only
//     when a later level's power is lower beyond noise.
//   - FindBreak: where a margin crosses 0 (a sweep's cliff, throughput
//     below a share of the peak; a headroom's SLO, broken above 0): the
//     bracket between the last level that held in every reading and the
//     first that broke in every reading, widened by the noise the repeats
//     measured, with an estimate where the margins cross 0.
//   - Compare: one level's readings of two curves, their ratio with its
//     interval, Same ("~") when the interval holds 1 or the ratio stays
//     under the noise.
//
// The package knows numbers only (no clients, no k, no rendering);
// internal/stats gives the rank intervals and noise floors.
package stepcurve

import (
	"cmp"
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// DefaultNoise is the factor two readings of one level are assumed to
// differ by when a level has too few readings for a rank interval (one or
// two): what single sweep steps of identical configurations were seen to
// differ by (up to 1.10 in A/A sweeps on a shared machine), rounded up.
const DefaultNoise = 1.15

// DefaultMinEffect is the smallest relative difference called one, however
// quiet the readings.
const DefaultMinEffect = 0.10

// Options tune the comparisons of readings.
type Options struct {
	// Alpha is the two-sided level of the rank intervals; 0:
	// stats.DefaultAlpha (a 90% interval).
	Alpha float64
	// Noise is DefaultNoise when 0 (a factor >= 1).
	Noise float64
	// MinEffect is DefaultMinEffect when 0.
	MinEffect float64
	// Floor is a noise floor (a factor >= 1) measured over the whole
	// curve (CurveNoise), which every comparison's floor is at least:
	// one level's few readings may lie close by chance, where the
	// steps' noise is larger.
	Floor float64
}

func (o Options) stats() stats.Options {
	if o.Noise < 1 {
		o.Noise = DefaultNoise
	}
	if o.MinEffect <= 0 {
		o.MinEffect = DefaultMinEffect
	}
	return stats.Options{Alpha: o.Alpha, MinEffect: o.MinEffect, DefaultNoise: o.Noise}
}

// Level is one load level and what its steps measured, one value per
// step (repeat) in each list.
type Level struct {
	X          float64
	Throughput []float64
	// Latency is each step's mean latency, in the order of Throughput;
	// empty when unknown.
	Latency []float64
}

// Diff is one curve's readings at a level against another's.
type Diff struct {
	// Ratio is b's median over a's; Low and High its interval.
	Ratio float64 `json:"ratio"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	// Same: the difference cannot be told from noise ("~"): the
	// interval holds 1, or the ratio stays within the noise floor.
	Same bool `json:"same"`
	// Level is the interval's confidence when a rank interval (three
	// readings a side or more); 0 when it is the ratio widened by the
	// noise assumed (Options.Noise) or measured.
	Level float64 `json:"level,omitempty"`
	// Noise is the factor readings of a differ by (measured with two or
	// more readings, else assumed).
	Noise float64 `json:"noise"`
}

// Compare compares readings b with readings a. Neither is a control: the
// noise floor is the larger of the two sides' spreads (stats.NoiseFloor),
// so that a ratio one noisy side's readings span is not called a
// difference.
func Compare(a, b []float64, o Options) Diff {
	r := stats.Effect(a, b, o.stats())
	d := Diff{Ratio: r.Ratio, Low: r.Low, High: r.High, Level: r.Level, Noise: r.Noise}
	if nb, ok := stats.NoiseFloor(b, 1e-9); ok && nb > d.Noise {
		d.Noise = nb
	}
	d.Noise = max(d.Noise, o.Floor)
	d.Same = r.Change == stats.Same || !r.Beyond || max(d.Ratio, 1/d.Ratio) < d.Noise
	if math.IsInf(d.High, 1) {
		d.High = math.MaxFloat64
	}
	return d
}

// CurveNoise is the noise of one reading over whole curves: the pooled
// standard deviation of ln(throughput) within each level of each curve
// (sigma, 0 without a repeated level), and the noise floor it implies,
// the range three readings span on average (exp(d2(3) sigma), as
// stats.NoiseFloor's floor of three runs).
func CurveNoise(curves ...[]Level) (sigma, floor float64) {
	var groups [][]float64
	for _, ls := range curves {
		for _, l := range ls {
			var xs []float64
			for _, t := range l.Throughput {
				if t > 0 {
					xs = append(xs, math.Log(t))
				}
			}
			groups = append(groups, xs)
		}
	}
	sigma, ok := stats.PooledSD(groups)
	if !ok {
		return 0, 1
	}
	return sigma, math.Exp(stats.D2(3) * sigma)
}

// Peak is the level with the highest median throughput.
type Peak struct {
	X          float64
	Throughput float64
	// Lo and Hi are the smallest and the largest level whose
	// throughput cannot be told from the peak's (Compare Same): the
	// peak is somewhere there. A flat curve's peak spans it all.
	Lo, Hi float64
}

// FindPeak is the peak of levels; nil without any reading. On a tie the
// lower level wins, which reaches the same throughput more cheaply.
func FindPeak(levels []Level, o Options) *Peak {
	ls := sorted(levels)
	var p *Peak
	var at []float64
	for _, l := range ls {
		m := stats.Median(l.Throughput)
		if len(l.Throughput) == 0 || math.IsNaN(m) {
			continue
		}
		if p == nil || m > p.Throughput {
			p = &Peak{X: l.X, Throughput: m}
			at = l.Throughput
		}
	}
	if p == nil {
		return nil
	}
	p.Lo, p.Hi = p.X, p.X
	for _, l := range ls {
		if len(l.Throughput) == 0 || l.X == p.X {
			continue
		}
		if Compare(at, l.Throughput, o).Same {
			p.Lo, p.Hi = min(p.Lo, l.X), max(p.Hi, l.X)
		}
	}
	return p
}

// Knee is where more load stops paying: the level with the highest power
// (throughput over mean latency, each step's own, their median). Before
// it, more load buys more throughput than it costs in latency; after it,
// the load mostly queues. In a closed loop (clients = throughput x
// latency) it is where throughput grows less than the square root of the
// clients' growth.
type Knee struct {
	// Found: a later level's power is lower than the knee's beyond
	// noise, so more load is known to stop paying there. Without it,
	// every level measured may still pay (UpTo).
	Found      bool
	X          float64
	Throughput float64
	Latency    float64
	// Next is the level after the knee; ThroughputGrowth and
	// LatencyGrowth the growth of their medians from the knee to it.
	Next             float64
	ThroughputGrowth float64
	LatencyGrowth    float64
	// Lo and Hi bound the levels whose power cannot be told from the
	// knee's, contiguous with it: the knee is somewhere there.
	Lo, Hi float64
	UpTo   float64
}

// FindKnee is the knee of levels; nil without levels. Levels without a
// latency are passed over.
func FindKnee(levels []Level, o Options) *Knee {
	ls := sorted(levels)
	if len(ls) == 0 {
		return nil
	}
	k := &Knee{UpTo: ls[len(ls)-1].X}
	var timed []Level
	var power [][]float64
	for _, l := range ls {
		p := powers(l)
		if len(p) == 0 {
			continue
		}
		timed = append(timed, l)
		power = append(power, p)
	}
	if len(timed) < 2 {
		return k
	}
	best := 0
	for i := range power {
		if stats.Median(power[i]) > stats.Median(power[best]) {
			best = i
		}
	}
	b := timed[best]
	k.X, k.Throughput, k.Latency = b.X, stats.Median(b.Throughput), stats.Median(b.Latency)
	k.Lo, k.Hi = b.X, b.X
	for i := best - 1; i >= 0 && Compare(power[best], power[i], o).Same; i-- {
		k.Lo = timed[i].X
	}
	for i := best + 1; i < len(timed) && Compare(power[best], power[i], o).Same; i++ {
		k.Hi = timed[i].X
	}
	if best+1 < len(timed) {
		n := timed[best+1]
		k.Next = n.X
		k.ThroughputGrowth = stats.Median(n.Throughput) / k.Throughput
		k.LatencyGrowth = stats.Median(n.Latency) / k.Latency
	}
	for i := best + 1; i < len(timed); i++ {
		if d := Compare(power[best], power[i], o); !d.Same && d.Ratio < 1 {
			k.Found = true
			break
		}
	}
	return k
}

// powers are a level's throughput over latency, step by step; nil when
// the level has no latency.
func powers(l Level) []float64 {
	var out []float64
	for i, t := range l.Throughput {
		if i < len(l.Latency) && l.Latency[i] > 0 && t > 0 {
			out = append(out, t/l.Latency[i])
		}
	}
	return out
}

func sorted(levels []Level) []Level {
	ls := slices.Clone(levels)
	slices.SortStableFunc(ls, func(a, b Level) int { return cmp.Compare(a.X, b.X) })
	return ls
}
