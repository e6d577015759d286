package compare

import (
	"cmp"

	"fmt"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"math"
	"slices"
	"strings"
)

// OrderingSQLStates are the errors of a replay that ran dependent
// sessions out of order (results.OrderingSQLStates).
var OrderingSQLStates = results.OrderingSQLStates

// Divergence thresholds: a query diverges when its rows per call differ
// by more than MaxRowsPerCallDiff (relative) and by at least one row over
// its calls, or when an ordering error hits at least MinOrderingErrorRate
// more of its calls in the candidate than in the baseline.
const (
	MaxRowsPerCallDiff   = 0.01
	MinOrderingErrorRate = 0.001
)

// Divergence is a query that did different work in the two runs: a
// replay that ran statements in another order than the original (sessions
// depending on each other's commits) touches other rows and fails where
// the original did not, and its timings then measure another workload.
// It is reported apart from regressions: the candidate is not to blame.
type Divergence struct {
	Fingerprint string `json:"fingerprint"`
	Query       string `json:"query"`
	// RowsPerCall of each run, when both know their rows.
	BaselineRowsPerCall  *float64 `json:"baseline_rows_per_call,omitempty"`
	CandidateRowsPerCall *float64 `json:"candidate_rows_per_call,omitempty"`
	// OrderingErrors are the ordering-type errors the candidate had more
	// of, by SQLSTATE: candidate count less baseline count.
	OrderingErrors map[string]int64 `json:"ordering_errors,omitempty"`
	Reason         string           `json:"reason"`
}

// divergences finds the queries of both runs that did different work.
func divergences(base, cand *Run) []Divergence {
	var out []Divergence
	for i := range cand.Queries {
		cq := &cand.Queries[i]
		bq := base.Query(cq.Fingerprint)
		if bq == nil {
			continue
		}
		d := Divergence{Fingerprint: cq.Fingerprint, Query: cq.Query}
		var why []string
		if bq.RowsCalls > 0 && cq.RowsCalls > 0 {
			b := float64(bq.Rows) / float64(bq.RowsCalls)
			c := float64(cq.Rows) / float64(cq.RowsCalls)
			d.BaselineRowsPerCall, d.CandidateRowsPerCall = &b, &c
			diff := math.Abs(c - b)
			if diff > MaxRowsPerCallDiff*max(b, c) && diff*float64(cq.RowsCalls) >= 1 {
				why = append(why, fmt.Sprintf("rows per call %.3g -> %.3g", b, c))
			}
		}
		for _, code := range OrderingSQLStates {
			extra := cq.ErrorsBySQLState[code] - scaled(bq.ErrorsBySQLState[code], bq.Calls, cq.Calls)
			if extra > 0 && float64(extra) >= MinOrderingErrorRate*float64(cq.Calls) {
				if d.OrderingErrors == nil {
					d.OrderingErrors = map[string]int64{}
				}
				d.OrderingErrors[code] = extra
				why = append(why, fmt.Sprintf("%d more %s errors", extra, code))
			}
		}
		if len(why) > 0 {
			d.Reason = strings.Join(why, ", ")
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b Divergence) int {
		return cmp.Or(cmp.Compare(errorsOf(b), errorsOf(a)), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	return out
}

// scaled is n calls' worth of errors of a run of calls, at the other's
// number of calls, so that runs of different lengths compare.
func scaled(n, calls, otherCalls int64) int64 {
	if calls == 0 {
		return 0
	}
	return int64(math.Round(float64(n) * float64(otherCalls) / float64(calls)))
}

func errorsOf(d Divergence) int64 {
	var n int64
	for _, v := range d.OrderingErrors {
		n += v
	}
	return n
}
