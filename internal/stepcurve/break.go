package stepcurve

import (
	"cmp"
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// Reading is one step's verdict at a level: how far past its limit the
// step was (Margin, on the limit's own scale: 0 at the limit, -1 with no
// change from the reference) and whether it held.
type Reading struct {
	// X is the level asked; Achieved the level measured (X when 0).
	X        float64
	Achieved float64
	Held     bool
	Margin   float64
}

// BreakOptions describe the readings to FindBreak, Bracket and Interval.
type BreakOptions struct {
	// Ref is the reference level, which holds by definition (a
	// headroom's k = 1, a sweep's peak): its margin is -1.
	Ref float64
	// Rounds and RefRounds are the readings each end of the bracket and
	// the reference rest on, for the standard error of the crossing; 0:
	// counted from the readings.
	Rounds, RefRounds int
	// NoiseFloor is the least standard deviation of one reading's
	// margin the interval assumes, however alike the repeats were;
	// DefaultNoiseFloor when 0.
	NoiseFloor float64
	// Z, when above 0, is how many standard errors of its mean margin
	// (and of the reference's, with RefRounds) a level must be beyond 0
	// to count: broken only when every
	// reading broke and the mean margin is above Z standard errors,
	// held only when every reading held and it is below -Z. A level
	// between is within the noise (neither end of the bracket). 0: the
	// readings' own verdicts alone, which a search that repeats the
	// ends of its bracket (headroom's boundary rounds) confirms.
	Z float64
}

// DefaultNoiseFloor is BreakOptions.NoiseFloor's default: 0.15, a p95
// within about 6% at one sigma under a +50% rule.
const DefaultNoiseFloor = 0.15

// maxWiden bounds how far the noise widens the bracket, each way.
const maxWiden = 1.5

// intervalZ is how many standard errors of the crossing the interval
// spans on each side.
const intervalZ = 2

// fitSpan is how far outside the bracket readings are still fitted.
const fitSpan = 1.6

// Break is where a curve's margin crosses 0.
type Break struct {
	// Found: a level broke (in every reading, beyond the noise with
	// BreakOptions.Z); Hi is then known.
	Found bool
	// Lo and Hi bound the break (achieved levels): every reading at
	// AskedLo held, every reading at AskedHi broke, the bracket widened
	// by the noise. Without Found, Lo is the largest level that held.
	Lo, Hi           float64
	AskedLo, AskedHi float64
	// Estimate is where the margins cross 0, inside [Lo, Hi].
	Estimate float64
}

// FindBreak is where readings break, relative to o.Ref.
func FindBreak(readings []Reading, o BreakOptions) Break {
	lo, hi, ok := Bracket(readings, o)
	if !ok {
		a := achieved(readings, lo, o.Ref)
		return Break{Lo: a, AskedLo: lo, Estimate: a}
	}
	b := Interval(readings, lo, hi, o)
	b.Found = true
	return b
}

// level is what the readings at one level agree on.
type level struct {
	x                 float64
	held, broke, runs int
	sum               float64
}

func same(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// levels are the levels read, ascending; the reference always held.
func levels(readings []Reading, ref float64) []level {
	var out []level
	for _, r := range readings {
		i := slices.IndexFunc(out, func(l level) bool { return same(l.x, r.X) })
		if i < 0 {
			out = append(out, level{x: r.X})
			i = len(out) - 1
		}
		out[i].runs++
		out[i].sum += r.Margin
		if r.Held || same(r.X, ref) {
			out[i].held++
		} else {
			out[i].broke++
		}
	}
	slices.SortFunc(out, func(a, b level) int { return cmp.Compare(a.x, b.x) })
	return out
}

// Bracket is the break's bracket: hi the lowest level whose readings all
// broke, lo the highest level below it whose readings all held (o.Ref at
// least). Levels whose readings disagree lie between them. ok is false
// while no level broke in every reading; lo is then the highest level
// held throughout.
func Bracket(readings []Reading, o BreakOptions) (lo, hi float64, ok bool) {
	ls := levels(readings, o.Ref)
	sigma := 0.0
	if o.Z > 0 {
		sigma = max(pooledSD(readings, o.Ref), o.noiseFloor())
	}
	sure := func(l level, broke bool) bool {
		if same(l.x, o.Ref) {
			return !broke
		}
		if broke && l.broke != l.runs || !broke && l.held != l.runs || l.runs == 0 {
			return false
		}
		if o.Z <= 0 {
			return true
		}
		m := l.sum / float64(l.runs)
		// The level's mean and the reference's both carry noise.
		v := 1 / float64(l.runs)
		if o.RefRounds > 0 {
			v += 1 / float64(o.RefRounds)
		}
		lim := o.Z * sigma * math.Sqrt(v)
		if broke {
			return m > lim
		}
		return m < -lim
	}
	lo = o.Ref
	hiAt := slices.IndexFunc(ls, func(l level) bool { return l.x > o.Ref && sure(l, true) })
	end := len(ls)
	if hiAt >= 0 {
		end = hiAt
	}
	for _, l := range ls[:end] {
		if l.x >= o.Ref && sure(l, false) {
			lo = l.x
		}
	}
	if hiAt < 0 {
		return lo, 0, false
	}
	return lo, ls[hiAt].x, true
}

func (o BreakOptions) noiseFloor() float64 {
	if o.NoiseFloor > 0 {
		return o.NoiseFloor
	}
	return DefaultNoiseFloor
}

// Interval is the break between asked levels lo (held) and hi (broke):
// their achieved levels, an estimate where the margins cross 0, and the
// bracket widened by the noise of the measurement.
func Interval(readings []Reading, lo, hi float64, o BreakOptions) Break {
	b := Break{AskedLo: lo, AskedHi: hi, Lo: achieved(readings, lo, o.Ref), Hi: achieved(readings, hi, o.Ref)}
	if b.Hi < b.Lo {
		// Achieved figures can cross when the target saturates: the
		// interval is then of the asked levels' order, with both ends.
		b.Lo, b.Hi = b.Hi, b.Lo
	}
	b.Estimate = math.Sqrt(b.Lo * b.Hi)
	mlo, mhi := margin(readings, lo, o.Ref), margin(readings, hi, o.Ref)
	if mlo < 0 && mhi > 0 && b.Lo > 0 && b.Hi > b.Lo {
		f := -mlo / (mhi - mlo)
		b.Estimate = math.Exp(math.Log(b.Lo) + f*(math.Log(b.Hi)-math.Log(b.Lo)))
	}
	widen(readings, &b, lo, hi, o)
	return b
}

// widen widens the break's interval by the noise of the measurement: the
// margins near the bracket are fitted by a line in ln(level), and the
// interval holds every level at which that line is within intervalZ
// standard errors of 0. The standard error comes from the spread of the
// readings repeated at one level (at least the noise floor), over the
// readings at the bracket's end and at the reference: the reference's own
// error moves every margin alike, which no repetition at the bracket
// shows.
func widen(readings []Reading, b *Break, lo, hi float64, o BreakOptions) {
	var xs, ys []float64
	for _, r := range readings {
		a := r.Achieved
		if a == 0 {
			a = r.X
		}
		if same(r.X, o.Ref) || r.X < lo/fitSpan || r.X > hi*fitSpan || a <= 0 {
			continue
		}
		xs = append(xs, math.Log(a))
		ys = append(ys, r.Margin)
	}
	alpha, beta, ok := fitLine(xs, ys)
	if !ok || beta <= 0 {
		return
	}
	rounds, refRounds := o.Rounds, o.RefRounds
	if rounds <= 0 {
		rounds = max(1, count(readings, hi))
	}
	if refRounds <= 0 {
		refRounds = max(1, count(readings, o.Ref))
	}
	sigma := max(pooledSD(readings, o.Ref), o.noiseFloor())
	se := sigma * math.Sqrt(1/float64(rounds)+1/float64(refRounds))
	x0 := -alpha / beta
	half := intervalZ * se / beta
	// A flat fit (readings that disagree over a short range) would
	// widen without bound: the interval stays within maxWiden of the
	// bracket.
	lo2 := max(o.Ref, math.Exp(x0-half), b.Lo/maxWiden)
	hi2 := min(math.Exp(x0+half), b.Hi*maxWiden)
	b.Lo, b.Hi = min(b.Lo, lo2), max(b.Hi, hi2)
	b.Estimate = min(max(b.Estimate, b.Lo), b.Hi)
}

func count(readings []Reading, x float64) int {
	n := 0
	for _, r := range readings {
		if same(r.X, x) {
			n++
		}
	}
	return n
}

// fitLine is the least-squares line y = alpha + beta x; ok is false
// without two distinct xs.
func fitLine(xs, ys []float64) (alpha, beta float64, ok bool) {
	n := float64(len(xs))
	if len(xs) < 2 {
		return 0, 0, false
	}
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	if sxx < 1e-12 {
		return 0, 0, false
	}
	beta = sxy / sxx
	return my - beta*mx, beta, true
}

// pooledSD is the pooled standard deviation of the margins of readings
// repeated at one level (the reference left out), 0 without repeats.
func pooledSD(readings []Reading, ref float64) float64 {
	byX := map[float64][]float64{}
	for _, r := range readings {
		if !same(r.X, ref) {
			byX[r.X] = append(byX[r.X], r.Margin)
		}
	}
	groups := make([][]float64, 0, len(byX))
	for _, v := range byX {
		groups = append(groups, v)
	}
	sd, _ := stats.PooledSD(groups)
	return sd
}

// Achieved is the median achieved level of the readings at asked level x
// (the reference itself at the reference; x when none was read).
func Achieved(readings []Reading, x, ref float64) float64 { return achieved(readings, x, ref) }

func achieved(readings []Reading, x, ref float64) float64 {
	if same(x, ref) {
		return ref
	}
	var v []float64
	for _, r := range readings {
		if same(r.X, x) {
			a := r.Achieved
			if a == 0 {
				a = r.X
			}
			if a > 0 {
				v = append(v, a)
			}
		}
	}
	if len(v) == 0 {
		return x
	}
	return stats.Median(v)
}

// margin is the mean margin of the readings at x (-1 at the reference).
func margin(readings []Reading, x, ref float64) float64 {
	if same(x, ref) {
		return -1
	}
	var sum float64
	n := 0
	for _, r := range readings {
		if same(r.X, x) {
			sum += r.Margin
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
