package compare

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// sideErrors are a side's errors by SQLSTATE: the median count over its
// runs.
func sideErrors(runs []*Run) map[string]int64 {
	codes := map[string]bool{}
	for _, r := range runs {
		for c := range r.ErrorsBySQLState {
			codes[c] = true
		}
	}
	out := map[string]int64{}
	for c := range codes {
		n := make([]int64, len(runs))
		for i, r := range runs {
			n[i] = r.ErrorsBySQLState[c]
		}
		if m := medianInt(n); m > 0 {
			out[c] = m
		}
	}
	return out
}

// matchUncoded takes, from the counts of codes in extra (what one side
// has beyond the other), as many as the other side's errors without a
// SQLSTATE can account for: a log whose prefix lacks %e knows its errors
// only by message, so they are the same errors as the other side's
// coded ones, as far as the counts go. It returns how many it matched.
func matchUncoded(extra map[string]int64, uncoded int64) int64 {
	var matched int64
	for _, code := range slices.Sorted(maps.Keys(extra)) {
		if uncoded <= 0 {
			break
		}
		take := min(extra[code], uncoded)
		extra[code] -= take
		uncoded -= take
		matched += take
	}
	return matched
}

// newErrors are the SQLSTATEs the candidate has more of than the
// baseline, with the queries they belong to, and the count of errors
// matched through a side's errors without a SQLSTATE (never new).
func newErrors(base, cand []*Run) ([]ErrorDiff, int64) {
	b, c := sideErrors(base), sideErrors(cand)
	const unknown = results.UnknownSQLState
	extra := map[string]int64{}
	for code, n := range c {
		if code != unknown && n > b[code] {
			extra[code] = n - b[code]
		}
	}
	// The baseline's uncoded errors beyond the candidate's own uncoded
	// ones stand for coded errors of the candidate; and the other way
	// round, the candidate's uncoded errors are not new when the
	// baseline has coded ones to spare.
	matched := matchUncoded(extra, b[unknown]-c[unknown])
	if spare := c[unknown] - b[unknown]; spare > 0 {
		var surplus int64
		for code, n := range b {
			if code != unknown && n > c[code] {
				surplus += n - c[code]
			}
		}
		m := min(spare, surplus)
		matched += m
		if spare > m {
			extra[unknown] = spare - m
		}
	}
	var out []ErrorDiff
	for code, x := range extra {
		if x <= 0 {
			continue
		}
		e := ErrorDiff{SQLState: code, Baseline: c[code] - x, Candidate: c[code], New: c[code]-x == 0}
		if code == unknown {
			e.Baseline, e.Candidate, e.New = b[code], c[code], b[code] == 0
		}
		fps := map[string]bool{}
		for _, r := range cand {
			for _, s := range errorSamples(r) {
				if s.SQLState == code && !fps[s.Fingerprint] {
					fps[s.Fingerprint] = true
					e.Fingerprints = append(e.Fingerprints, s.Fingerprint)
				}
			}
			for _, q := range r.Queries {
				if q.ErrorsBySQLState[code] > 0 && !fps[q.Fingerprint] {
					fps[q.Fingerprint] = true
					e.Fingerprints = append(e.Fingerprints, q.Fingerprint)
				}
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b ErrorDiff) int {
		return cmp.Or(cmp.Compare(b.Candidate-b.Baseline, a.Candidate-a.Baseline), strings.Compare(a.SQLState, b.SQLState))
	})
	return out, matched
}
