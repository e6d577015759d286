package compare

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// MinMeasuredShare is the least share of the baseline's statements, over
// the time range the candidate covers, that the candidate must have
// measured to be judged: a replay that lost most of its sessions, or the
// analysis of a log that yielded little, would otherwise pass on the few
// statements it kept.
const MinMeasuredShare = 0.9

// ErrIncomplete is wrapped by the error Compare returns for results that
// cannot be judged: interrupted, incomplete (statements lost), empty, or a
// candidate that measured much less than the baseline.
var ErrIncomplete = errors.New("the results cannot be judged")

// IncompleteError lists why the results cannot be judged.
type IncompleteError struct {
	Reasons []string
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("%v: %s", ErrIncomplete, strings.Join(e.Reasons, "; "))
}

func (e *IncompleteError) Unwrap() error { return ErrIncomplete }

// unjudgeable says why a comparison of base and cand would not be a verdict
// on the candidate; nil when it would.
func unjudgeable(base, cand *Run) []string {
	var why []string
	for _, r := range []*Run{base, cand} {
		if r.Partial {
			why = append(why, r.Name()+" stopped early (partial result)")
		}
		for _, reason := range r.Incomplete {
			why = append(why, r.Name()+" is incomplete: "+reason)
		}
		for _, reason := range r.Degraded {
			why = append(why, r.Name()+" is degraded: "+reason)
		}
		if measured(r) == 0 {
			why = append(why, r.Name()+" holds no statement")
		}
	}
	if len(why) > 0 {
		return why
	}
	expected := baselineOver(base, cand)
	if got := measured(cand); expected > 0 && float64(got) < MinMeasuredShare*float64(expected) {
		why = append(why, fmt.Sprintf("%s measured %d statements, %.0f%% of the %d of %s over the same time range (at least %.0f%% needed)",
			cand.Name(), got, 100*float64(got)/float64(expected), expected, base.Name(), 100*MinMeasuredShare))
	}
	return why
}

// measured is the statements a run measured: read, less those a replay
// lost to faults.
func measured(r *Run) int64 {
	n := r.Statements.Total
	if r.Replay != nil {
		n -= r.Lost
	}
	return n
}

// baselineOver is the baseline's statements over the log time range the
// candidate covers, from the baseline's timeline: a replay of part of a
// log (--start, --end) holds only that part. Without a timeline, or when
// the ranges do not overlap (the candidate is the analysis of a later
// log), it is all of the baseline's statements.
func baselineOver(base, cand *Run) int64 {
	tl := base.Timeline
	if tl == nil || cand.FirstTime == 0 || cand.LastTime < cand.FirstTime {
		return base.Statements.Total
	}
	start, err := parseTime(tl.Start)
	if err != nil {
		return base.Statements.Total
	}
	// A bucket counts in proportion to the part of it in the range, so
	// that the edges of a short range do not count whole buckets.
	width := tl.BucketMS * 1000
	lo, hi := cand.FirstTime.Micros(), cand.LastTime.Micros()+1
	var n float64
	overlap := false
	for i, c := range tl.Calls {
		from := start + int64(i)*width
		in := min(from+width, hi) - max(from, lo)
		if in <= 0 {
			continue
		}
		overlap = true
		n += float64(c) * float64(in) / float64(width)
	}
	if !overlap {
		return base.Statements.Total
	}
	return int64(n)
}

func parseTime(s string) (int64, error) {
	var t results.Time
	err := t.UnmarshalText([]byte(s))
	return t.Micros(), err
}
