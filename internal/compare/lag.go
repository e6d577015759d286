package compare

import (
	"cmp"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Latency not judged after a lagging replay. A replay that fell behind
// its schedule beyond its threshold (results.Result.Lagged, the rule its
// own "timings are doubtful" warning uses), by its own fault more than the
// target's (replayerLate), issued its statements late and bunched: on a busy machine its sessions overlapped otherwise than the
// original's, lock-bound statements waited where the original's did not,
// and its client's CPU starvation entered its round trips. With one run
// a side nothing measures how far that moves a query (docs/by-hand.md's
// workflow once read "UPDATE pgbench_branches 24.32x (1.13-183)" on an
// identical candidate whose replay lagged), so such a comparison judges
// no latency: what would have been a latency regression or improvement
// is StatusNotJudgedLag, no latency rule is checked, and the verdict is
// VerdictIncomplete with Verdict.LatencyNotJudged saying which run lagged
// and by how much. Errors, divergence and server work per call do not
// depend on the pace and are judged as always. With noise measured (three
// runs a side), the baseline's own runs carry their lag into the noise
// floor, and lag does not change the comparison.

// StatusNotJudgedLag: the query's latency changed beyond the floors (a
// regression or an improvement it would have been), but a replay of the
// comparison, one run a side, fell behind its schedule: its latency is
// not evidence, and it is neither a regression nor an improvement.
const StatusNotJudgedLag Status = "not_judged_lag"

// ReasonReplayLagged goes with StatusNotJudgedLag, and with a work
// regression (StatusMoreWork) whose latency was left unjudged.
const ReasonReplayLagged Reason = "replay_lagged"

// NotJudgedReason is why a comparison left its latency unjudged.
type NotJudgedReason string

// NotJudgedReplayLagged: a replay fell behind its schedule beyond its
// threshold, and the noise between runs was not measured.
const NotJudgedReplayLagged NotJudgedReason = "replay_lagged"

// Side names a side of a comparison.
type Side string

// Sides.
const (
	SideBaseline  Side = "baseline"
	SideCandidate Side = "candidate"
)

// LaggedRun is a replay of the comparison that fell behind its schedule
// beyond its threshold.
type LaggedRun struct {
	Side Side   `json:"side"`
	Run  string `json:"run"`
	// LagP99MS and LagMaxMS are its schedule lag; MaxLagMS the
	// threshold it exceeded (its --max-lag).
	LagP99MS float64 `json:"lag_p99_ms"`
	LagMaxMS float64 `json:"lag_max_ms"`
	MaxLagMS float64 `json:"max_lag_ms"`
	// Sources splits its lateness by the side that caused it (the
	// target or the replayer); nil when the replay did not say.
	Sources *results.LagSources `json:"lag_sources,omitempty"`
}

// LatencyNotJudged says why a comparison judged no latency.
type LatencyNotJudged struct {
	Reason NotJudgedReason `json:"reason"`
	Runs   []LaggedRun     `json:"runs"`
}

// laggedRuns are the replays that lagged beyond their threshold, unless
// judge (the noise is measured, or the caller asks); nil when latency can
// be judged.
func laggedRuns(base, cand []*Run, judge bool) *LatencyNotJudged {
	if judge {
		return nil
	}
	var runs []LaggedRun
	for _, side := range []struct {
		s    Side
		runs []*Run
	}{{SideBaseline, base}, {SideCandidate, cand}} {
		for _, r := range side.runs {
			if l, ok := r.Lagged(); ok && replayerLate(r.LagSources) {
				runs = append(runs, LaggedRun{Side: side.s, Run: r.Name(), LagP99MS: l.P99MS, LagMaxMS: l.MaxMS, MaxLagMS: l.ThresholdMS, Sources: r.LagSources})
			}
		}
	}
	if len(runs) == 0 {
		return nil
	}
	return &LatencyNotJudged{Reason: NotJudgedReplayLagged, Runs: runs}
}

// replayerLate reports whether a replay's lateness was mostly the
// replayer's own (its CPU, its goroutines scheduled late), or is not
// known: then the latencies it timed include its own delay. Lateness
// that was the target's (the session still waited on its previous
// statement when the next was due) is the target being slower than the
// original, which is what a comparison is for: a dropped index whose
// lookup is 290x slower makes its replay fall behind by that, and such a
// regression must still be called (docs/by-hand.md's workflow, issue 44).
func replayerLate(src *results.LagSources) bool {
	return src == nil || src.ReplayerMS >= src.TargetMS
}

// markLagged relabels, when the latency is not judged, every query that a
// latency change made a regression or an improvement: a work regression
// stays one (its work does not depend on the pace), with
// ReasonReplayLagged; the others are StatusNotJudgedLag, listed in
// NotJudgedLag by the time they would have added (or saved).
func (r *Report) markLagged() {
	if r.Verdict.LatencyNotJudged == nil {
		return
	}
	var qs []*QueryDiff
	for i := range r.Queries {
		q := &r.Queries[i]
		if !q.Status.Regression() && q.Status != StatusImproved {
			continue
		}
		q.Reasons = append(q.Reasons, ReasonReplayLagged)
		if q.Work != nil && q.Work.More != "" {
			q.Status = StatusMoreWork
			continue
		}
		q.Changed = cmp.Or(q.Regressed, MetricMean)
		q.Status, q.Regressed = StatusNotJudgedLag, ""
		qs = append(qs, q)
	}
	slices.SortStableFunc(qs, func(a, b *QueryDiff) int {
		return cmp.Or(cmp.Compare(b.ImpactMS, a.ImpactMS), cmp.Compare(b.AddedMS, a.AddedMS), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	r.NotJudgedLag = []string{}
	for _, q := range qs {
		r.NotJudgedLag = append(r.NotJudgedLag, q.Fingerprint)
	}
}

// latencyRule reports whether m is a figure of latency, whose rules a
// comparison that judges no latency does not check.
func latencyRule(m Metric) bool { return m != MetricErrors && !WorkRule(m) }
