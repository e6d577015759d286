package sweep

import (
	"context"
	"sort"

	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// hotQueryText bounds a hot query's text, in characters.
const hotQueryText = 300

// hotQueries returns the top query ids by calls per second between two
// pg_stat_statements reads taken seconds apart, with their texts. The
// ids in own, the sampler's statements, are not the workload's: they
// are left out, of the shares too.
func hotQueries(ctx context.Context, r *observe.StatementsReader, before, after map[int64]observe.QueryCounts, own map[int64]bool, seconds float64, top int) []Hot {
	var all []Hot
	var total int64
	for id, a := range after {
		if own[id] {
			continue
		}
		b := before[id] // zero when new in the window
		calls := a.Calls - b.Calls
		if calls <= 0 {
			continue
		}
		total += calls
		all = append(all, Hot{QueryID: id,
			CallsPerS: float64(calls) / seconds,
			PlansPerS: float64(max(a.Plans-b.Plans, 0)) / seconds})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].CallsPerS != all[j].CallsPerS {
			return all[i].CallsPerS > all[j].CallsPerS
		}
		return all[i].QueryID < all[j].QueryID
	})
	if len(all) > top {
		all = all[:top]
	}
	ids := make([]int64, len(all))
	for i := range all {
		all[i].ShareCalls = all[i].CallsPerS * seconds / float64(total)
		ids[i] = all[i].QueryID
	}
	// Without texts the figures still stand.
	texts, _ := r.Texts(ctx, ids, hotQueryText)
	for i := range all {
		all[i].Query = texts[all[i].QueryID]
	}
	return all
}

// waitEvents turns a WaitSampler's counts into the step's top wait
// states, each with its share of all samples.
func waitEvents(counts []observe.WaitCount, top int) []Wait {
	var total int64
	for _, c := range counts {
		total += c.Samples
	}
	waits := []Wait{}
	for _, c := range counts[:min(top, len(counts))] {
		waits = append(waits, Wait{Type: c.Type, Event: c.Event, Samples: int(c.Samples), Share: float64(c.Samples) / float64(total)})
	}
	return waits
}
