package compare

import (
	"cmp"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// Slower while busier. When one regression keeps the candidate's server
// much busier (a lookup turned into a sequential scan costs seconds of
// CPU a run), other queries slow down beside it: commits wait for a CPU,
// their tails grow. Those slowdowns are real on the candidate, and go
// when the dominant regression is fixed; calling them regressions of
// their own would blame queries the change did not touch (the A/B
// acceptance of a raised random_page_cost once listed END's p95, 2.44x,
// +44 ms a run, beside the lookup's +14 s).

// StatusSlowerWhileBusier: slower beyond noise and the floors, while one
// regression (BusierWith) kept the candidate's server busier by at least
// a tenth of a core and added twenty times or more the time this query
// added: likely contention with it, not a change of its own. Not counted
// as a regression; judge it again once that one is fixed. A query that
// breaks a latency rule is never so relabelled: it stays a regression
// (see markBusier).
const StatusSlowerWhileBusier Status = "slower_while_busier"

// ReasonServerBusier goes with StatusSlowerWhileBusier: the query's
// regression (Regressed, its figure) was taken for contention.
const ReasonServerBusier Reason = "server_busier"

// The thresholds of a dominant regression and of what slowed beside it.
const (
	// DominantShareOfWall: the dominant regression adds at least this
	// share of the run's wall time in server time per run (a tenth of
	// a core).
	DominantShareOfWall = 0.10
	// DominantShareOfAdded: and at least this share of the time all
	// the queries that got slower added.
	DominantShareOfAdded = 0.5
	// BusierShare: a regression that added at most this share of the
	// dominant one's time is taken as slowed beside it.
	BusierShare = 0.05
)

// markBusier relabels the regressions that slowed beside a dominant one;
// wallS are the candidate's runs' spans in seconds.
func (r *Report) markBusier(wallS []float64) {
	if len(wallS) == 0 {
		return
	}
	wallMS := stats.Median(wallS) * 1000
	var regs []*QueryDiff
	added := 0.0
	for i := range r.Queries {
		q := &r.Queries[i]
		if q.AddedMS > 0 {
			added += q.AddedMS
		}
		if q.Status.Regression() {
			regs = append(regs, q)
		}
	}
	if len(regs) < 2 || wallMS <= 0 {
		return
	}
	slices.SortStableFunc(regs, func(a, b *QueryDiff) int {
		return cmp.Or(cmp.Compare(b.ImpactMS, a.ImpactMS), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	top := regs[0]
	if top.Status != StatusRegressed || top.AddedMS < DominantShareOfWall*wallMS || top.AddedMS < DominantShareOfAdded*added {
		return
	}
	for _, q := range regs[1:] {
		if q.ImpactMS <= BusierShare*top.AddedMS && !r.breaksLatencyRule(q) {
			q.Status, q.BusierWith = StatusSlowerWhileBusier, top.Fingerprint
			q.Reasons = append(q.Reasons, ReasonServerBusier)
		}
	}
}

// breaksLatencyRule reports whether q breaks one of the report's latency
// rules (--fail-on on the mean, a percentile or total_ms). Such a query
// stays a regression beside a dominant one: a rule is the user's limit
// on what the candidate's queries may feel, whatever slowed them, and a
// query "not counted" must not break it too (issue 44 read "p95>+50%
// broken by 4 queries; 1 regression ...; 4 more queries slower beside
// it ..., not counted"). Errors and work rules judge other figures than
// the slowdown that contention explains, and are checked as for any
// query.
func (r *Report) breaksLatencyRule(q *QueryDiff) bool {
	for _, rule := range r.Rules {
		if rule.Metric == MetricErrors || WorkRule(rule.Metric) {
			continue
		}
		if _, broken := rule.check(q, r.Settings, nil); broken {
			return true
		}
	}
	return false
}
