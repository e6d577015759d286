package judge

import (
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

// MinGrowth is the least factor a query's latency must grow by over its
// 1x to count as grown, whatever the noise: compare's default MinEffect
// (10%), so that a step and a rehearsal call the same change a change.
const MinGrowth = 1.1

// Culprits are the queries of step m that added time over their own
// baseline b, most first (those with the SLO's MinCalls in every round,
// whatever their share of the time, as rehearse judges them): the one measure rehearse ranks its
// regressions by (compare.AddedMS, compare.ByAddedTime), with the
// statistics the step is judged by. A query's mean counts when it grew
// beyond the noise of the 1x rounds (its Spread, and at least MinGrowth)
// and by slo.MinEffectMS or more a call; it added its growth times the
// step's timed calls. A query whose mean did not grow so, but whose p95
// did, added its tail's growth over the slowest 5% of its calls, as
// rehearse ranks a tail regression. Each is a Break of that figure with
// AddedMS set, its Limit the noise floor its figure had to pass and its
// Margin how far past that floor it grew, on a rule's scale (a culprit
// breaks no rule by itself); the query's wait events are its Waits. A step whose queries grew within
// their noise has none.
func Culprits(b Baseline, m Measurement, slo SLO) []Break {
	var out []Break
	for _, bq := range slices.Concat(b.Queries, b.minor) {
		q, ok := findQuery(m.Queries, bq.Fingerprint)
		if !ok || q.TimedCalls < slo.MinCalls {
			continue
		}
		for _, metric := range []SLOMetric{SLOMetricMean, SLOMetricP95} {
			base, val := latency(bq, metric), latency(q, metric)
			floor := max(MinGrowth, bq.Spread[metric])
			if base <= 0 || val/base < floor || val-base < slo.MinEffectMS {
				continue
			}
			added := compare.AddedMS(compare.Metric(metric), val-base, q.TimedCalls)
			out = append(out, Break{Metric: metric, Fingerprint: q.Fingerprint, Query: q.Query, Base: base, Value: val,
				Limit: base * floor, Margin: math.Log(val/base)/math.Log(floor) - 1, AddedMS: added, Waits: q.Waits})
			break
		}
	}
	slices.SortStableFunc(out, func(x, y Break) int {
		return compare.ByAddedTime(x.AddedMS, x.Fingerprint, y.AddedMS, y.Fingerprint)
	})
	return out
}
