package compare

import (
	"errors"
	"fmt"
	"math"
	"reflect"
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
// cannot be judged: interrupted, incomplete (statements lost), empty, a
// candidate that measured much less than the baseline, the same result
// given twice, or a result whose figures are invalid.
var ErrIncomplete = errors.New("the results cannot be judged")

// UnjudgeableKind is why a result cannot be judged.
type UnjudgeableKind string

// Kinds of reasons.
const (
	// UnjudgeableNoRuns: a side has no result at all.
	UnjudgeableNoRuns UnjudgeableKind = "no_runs"
	// UnjudgeablePartial: Run stopped early.
	UnjudgeablePartial UnjudgeableKind = "partial"
	// UnjudgeableIncomplete: Run did not do all it claims; Detail is
	// the result's own reason.
	UnjudgeableIncomplete UnjudgeableKind = "incomplete"
	// UnjudgeableDegraded: Run, a replay, recovered from a fault in a
	// way that changed its timings; Detail is the result's own reason.
	UnjudgeableDegraded UnjudgeableKind = "degraded"
	// UnjudgeableEmpty: Run holds no statement, or (Detail) no timed
	// one.
	UnjudgeableEmpty UnjudgeableKind = "empty"
	// UnjudgeableSmaller: the candidate Run measured Measured
	// statements against the Expected of Other over the same range.
	UnjudgeableSmaller UnjudgeableKind = "smaller"
	// UnjudgeableIdentical: Run and Other hold the same figures: the
	// same result given twice, or two analyses of one log.
	UnjudgeableIdentical UnjudgeableKind = "identical"
	// UnjudgeableInvalid: a figure of Run is impossible; Field names
	// it, Detail says why.
	UnjudgeableInvalid UnjudgeableKind = "invalid"
	// UnjudgeableMixedLoad: Run and Other replayed the workload at
	// different load levels (Detail: both, as "2x by speed and 1x"):
	// their differences are the load's.
	UnjudgeableMixedLoad UnjudgeableKind = "mixed_load"
	// UnjudgeableThrottled: the candidate's runs (Run) were throttled by
	// the replay itself, a caller's finding (a rehearsal's: its sessions
	// waited for each other's commits, or its rounds stretched, beyond
	// the control's; Detail the measure): the candidate got less load
	// than the application would have given it, so its latencies are
	// lower bounds. A broken rule stands (the slowdown is at least
	// that); nothing passes, and an improvement is no evidence.
	UnjudgeableThrottled UnjudgeableKind = "throttled"
)

// Unjudgeable is one reason a comparison is not a verdict on the
// candidate, as data; internal/report words it.
type Unjudgeable struct {
	Kind  UnjudgeableKind `json:"kind"`
	Run   string          `json:"run,omitempty"`
	Other string          `json:"other,omitempty"`
	// Detail is the result's own reason (UnjudgeableIncomplete) or what
	// is wrong with Field (UnjudgeableInvalid).
	Detail string `json:"detail,omitempty"`
	Field  string `json:"field,omitempty"`
	// Measured and Expected: UnjudgeableSmaller.
	Measured int64 `json:"measured,omitempty"`
	Expected int64 `json:"expected,omitempty"`
}

// IncompleteError lists why the results cannot be judged.
type IncompleteError struct {
	Reasons []Unjudgeable
}

func (e *IncompleteError) Error() string {
	parts := make([]string, len(e.Reasons))
	for i, r := range e.Reasons {
		parts[i] = fmt.Sprintf("%s %s", r.Run, r.Kind)
		if r.Field != "" {
			parts[i] += " " + r.Field
		}
		if r.Detail != "" {
			parts[i] += ": " + r.Detail
		}
	}
	return fmt.Sprintf("%v: %s", ErrIncomplete, strings.Join(parts, "; "))
}

func (e *IncompleteError) Unwrap() error { return ErrIncomplete }

// unjudgeable says why a comparison of the baseline's runs with the
// candidate's would not be a verdict on the candidate; nil when it would.
func unjudgeable(base, cand []*Run, hc histCache) []Unjudgeable {
	var why []Unjudgeable
	all := append(append([]*Run{}, base...), cand...)
	for _, r := range all {
		if r.Partial {
			why = append(why, Unjudgeable{Kind: UnjudgeablePartial, Run: r.Name()})
		}
		for _, reason := range r.Incomplete {
			why = append(why, Unjudgeable{Kind: UnjudgeableIncomplete, Run: r.Name(), Detail: reason})
		}
		for _, reason := range r.Degraded {
			why = append(why, Unjudgeable{Kind: UnjudgeableDegraded, Run: r.Name(), Detail: reason})
		}
		why = append(why, empty(r)...)
		why = append(why, invalid(r, hc)...)
	}
	for i, a := range all {
		for _, b := range all[i+1:] {
			if identical(a, b) {
				why = append(why, Unjudgeable{Kind: UnjudgeableIdentical, Run: a.Name(), Other: b.Name()})
			}
		}
	}
	for _, r := range all[1:] {
		if a, b := all[0].Part.LoadLevel(), r.Part.LoadLevel(); !a.Same(b) {
			why = append(why, Unjudgeable{Kind: UnjudgeableMixedLoad, Run: all[0].Name(), Other: r.Name(), Detail: a.String() + " and " + b.String()})
			break
		}
	}
	if len(why) > 0 {
		return why
	}
	for _, c := range cand {
		expected := baselineOver(base[0], c)
		if got := measured(c); expected > 0 && float64(got) < MinMeasuredShare*float64(expected) {
			why = append(why, Unjudgeable{Kind: UnjudgeableSmaller, Run: c.Name(), Other: base[0].Name(), Measured: got, Expected: expected})
		}
	}
	return why
}

// Validate refuses results whose figures cannot be true or that hold no
// timed statement, as Runs does before comparing: a summary of one result
// must not show what cannot be. It returns an *IncompleteError naming
// each field, or nil.
func Validate(runs ...*Run) error {
	var why []Unjudgeable
	for _, r := range runs {
		why = append(why, empty(r)...)
		why = append(why, invalid(r, nil)...)
	}
	if len(why) > 0 {
		return &IncompleteError{Reasons: why}
	}
	return nil
}

// noTimed is the Detail of an UnjudgeableEmpty result that holds
// statements, none of them timed.
const noTimed = "no timed statement"

// empty says when r holds nothing to judge: no statement, or none timed.
func empty(r *Run) []Unjudgeable {
	switch {
	case measured(r) <= 0:
		return []Unjudgeable{{Kind: UnjudgeableEmpty, Run: r.Name()}}
	case timedCalls(r) == 0:
		return []Unjudgeable{{Kind: UnjudgeableEmpty, Run: r.Name(), Detail: noTimed}}
	}
	return nil
}

// identical reports whether two results hold the same figures, whatever
// their names: a result given twice, or two analyses of one log. Two
// replays never are: their timings differ.
func identical(a, b *Run) bool {
	if a == b {
		return true
	}
	x, y := *a, *b
	x.Source, y.Source = "", ""
	return reflect.DeepEqual(x, y)
}

func timedCalls(r *Run) int64 {
	var n int64
	for _, q := range r.Queries {
		n += q.TimedCalls
	}
	return n
}

// invalid lists the figures of r that cannot be true: negative or
// non-finite counts and durations, errors or timed calls beyond calls,
// quantiles out of order, a histogram that does not decode or whose count
// differs from the timed calls. Each names its field.
func invalid(r *Run, hc histCache) []Unjudgeable {
	var out []Unjudgeable
	bad := func(field, format string, args ...any) {
		if len(out) < 10 {
			out = append(out, Unjudgeable{Kind: UnjudgeableInvalid, Run: r.Name(), Field: field, Detail: fmt.Sprintf(format, args...)})
		}
	}
	st := r.Statements
	for _, f := range []struct {
		name string
		v    int64
	}{{"statements.total", st.Total}, {"statements.executed", st.Executed}, {"statements.failed", st.Failed}} {
		if f.v < 0 {
			bad(f.name, "is negative (%d)", f.v)
		}
	}
	for code, n := range r.ErrorsBySQLState {
		if n < 0 {
			bad("errors_by_sqlstate."+code, "is negative (%d)", n)
		}
	}
	for i := range r.Queries {
		q := &r.Queries[i]
		at := func(name string) string {
			return fmt.Sprintf("queries[%d].%s (fingerprint %s)", i, name, q.Fingerprint)
		}
		for _, f := range []struct {
			name string
			v    int64
		}{{"calls", q.Calls}, {"errors", q.Errors}, {"timed_calls", q.TimedCalls}} {
			if f.v < 0 {
				bad(at(f.name), "is negative (%d)", f.v)
			}
		}
		if q.Errors > q.Calls {
			bad(at("errors"), "%d errors exceed its %d calls", q.Errors, q.Calls)
		}
		if q.TimedCalls > q.Calls {
			bad(at("timed_calls"), "%d timed calls exceed its %d calls", q.TimedCalls, q.Calls)
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"total_ms", q.TotalMS}, {"mean_ms", q.MeanMS}, {"p50_ms", q.P50MS}, {"p95_ms", q.P95MS}, {"p99_ms", q.P99MS},
			{"min_ms", q.MinMS}, {"max_ms", q.MaxMS}} {
			switch {
			case math.IsNaN(f.v) || math.IsInf(f.v, 0):
				bad(at(f.name), "is not a number (%v)", f.v)
			case f.v < 0:
				bad(at(f.name), "is negative (%g)", f.v)
			}
		}
		if q.P50MS > q.P95MS || q.P95MS > q.P99MS {
			bad(at("p95_ms"), "quantiles out of order: p50 %g, p95 %g, p99 %g", q.P50MS, q.P95MS, q.P99MS)
		}
		if q.Hist == "" {
			continue
		}
		bs, err := hc.buckets(q.Hist)
		if err != nil {
			bad(at("hist"), "does not decode: %v", err)
			continue
		}
		var n int64
		for _, b := range bs {
			n += b.Count
		}
		if n != q.TimedCalls {
			bad(at("hist"), "counts %d calls, timed_calls says %d", n, q.TimedCalls)
		}
	}
	return out
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
