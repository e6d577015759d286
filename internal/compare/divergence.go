package compare

import (
	"cmp"
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/results"
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
	// RowsDiffer is set when the rows per call differ beyond
	// MaxRowsPerCallDiff.
	RowsDiffer bool `json:"rows_differ"`
	// OrderingErrors are the ordering-type errors the candidate had more
	// of, by SQLSTATE: candidate count less baseline count (less the
	// baseline's errors logged without a SQLSTATE, which may be the
	// same errors).
	OrderingErrors map[string]int64 `json:"ordering_errors,omitempty"`
	// Run is the candidate run that diverged, when a side has several.
	Run string `json:"run,omitempty"`
}

// divergences finds the queries that did different work in the
// candidate's runs than in the baseline's first run; with several
// candidate runs, each query's worst divergence.
func divergences(base, cand []*Run) []Divergence {
	worst := map[string]Divergence{}
	for _, c := range cand {
		for _, d := range divergencesOf(base[0], c) {
			if len(cand) > 1 {
				d.Run = c.Name()
			}
			if w, ok := worst[d.Fingerprint]; !ok || errorsOf(d) > errorsOf(w) {
				worst[d.Fingerprint] = d
			}
		}
	}
	out := make([]Divergence, 0, len(worst))
	for _, d := range worst {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Divergence) int {
		return cmp.Or(cmp.Compare(errorsOf(b), errorsOf(a)), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	return out
}

// orderingErrors records extra errors of SQLSTATE code beyond the
// baseline's, when they reach MinOrderingErrorRate of the candidate's
// calls.
func (d *Divergence) orderingErrors(code string, extra, calls int64) {
	if extra > 0 && float64(extra) >= MinOrderingErrorRate*float64(calls) {
		if d.OrderingErrors == nil {
			d.OrderingErrors = map[string]int64{}
		}
		d.OrderingErrors[code] = extra
	}
}

// divergencesOf finds the queries of two runs that did different work.
//
// A replay that counts its failures by cause (the errors of statements
// that succeeded in the original, a 25P02 under the error that aborted
// its block: results.Outcomes.OnlyOnTargetBySQLState) is judged by
// those: an error that failed in the original too, or a 25P02 after an
// error of another kind (a server-assigned id of the original written
// into the text), is not one of the replay's order. Against the original
// (an analysis) they count whole; against another replay that counts
// them, beyond its own.
//
// A replay in load mode (results.SyncLoad) orders no plain read: a
// SELECT finds what the target had committed when it ran, as the
// application's did, so a slower candidate's reads may return other
// rows than the control's without either replay running out of order.
// Their rows are not compared then; writes, locks and errors of
// ordering are.
func divergencesOf(base, cand *Run) []Divergence {
	byCause := counted(cand) && (base.Replay == nil || counted(base))
	readsFree := loadMode(base) || loadMode(cand)
	var out []Divergence
	for i := range cand.Queries {
		cq := &cand.Queries[i]
		bq := base.Query(cq.Fingerprint)
		if bq == nil {
			continue
		}
		d := Divergence{Fingerprint: cq.Fingerprint, Query: cq.Query}
		if bq.RowsCalls > 0 && cq.RowsCalls > 0 && !(readsFree && fingerprint.Classify(cq.Query).PlainSelect) {
			b := float64(bq.Rows) / float64(bq.RowsCalls)
			c := float64(cq.Rows) / float64(cq.RowsCalls)
			d.BaselineRowsPerCall, d.CandidateRowsPerCall = &b, &c
			diff := math.Abs(c - b)
			d.RowsDiffer = diff > MaxRowsPerCallDiff*max(b, c) && diff*float64(cq.RowsCalls) >= 1
		}
		if byCause {
			for _, code := range OrderingSQLStates {
				extra := cq.OnlyOnTargetBySQLState[code]
				if base.Replay != nil {
					extra -= scaled(bq.OnlyOnTargetBySQLState[code], bq.Calls, cq.Calls)
				}
				d.orderingErrors(code, extra, cq.Calls)
			}
			if d.RowsDiffer || len(d.OrderingErrors) > 0 {
				out = append(out, d)
			}
			continue
		}
		// Errors the baseline logged without a SQLSTATE (a prefix
		// without %e) may be any of these: they are matched first.
		uncoded := scaled(uncodedErrors(bq), bq.Calls, cq.Calls)
		for _, code := range OrderingSQLStates {
			extra := cq.ErrorsBySQLState[code] - scaled(bq.ErrorsBySQLState[code], bq.Calls, cq.Calls)
			take := min(max(extra, 0), uncoded)
			extra, uncoded = extra-take, uncoded-take
			d.orderingErrors(code, extra, cq.Calls)
		}
		if d.RowsDiffer || len(d.OrderingErrors) > 0 {
			out = append(out, d)
		}
	}
	return out
}

// loadMode reports whether r is a replay synchronized for load, which
// leaves reads unordered (see divergencesOf).
func loadMode(r *Run) bool {
	return r.Replay != nil && r.Sync != nil && r.Sync.Mode == results.SyncLoad
}

// counted reports whether r is a replay that counts its failures by
// cause (see divergencesOf).
func counted(r *Run) bool {
	return r.Replay != nil && r.Outcomes.OnlyOnTargetBySQLState != nil
}

// uncodedErrors are a row's errors without a known SQLSTATE: those
// counted as unknown, and those beyond its counts by code.
func uncodedErrors(q *Query) int64 {
	var coded int64
	for code, n := range q.ErrorsBySQLState {
		if code != results.UnknownSQLState {
			coded += n
		}
	}
	return max(q.Errors-coded, 0)
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
