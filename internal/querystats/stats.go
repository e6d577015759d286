package querystats

import (
	"maps"
	"math"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// NoDuration marks an execution whose duration is not known. It equals
// event.NoDuration.
const NoDuration int64 = -1

// NoTime marks an execution whose start time is not known.
const NoTime int64 = math.MinInt64

// Histogram geometry, fixed so that any two histograms merge bucket for
// bucket: 1 µs to 24 hours at 3 significant digits (0.1% error).
const (
	histLowest  = 1
	histHighest = 24 * 3600 * 1_000_000
	histDigits  = 3
)

// Stats are the figures of one fingerprint.
type Stats struct {
	Fingerprint string
	// Query is the text of the earliest execution (ties broken by the
	// smaller text), so that it does not depend on the order of Adds.
	Query string

	Calls      int64
	Errors     int64
	TimedCalls int64 // calls with a known duration
	TotalUS    int64 // sum of known durations
	MinUS      int64 // valid when TimedCalls > 0
	MaxUS      int64

	first, last int64 // NoTime when no call had a time

	// codes counts the errors by SQLSTATE, for callers that know the
	// codes (RecordError); nil until the first. Errors counts every
	// failed call, known code or not.
	codes map[string]int64
	// onlyTarget counts, of a replay's errors, those of calls that
	// succeeded in the original, by cause (RecordOnlyOnTarget); nil
	// until the first.
	onlyTarget map[string]int64
	// RowsCalls counts the calls whose row count is known (a replay
	// reads it from the server's CommandComplete); Rows is their sum.
	RowsCalls int64
	Rows      int64
	// Answered counts the calls compared with the answer the original
	// server gave (a capture records it); answerDiffs how many of them
	// differed, by AnswerDiff.
	Answered    int64
	answerDiffs [answerDiffs]int64
	// answerExplained counts the differing answers whose cause the
	// statement's text tells, answerCause the first (ExplainAnswer).
	answerExplained int64
	answerCause     string

	// hist is sparse: most fingerprints see few distinct durations, and a
	// dense HDR histogram of this range would take ~200 KB each. Nil
	// until the first timed call.
	hist *hdrhistogram.PackedHistogram
	// owner is the Set s is in, which decides whether s gets dense
	// counts; nil for a Stats that is in none.
	owner *Set
	// hot counts durations by histogram bucket while they are not yet
	// in hist (hotN of them), for a fingerprint called often; see hot.go.
	hot  []uint16
	hotN int64
}

func newStats(fp, query string) *Stats {
	return &Stats{Fingerprint: fp, Query: query, first: NoTime, last: NoTime}
}

// FirstSeen returns the earliest start time of a call, in µs since the
// epoch, and whether any call had one.
func (s *Stats) FirstSeen() (int64, bool) { return s.first, s.first != NoTime }

// LastSeen returns the latest start time of a call.
func (s *Stats) LastSeen() (int64, bool) { return s.last, s.last != NoTime }

// Record records one call of the Stats' fingerprint, as Set.AddAt does;
// s must come from Set.Slot.
func (s *Stats) Record(query string, at, durationUS int64, failed bool) {
	s.add(query, at, durationUS, failed)
}

func (s *Stats) add(query string, at, durationUS int64, failed bool) {
	s.Calls++
	if failed {
		s.Errors++
	}
	if at != NoTime {
		if s.first == NoTime || at < s.first || (at == s.first && query < s.Query) {
			s.first = at
			s.Query = query
		}
		if s.last == NoTime || at > s.last {
			s.last = at
		}
	} else if s.first == NoTime && query < s.Query {
		s.Query = query
	}
	if durationUS == NoDuration {
		return
	}
	d := max(durationUS, 0)
	if s.TimedCalls == 0 || d < s.MinUS {
		s.MinUS = d
	}
	if s.TimedCalls == 0 || d > s.MaxUS {
		s.MaxUS = d
	}
	s.TimedCalls++
	s.TotalUS += d
	if s.hot != nil && s.recordHot(d) {
		return
	}
	if s.hist == nil {
		s.hist = newHist()
	}
	// A statement longer than a day is recorded as a day: its exact
	// figure still counts in the total, min and max.
	_ = s.hist.RecordValue(min(d, histHighest))
	if s.hot == nil && s.TimedCalls >= hotAfter && s.owner != nil {
		s.owner.makeHot(s)
	}
}

// RecordError adds a SQLSTATE to the codes of s's errors. It does not
// count a call or an error: Record does, with failed set.
func (s *Stats) RecordError(sqlstate string) {
	if s.codes == nil {
		s.codes = make(map[string]int64, 1)
	}
	s.codes[sqlstate]++
}

// RecordOnlyOnTarget counts a replayed call that failed on the target
// and not in the original, by the SQLSTATE that caused it (for a 25P02,
// the error that aborted its transaction block: see
// results.Outcomes.OnlyOnTargetBySQLState). It counts no call or error.
func (s *Stats) RecordOnlyOnTarget(cause string) {
	if s.onlyTarget == nil {
		s.onlyTarget = make(map[string]int64, 1)
	}
	s.onlyTarget[cause]++
}

// RecordRows adds the row count of one call (rows inserted, updated,
// deleted or returned, as the server's command tag says).
func (s *Stats) RecordRows(n int64) {
	s.RowsCalls++
	s.Rows += n
}

// ErrorsBySQLState returns the errors recorded with RecordError by code;
// nil when none. The map must not be modified.
func (s *Stats) ErrorsBySQLState() map[string]int64 { return s.codes }

func newHist() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(histLowest, histHighest, histDigits)
}

func (s *Stats) merge(o *Stats) {
	s.fold()
	o.fold()
	s.Calls += o.Calls
	s.Errors += o.Errors
	s.RowsCalls += o.RowsCalls
	s.Rows += o.Rows
	s.Answered += o.Answered
	for i, n := range o.answerDiffs {
		s.answerDiffs[i] += n
	}
	s.answerExplained += o.answerExplained
	if s.answerCause == "" {
		s.answerCause = o.answerCause
	}
	for k, v := range o.codes {
		if s.codes == nil {
			s.codes = make(map[string]int64, len(o.codes))
		}
		s.codes[k] += v
	}
	for k, v := range o.onlyTarget {
		if s.onlyTarget == nil {
			s.onlyTarget = make(map[string]int64, len(o.onlyTarget))
		}
		s.onlyTarget[k] += v
	}
	if o.first != NoTime {
		if s.first == NoTime || o.first < s.first || (o.first == s.first && o.Query < s.Query) {
			s.first = o.first
			s.Query = o.Query
		}
	} else if s.first == NoTime && o.Query < s.Query {
		s.Query = o.Query
	}
	if o.last != NoTime && (s.last == NoTime || o.last > s.last) {
		s.last = o.last
	}
	if o.TimedCalls == 0 {
		return
	}
	if s.TimedCalls == 0 || o.MinUS < s.MinUS {
		s.MinUS = o.MinUS
	}
	if s.TimedCalls == 0 || o.MaxUS > s.MaxUS {
		s.MaxUS = o.MaxUS
	}
	s.TimedCalls += o.TimedCalls
	s.TotalUS += o.TotalUS
	if s.hist == nil {
		s.hist = newHist()
	}
	s.hist.Merge(o.hist)
}

// clone returns a copy of s in no Set.
func (s *Stats) clone() *Stats {
	s.fold()
	c := *s
	c.owner, c.hot = nil, nil
	if s.codes != nil {
		c.codes = maps.Clone(s.codes)
	}
	if s.onlyTarget != nil {
		c.onlyTarget = maps.Clone(s.onlyTarget)
	}
	if s.hist != nil {
		c.hist = s.hist.Clone()
	}
	return &c
}

// MeanUS is the mean duration of the timed calls, 0 without any.
func (s *Stats) MeanUS() float64 {
	if s.TimedCalls == 0 {
		return 0
	}
	return float64(s.TotalUS) / float64(s.TimedCalls)
}

// PercentileUS returns the duration at percentile p (0..100) of the timed
// calls, within the histogram's 0.1%, and never beyond the exact min and
// max; 0 without timed calls.
func (s *Stats) PercentileUS(p float64) int64 {
	if s.hist == nil || s.TimedCalls == 0 {
		return 0
	}
	s.fold()
	// The histogram answers with the highest value of a bucket, which can
	// lie above every value recorded in it.
	return min(max(s.hist.ValueAtPercentile(p), s.MinUS), s.MaxUS)
}

// SplitDuration returns the share of statement i (0-based) of k in a
// duration logged once for a string of k statements: the server logs one
// duration for a simple-protocol string, so it is divided equally, the
// remainder going one µs each to the first statements so that the shares
// add up to the logged duration exactly.
func SplitDuration(durationUS int64, k, i int) int64 {
	if durationUS == NoDuration || k <= 1 {
		return durationUS
	}
	share := durationUS / int64(k)
	if int64(i) < durationUS%int64(k) {
		share++
	}
	return share
}
