package headroom

import (
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/stepcurve"
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
	Bound judge.Bound `json:"bound"`
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
	return slices.ContainsFunc(s.trials, func(t Trial) bool { return t.Bound != "" && t.Bound != judge.BoundTarget })
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

// readings are the trials as the step-curve finder reads them.
func (s *Search) readings() []stepcurve.Reading {
	out := make([]stepcurve.Reading, len(s.trials))
	for i, t := range s.trials {
		a := t.Achieved
		if a <= 0 {
			a = t.K
		}
		out[i] = stepcurve.Reading{X: t.K, Achieved: a, Held: t.Held, Margin: t.Margin}
	}
	return out
}

// breakOptions are the search's, as the step-curve finder takes them.
func (s *Search) breakOptions() stepcurve.BreakOptions {
	return stepcurve.BreakOptions{Ref: 1, Rounds: s.BoundaryRounds, RefRounds: s.BaseRounds, NoiseFloor: NoiseFloor}
}

// bracket is the search's interval (stepcurve.Bracket): hi the smallest
// k whose rounds all broke, lo the largest k below it whose rounds all
// held. Rounds that disagree lie between them. ok is false while nothing
// broke in every round; lo is then the largest k held throughout.
func (s *Search) bracket() (lo, hi float64, ok bool) {
	return stepcurve.Bracket(s.readings(), s.breakOptions())
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
	Bound judge.Bound `json:"bound,omitempty"`
	// Steps is the number of steps the answer rests on.
	Steps int `json:"steps"`
}

// UpperK is the k asked at the answer's upper end: the first that broke
// in every round, else (nothing broke) the largest that held.
func (a Answer) UpperK() float64 {
	if a.AtLeast || a.AskedHi == 0 {
		return a.AskedLo
	}
	return a.AskedHi
}

// Answer is the search's answer so far.
func (s *Search) Answer() Answer {
	lo, hi, ok := s.bracket()
	a := Answer{AskedLo: lo, Lo: s.achieved(lo), Steps: len(s.trials)}
	for _, t := range s.trials {
		if t.Bound != "" && t.Bound != judge.BoundTarget {
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
	b := stepcurve.Interval(s.readings(), lo, hi, s.breakOptions())
	a.AskedHi, a.Hi, a.Holds = hi, b.Hi, b.Estimate
	a.Lo = min(a.Lo, b.Lo)
	a.Holds = min(max(a.Holds, a.Lo), a.Hi)
	return a
}

// NoiseFloor is the least noise of one step's margin the interval
// assumes (0.15: a p95 within about 6% at one sigma under a +50% rule),
// however alike the repeated rounds were.
const NoiseFloor = 0.15

// achieved is the median achieved k of the rounds at asked k (1 at 1).
func (s *Search) achieved(k float64) float64 {
	return stepcurve.Achieved(s.readings(), k, 1)
}
