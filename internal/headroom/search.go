package headroom

import (
	"math"
	"slices"
)

// Search defaults.
const (
	DefaultMaxK = 16
	// DefaultResolution: bisection stops once the upper end of the
	// bracket is within 15% of the lower.
	DefaultResolution = 1.15
	// DefaultBaseRounds are the rounds at k = 1, whose median every
	// step is judged against and whose spread is the noise a step must
	// exceed: three, as a rehearsal's rounds, the fewest whose range
	// says much.
	DefaultBaseRounds = 3
	// DefaultBoundaryRounds are the rounds each end of the final
	// bracket needs, all agreeing.
	DefaultBoundaryRounds = 2
	// DefaultMaxSteps bounds a side's steps, so that a noisy target
	// ends the search.
	DefaultMaxSteps = 30
)

// Trial is one step as the search sees it.
type Trial struct {
	// K is the load factor asked, Achieved the one measured.
	K        float64 `json:"k"`
	Achieved float64 `json:"achieved_k"`
	Held     bool    `json:"held"`
	// Margin is the verdict's (above 0: broken), for the estimate.
	Margin float64 `json:"margin"`
	// Bound is what limited the step: anything but the target ends the
	// search, since asking more cannot load the target more.
	Bound Bound `json:"bound"`
}

// Search is one side's search for its largest k. Next says which k to
// measure, Record takes what it gave; it is not safe for concurrent use.
type Search struct {
	MaxK           float64 `json:"max_k"`
	Resolution     float64 `json:"resolution"`
	BaseRounds     int     `json:"base_rounds"`
	BoundaryRounds int     `json:"boundary_rounds"`
	MaxSteps       int     `json:"max_steps"`
	// Integer: only whole load factors (a fold overlays whole slices):
	// the ladder skips 1.5 and bisection stops at neighbours.
	Integer bool `json:"integer,omitempty"`

	trials []Trial
	ladder []float64
}

// NewSearch is a search with the defaults for the zero fields of s.
func NewSearch(s Search) *Search {
	if s.MaxK <= 1 {
		s.MaxK = DefaultMaxK
	}
	if s.Resolution <= 1 {
		s.Resolution = DefaultResolution
	}
	if s.BaseRounds <= 0 {
		s.BaseRounds = DefaultBaseRounds
	}
	if s.BoundaryRounds <= 0 {
		s.BoundaryRounds = DefaultBoundaryRounds
	}
	if s.MaxSteps <= 0 {
		s.MaxSteps = DefaultMaxSteps
	}
	if s.Integer {
		s.MaxK = math.Floor(s.MaxK)
	}
	s.ladder = Ladder(s.MaxK)
	if s.Integer {
		s.ladder = slices.DeleteFunc(s.ladder, func(k float64) bool { return k != math.Trunc(k) })
	}
	return &s
}

// Record adds a step's outcome.
func (s *Search) Record(t Trial) { s.trials = append(s.trials, t) }

// Trials are the steps recorded, in order.
func (s *Search) Trials() []Trial { return s.trials }

// Next is the k to measure next; done when the search is over.
func (s *Search) Next() (k float64, done bool) {
	if s.rounds(1) < s.BaseRounds {
		return 1, false
	}
	if len(s.trials) >= s.MaxSteps || s.bounded() {
		return 0, true
	}
	lo, hi, ok := s.bracket()
	if !ok {
		// Nothing broke yet: up the ladder, above every k tried.
		top := s.maxTried()
		for _, l := range s.ladder {
			if l > top+1e-9 {
				return l, false
			}
		}
		// At MaxK: confirm it held.
		if lo > 1 && s.rounds(lo) < s.BoundaryRounds {
			return lo, false
		}
		return 0, true
	}
	if hi/lo > s.Resolution && !s.triedBetween(lo, hi) {
		mid := roundK(math.Sqrt(lo * hi))
		if s.Integer {
			mid = math.Round(mid)
		}
		if mid > lo && mid < hi {
			return mid, false
		}
	}
	if lo > 1 && s.rounds(lo) < s.BoundaryRounds {
		return lo, false
	}
	if s.rounds(hi) < s.BoundaryRounds {
		return hi, false
	}
	return 0, true
}

// bounded reports whether a step was bound by other than the target.
func (s *Search) bounded() bool {
	return slices.ContainsFunc(s.trials, func(t Trial) bool { return t.Bound != "" && t.Bound != BoundTarget })
}

func (s *Search) rounds(k float64) int {
	n := 0
	for _, t := range s.trials {
		if same(t.K, k) {
			n++
		}
	}
	return n
}

func same(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func (s *Search) maxTried() float64 {
	top := 1.0
	for _, t := range s.trials {
		top = max(top, t.K)
	}
	return top
}

// state is what the rounds at one k agree on.
type state struct {
	k                 float64
	held, broke, runs int
}

// states are the ks tried, ascending, k = 1 always held (the reference).
func (s *Search) states() []state {
	var out []state
	for _, t := range s.trials {
		i := slices.IndexFunc(out, func(st state) bool { return same(st.k, t.K) })
		if i < 0 {
			out = append(out, state{k: t.K})
			i = len(out) - 1
		}
		out[i].runs++
		if t.Held || same(t.K, 1) {
			out[i].held++
		} else {
			out[i].broke++
		}
	}
	slices.SortFunc(out, func(a, b state) int {
		switch {
		case a.k < b.k:
			return -1
		case a.k > b.k:
			return 1
		}
		return 0
	})
	return out
}

// bracket is the search's interval: hi the smallest k whose rounds all
// broke, lo the largest k below it whose rounds all held. Rounds that
// disagree lie between them. ok is false while nothing broke in every
// round; lo is then the largest k held in every round with no broken k
// below... the largest k held throughout.
func (s *Search) bracket() (lo, hi float64, ok bool) {
	sts := s.states()
	lo = 1
	hiAt := -1
	for i, st := range sts {
		if st.broke == st.runs && st.runs > 0 {
			hiAt = i
			break
		}
	}
	end := len(sts)
	if hiAt >= 0 {
		end = hiAt
	}
	for _, st := range sts[:end] {
		if st.held == st.runs {
			lo = st.k
		}
	}
	if hiAt < 0 {
		return lo, 0, false
	}
	return lo, sts[hiAt].k, true
}

// allBroke reports whether every round at k broke.
func (s *Search) allBroke(k float64) bool {
	n := 0
	for _, t := range s.trials {
		if same(t.K, k) {
			if t.Held {
				return false
			}
			n++
		}
	}
	return n > 0
}

func (s *Search) triedBetween(lo, hi float64) bool {
	for _, t := range s.trials {
		if t.K > lo+1e-9 && t.K < hi-1e-9 {
			return true
		}
	}
	return false
}

// Answer is a side's headroom: the interval of load factors (achieved)
// within which the target stops holding its SLO, and an estimate in it.
type Answer struct {
	// Holds is the estimate; Lo and Hi the interval: every round at Lo
	// held, every round at Hi broke (achieved k, the median of their
	// rounds).
	Holds float64 `json:"holds"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi,omitempty"`
	// AskedLo and AskedHi are the ks asked at the two ends.
	AskedLo float64 `json:"asked_lo"`
	AskedHi float64 `json:"asked_hi,omitempty"`
	// AtLeast: nothing broke (up to MaxK, or until Bound stopped the
	// search): the target holds Lo or more, and Hi is unknown.
	AtLeast bool `json:"at_least,omitempty"`
	// Mixed: no k broke in every round; above Lo, some rounds broke and
	// others held up to Hi, the largest k tried: the noise of the steps
	// is as large as the SLO's margin there.
	Mixed bool `json:"mixed,omitempty"`
	// Bound is what ended the search when not the target.
	Bound Bound `json:"bound,omitempty"`
	// Steps is the number of steps the answer rests on.
	Steps int `json:"steps"`
}

// Answer is the search's answer so far.
func (s *Search) Answer() Answer {
	lo, hi, ok := s.bracket()
	a := Answer{AskedLo: lo, Lo: s.achieved(lo), Steps: len(s.trials)}
	for _, t := range s.trials {
		if t.Bound != "" && t.Bound != BoundTarget {
			a.Bound = t.Bound
			// The step that ran into the bound held as far as it
			// went (its achieved k), and says no more.
			if t.Held && t.Achieved > a.Lo && (!ok || t.K < hi) {
				a.Lo, a.AskedLo = t.Achieved, t.K
			}
		}
	}
	if !ok {
		// No k broke in every round. Above lo, rounds that broke make
		// the interval reach up to the largest k tried; none, and the
		// target held all it was asked.
		top := s.maxTried()
		if a.Bound != "" || !slices.ContainsFunc(s.trials, func(t Trial) bool { return t.K > lo+1e-9 && !t.Held }) {
			a.AtLeast = true
			a.Holds = a.Lo
			return a
		}
		a.Mixed = true
		hi = top
	}
	a.AskedHi, a.Hi = hi, s.achieved(hi)
	if a.Hi < a.Lo {
		// Achieved figures can cross when the target saturates: the
		// interval is then of asked ks' order, with both ends.
		a.Lo, a.Hi = a.Hi, a.Lo
	}
	a.Holds = math.Sqrt(a.Lo * a.Hi)
	mlo, mhi := s.margin(lo), s.margin(hi)
	if mlo < 0 && mhi > 0 && a.Lo > 0 && a.Hi > a.Lo {
		f := -mlo / (mhi - mlo)
		a.Holds = math.Exp(math.Log(a.Lo) + f*(math.Log(a.Hi)-math.Log(a.Lo)))
	}
	s.widen(&a, lo, hi)
	return a
}

// NoiseFloor is the least noise of one step's margin the interval
// assumes (0.15: a p95 within about 6% at one sigma under a +50% rule),
// however alike the repeated rounds were.
const NoiseFloor = 0.15

// maxWiden bounds how far the noise widens the bracket, each way.
const maxWiden = 1.5

// intervalZ is how many standard errors of the crossing the interval
// spans on each side.
const intervalZ = 2

// widen widens the answer's interval by the noise of the measurement:
// the steps' margins near the bracket are fitted by a line in ln k, and
// the interval holds every k at which that line is within intervalZ
// standard errors of 0. The standard error comes from the spread of the
// rounds repeated at one k (at least NoiseFloor), over the rounds at the
// boundary and at k = 1: the baseline's own error moves every step's
// margin alike, which no repetition at the boundary shows.
func (s *Search) widen(a *Answer, lo, hi float64) {
	var xs, ys []float64
	for _, t := range s.trials {
		if same(t.K, 1) || t.K < lo/1.6 || t.K > hi*1.6 || t.Achieved <= 0 {
			continue
		}
		xs = append(xs, math.Log(t.Achieved))
		ys = append(ys, t.Margin)
	}
	alpha, beta, ok := fitLine(xs, ys)
	if !ok || beta <= 0 {
		return
	}
	sigma := max(s.pooledSD(), NoiseFloor)
	se := sigma * math.Sqrt(1/float64(s.BoundaryRounds)+1/float64(s.BaseRounds))
	x0 := -alpha / beta
	half := intervalZ * se / beta
	// A flat fit (rounds that disagree over a short range) would widen
	// without bound: the interval stays within a step of the ladder
	// (1.5x) of the bracket.
	lo2 := max(1, math.Exp(x0-half), a.Lo/maxWiden)
	hi2 := min(math.Exp(x0+half), a.Hi*maxWiden)
	a.Lo, a.Hi = min(a.Lo, lo2), max(a.Hi, hi2)
	a.Holds = min(max(a.Holds, a.Lo), a.Hi)
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

// pooledSD is the pooled standard deviation of the margins of rounds
// repeated at one k (k = 1 left out), 0 without repeats.
func (s *Search) pooledSD() float64 {
	byK := map[float64][]float64{}
	for _, t := range s.trials {
		if !same(t.K, 1) {
			byK[t.K] = append(byK[t.K], t.Margin)
		}
	}
	var ss float64
	df := 0
	for _, v := range byK {
		if len(v) < 2 {
			continue
		}
		var m float64
		for _, x := range v {
			m += x
		}
		m /= float64(len(v))
		for _, x := range v {
			ss += (x - m) * (x - m)
		}
		df += len(v) - 1
	}
	if df == 0 {
		return 0
	}
	return math.Sqrt(ss / float64(df))
}

// achieved is the median achieved k of the rounds at asked k (1 at 1).
func (s *Search) achieved(k float64) float64 {
	if same(k, 1) {
		return 1
	}
	var v []float64
	for _, t := range s.trials {
		if same(t.K, k) && t.Achieved > 0 {
			v = append(v, t.Achieved)
		}
	}
	if len(v) == 0 {
		return k
	}
	return median(v)
}

// margin is the mean margin of the rounds at k (-1 at k = 1).
func (s *Search) margin(k float64) float64 {
	if same(k, 1) {
		return -1
	}
	var sum float64
	n := 0
	for _, t := range s.trials {
		if same(t.K, k) {
			sum += t.Margin
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}
