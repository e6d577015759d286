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
// as a regression; judge it again once that one is fixed.
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
		if q.ImpactMS <= BusierShare*top.AddedMS {
			q.Status, q.BusierWith = StatusSlowerWhileBusier, top.Fingerprint
			q.Reasons = append(q.Reasons, ReasonServerBusier)
		}
	}
}
