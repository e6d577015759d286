package findings

import (
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Workload is the part of an analysis or replay result that findings read.
type Workload struct {
	Name string `json:"-"`
	Kind string `json:"kind"`
	// SpanS is the time from the first to the last event, in seconds
	// (a replay's wall time); 0 when unknown.
	SpanS            float64
	Statements       int64
	Failed           int64
	ErrorsBySQLState map[string]int64
	// LockWaitLines counts the log lines of lock waits ("process N
	// still waiting for ShareLock ...", with their DETAIL and
	// STATEMENT lines), which log_lock_waits writes; -1 when the
	// result does not say (a replay).
	LockWaitLines int64
	// Queries are by total time, descending.
	Queries []Query
	// PeakCallsPerS is the busiest timeline bucket's statements per
	// second; 0 without a timeline.
	PeakCallsPerS float64
	// Replay holds what only a replay tells; nil for an analysis.
	Replay *ReplayFacts
}

// ReplayFacts are what a replay's findings need beyond its figures.
type ReplayFacts struct {
	// FailedOnlyOnTarget counts the statements that failed on the
	// target and had succeeded in the original.
	FailedOnlyOnTarget int64
	// Sync is how the sessions were synchronized, empty when the result
	// does not say; SyncTimeouts and SyncTimeoutSeconds its waits given
	// up at the timeout, and LostTransactions the commits a fault lost on
	// the target.
	Sync               results.SyncMode
	SyncTimeouts       int64
	SyncTimeoutSeconds float64
	LostTransactions   int64
	// Reconnects counts sessions that reconnected after a fault.
	Reconnects int64
	// OnlyOnTargetBySQLState splits FailedOnlyOnTarget by cause (a
	// 25P02 under the error that aborted its block), BakedIDs counts
	// those from server-assigned ids of the original
	// (results.Outcomes); nil in a result from before.
	OnlyOnTargetBySQLState map[string]int64
	BakedIDs               int64
}

// Query is one fingerprint's figures.
type Query struct {
	Fingerprint string `json:"fingerprint"`
	Query       string `json:"query"`
	Calls       int64  `json:"calls"`
	Errors      int64  `json:"errors"`
	// ErrorsBySQLState are the query's errors by code, when known.
	ErrorsBySQLState map[string]int64 `json:"errors_by_sqlstate,omitempty"`
	// OnlyOnTargetBySQLState: of a replay's, those of calls that
	// succeeded in the original, by cause (querystats.Row).
	OnlyOnTargetBySQLState map[string]int64 `json:"only_on_target_by_sqlstate,omitempty"`
	TotalMS                float64          `json:"total_ms"`
	MeanMS                 float64          `json:"mean_ms"`
}

// TotalMS is the time of every query.
func (w *Workload) TotalMS() float64 {
	var t float64
	for _, q := range w.Queries {
		t += q.TotalMS
	}
	return t
}

// Rate is calls per second over the span, 0 when the span is unknown.
func (w *Workload) Rate(calls int64) float64 {
	if w.SpanS <= 0 {
		return 0
	}
	return float64(calls) / w.SpanS
}

func (w *Workload) ref(q *Query) QueryRef {
	return QueryRef{Fingerprint: q.Fingerprint, Query: q.Query, Calls: q.Calls, TotalMS: q.TotalMS, CallsPerS: round(w.Rate(q.Calls), 1)}
}

// Query returns the query of fingerprint fp, or nil.
func (w *Workload) Query(fp string) *Query {
	for i := range w.Queries {
		if w.Queries[i].Fingerprint == fp {
			return &w.Queries[i]
		}
	}
	return nil
}

// ObservedFromResult is what a result's samples (kept only when its user
// asked, for they hold parameter values) give the checks that plan a
// statement: per
// fingerprint, its slowest execution with its values, as an EventSampler
// over the logs gives. A result keeps no sessions or inserted values, so
// the checks that count those say they lacked them. Nil without samples.
func ObservedFromResult(r *results.Result) *Observed {
	if r == nil || len(r.Samples) == 0 {
		return nil
	}
	o := &Observed{Queries: map[string]*ObservedQuery{}}
	for _, qs := range r.Samples {
		for _, s := range qs.Samples {
			if s.Role != results.SampleSlowest {
				continue
			}
			// A result samples only executions that ran without an
			// error, with every value known.
			o.Queries[qs.Fingerprint] = &ObservedQuery{Sample: &Sample{Query: s.Query, Params: s.Params, Complete: true,
				Extended: s.Params != nil, DurationUS: int64(s.DurationMS * 1000), Database: s.Database}}
		}
	}
	return o
}

// FromResult takes the figures of an analysis or a replay.
func FromResult(r *results.Result) *Workload {
	w := &Workload{
		Name: r.Name(), Kind: string(r.Kind),
		Statements: r.Statements.Total, Failed: r.Statements.Failed,
		ErrorsBySQLState: r.ErrorsBySQLState,
		LockWaitLines:    -1,
		SpanS:            r.SpanSeconds(),
	}
	if r.Lines != nil {
		w.LockWaitLines = r.Lines.Skipped[results.LineSkipLockWait]
	}
	for _, q := range r.Queries {
		w.Queries = append(w.Queries, Query{Fingerprint: q.Fingerprint, Query: q.Query, Calls: q.Calls, Errors: q.Errors,
			ErrorsBySQLState: q.ErrorsBySQLState, OnlyOnTargetBySQLState: q.OnlyOnTargetBySQLState, TotalMS: q.TotalMS, MeanMS: q.MeanMS})
	}
	if r.Replay != nil {
		w.Replay = &ReplayFacts{FailedOnlyOnTarget: r.Outcomes.FailedOnlyOnTarget, Reconnects: r.Sessions.Reconnects,
			OnlyOnTargetBySQLState: r.Outcomes.OnlyOnTargetBySQLState, BakedIDs: r.Outcomes.OnlyOnTargetBakedIDs}
		if r.Sync != nil {
			w.Replay.Sync = r.Sync.Mode
			w.Replay.SyncTimeouts, w.Replay.SyncTimeoutSeconds = r.Sync.Timeouts, r.Sync.TimeoutSeconds
			w.Replay.LostTransactions = r.Sync.LostTransactions
		}
	}
	if t := r.Timeline; t != nil {
		w.PeakCallsPerS = peak(t.Calls, t.BucketMS)
	}
	return w
}

func peak(calls []int64, bucketMS int64) float64 {
	if bucketMS <= 0 {
		return 0
	}
	var m int64
	for _, c := range calls {
		m = max(m, c)
	}
	return float64(m) / (float64(bucketMS) / 1000)
}
