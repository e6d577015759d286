package judge

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// Baseline is a side at k = 1: the median of its baseline rounds, per
// figure and per query.
type Baseline struct {
	StatementsPerS float64 `json:"statements_per_s"`
	ErrorRate      float64 `json:"error_rate_pct"`
	MeanMS         float64 `json:"mean_ms"`
	// LagP99MS is the schedule lag p99 at 1x: a step's lag is judged
	// beyond it (SLO.MaxLag above what 1x itself lagged).
	LagP99MS float64 `json:"lag_p99_ms"`
	// LagByTarget: in most baseline rounds the target caused more of
	// the lateness than the replayer (Measurement.LagTargetMS over
	// LagReplayerMS): a 1x that lagged was the target's, not the
	// replayer's.
	LagByTarget bool `json:"lag_by_target,omitempty"`
	// Queries are the queries judged: those with MinCalls timed calls
	// in every baseline round and MinShare of its time.
	Queries []Query `json:"queries"`
	Rounds  int     `json:"rounds"`
	// minor are the queries with MinCalls timed calls in every baseline
	// round but less than MinShare of its time: they break no rule, but
	// one may still add the most time at a step (Culprits), as rehearse
	// would rank it.
	minor []Query
}

// NewBaseline is the baseline of a side's k = 1 rounds under slo.
func NewBaseline(rounds []Measurement, slo SLO) Baseline {
	b := Baseline{Rounds: len(rounds)}
	if len(rounds) == 0 {
		return b
	}
	pick := func(f func(Measurement) float64) float64 {
		v := make([]float64, len(rounds))
		for i, m := range rounds {
			v[i] = f(m)
		}
		return median(v)
	}
	b.StatementsPerS = pick(func(m Measurement) float64 { return m.StatementsPerS })
	b.ErrorRate = pick(func(m Measurement) float64 { return m.ErrorRate })
	b.MeanMS = pick(func(m Measurement) float64 { return m.MeanMS })
	b.LagP99MS = pick(func(m Measurement) float64 { return m.LagP99MS })
	byTarget := 0
	for _, m := range rounds {
		if m.LagTargetMS > m.LagReplayerMS {
			byTarget++
		}
	}
	b.LagByTarget = 2*byTarget > len(rounds)
	var total float64
	for _, q := range rounds[0].Queries {
		total += q.TotalMS
	}
	for _, q := range rounds[0].Queries {
		if transactionControl(q.Query) {
			continue
		}
		qs := []Query{}
		for _, m := range rounds {
			if o, ok := findQuery(m.Queries, q.Fingerprint); ok && o.TimedCalls >= slo.MinCalls {
				qs = append(qs, o)
			}
		}
		if len(qs) < len(rounds) {
			continue
		}
		mq := q
		mq.Waits = nil
		mq.Spread = map[SLOMetric]float64{}
		for _, m := range []SLOMetric{SLOMetricP50, SLOMetricP95, SLOMetricP99, SLOMetricMean} {
			lo, hi := latency(qs[0], m), latency(qs[0], m)
			for _, o := range qs[1:] {
				lo, hi = min(lo, latency(o, m)), max(hi, latency(o, m))
			}
			if lo > 0 {
				// The spread of the rounds, as compare's noise floor
				// measures it (stats.RangeFactor, docs/noise.md).
				mq.Spread[m] = stats.RangeFactor(lo, hi, len(qs))
			}
		}
		mq.TotalMS = medianOf(qs, func(q Query) float64 { return q.TotalMS })
		mq.MeanMS = medianOf(qs, func(q Query) float64 { return q.MeanMS })
		mq.P50MS = medianOf(qs, func(q Query) float64 { return q.P50MS })
		mq.P95MS = medianOf(qs, func(q Query) float64 { return q.P95MS })
		mq.P99MS = medianOf(qs, func(q Query) float64 { return q.P99MS })
		if total > 0 && q.TotalMS/total < slo.MinShare {
			b.minor = append(b.minor, mq)
			continue
		}
		b.Queries = append(b.Queries, mq)
	}
	return b
}

// transactionControl reports whether query only opens a transaction or
// marks a savepoint (SAVEPOINT, RELEASE, ROLLBACK TO), as the one SQL
// classifier (fingerprint) says: its time is a round trip, the client's
// and the network's more than the target's, and is not judged. COMMIT
// is, since it waits for the WAL to be flushed.
func transactionControl(query string) bool {
	c, err := fingerprint.Statement(query)
	return err == nil && (c.Tx == fingerprint.TxBegin || c.Tx == fingerprint.TxSavepoint)
}

func findQuery(qs []Query, fp string) (Query, bool) {
	for _, q := range qs {
		if q.Fingerprint == fp {
			return q, true
		}
	}
	return Query{}, false
}

func medianOf(qs []Query, f func(Query) float64) float64 {
	v := make([]float64, len(qs))
	for i, q := range qs {
		v[i] = f(q)
	}
	return median(v)
}

// median is stats.Median, 0 for no values (a side without rounds).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return stats.Median(v)
}

// Bound is what limited a step, when not the target.
type Bound string

// Bounds.
const (
	// BoundTarget: the step ran as asked, or the target is why it did
	// not.
	BoundTarget Bound = "target"
	// BoundRoundTrips: the step fell short of its k while the target
	// answered as fast as at k = 1: the sessions' own round trips (each
	// waits for its answer before its next statement) bound the load.
	BoundRoundTrips Bound = "round_trips"
	// BoundReplayer: the replayer could not keep the schedule, its own
	// CPU saturated or its lag its own: more replayers (shards) are
	// needed to ask more of the target.
	BoundReplayer Bound = "replayer"
)

// Break is one rule a step broke, or the closest it came (Margin < 0).
type Break struct {
	Metric SLOMetric `json:"metric"`
	// Fingerprint and Query name the query of a latency rule.
	Fingerprint string `json:"fingerprint,omitempty"`
	Query       string `json:"query,omitempty"`
	// Base and Value are the figure at k = 1 and in the step (ms, or
	// percent for errors); Limit what the rule allows.
	Base  float64 `json:"base"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	// Margin is how far past the rule the step was, on the rule's own
	// scale (0 at the limit, 1 at twice the growth allowed, -1 with no
	// growth): the step broke the rule when it is above 0.
	Margin float64 `json:"margin"`
	// Waits are the query's wait events in the step.
	Waits []Wait `json:"waits,omitempty"`
	// AddedMS is, for a culprit (Culprits), the time its growth over
	// its 1x added to the step.
	AddedMS float64 `json:"added_ms,omitempty"`
	// Cause is, for a lag break, the culprit: the query that added the
	// most time over its own 1x, beyond its noise (Culprits, the measure
	// rehearse ranks regressions by); when none grew beyond its noise,
	// the judged query with the most time in the step. For the latency
	// rule broken the most in a step, it is the culprit when that is
	// another query (nameCulprit).
	Cause *Break `json:"cause,omitempty"`
	// WaitedMost is, for a lag break, the judged query with the most
	// time in the step, with its wait events: where the sessions
	// waited, evidence beside the cause; absent when it is the cause.
	WaitedMost *Break `json:"waited_most,omitempty"`
}

// StepVerdict is the judgement of one step (a round at a load factor k)
// against its side's baseline, the second kind of verdict the judge
// returns (Step, Levels); Verdict is the first, of two sides.
type StepVerdict struct {
	Held bool `json:"held"`
	// AchievedK is the step's statements per second over the baseline's.
	AchievedK float64 `json:"achieved_k"`
	// Margin is the largest of the rules' margins: above 0, broken.
	Margin float64 `json:"margin"`
	// Broken are the rules broken, largest margin first; Closest the
	// rule nearest to breaking when none was.
	Broken  []Break `json:"broken,omitempty"`
	Closest *Break  `json:"closest,omitempty"`
	Bound   Bound   `json:"bound"`
	// Why says in words why the step is bound by other than the target.
	Why string `json:"why,omitempty"`
}

// ReplayerSaturated is the share of the machine's cores the replayer's
// own CPU must reach for a step to be said bound by the replayer.
const ReplayerSaturated = 0.85

// ShortFall is how far below its asked k a step's achieved k must be to
// be said to fall short.
const ShortFall = 0.9

// Step judges a step that asked for k, measured m, against its side's
// baseline b under slo; cores is the number of CPUs the replayer may use.
// A headroom search calls it on each step as it runs; Levels on every
// level of a side at once.
func Step(b Baseline, m Measurement, k float64, slo SLO, cores int) StepVerdict {
	v := StepVerdict{Bound: BoundTarget, Margin: math.Inf(-1)}
	if b.StatementsPerS > 0 {
		v.AchievedK = m.StatementsPerS / b.StatementsPerS
	}
	add := func(br Break) {
		if br.Margin > 0 {
			v.Broken = append(v.Broken, br)
		} else if v.Closest == nil || br.Margin > v.Closest.Margin {
			c := br
			v.Closest = &c
		}
		v.Margin = max(v.Margin, br.Margin)
	}
	latencyGrew := ruleBreaks(b, m, slo, add)
	if b.MeanMS > 0 && m.MeanMS/b.MeanMS >= MinGrowth {
		latencyGrew = true
	}
	short := v.AchievedK > 0 && v.AchievedK < ShortFall*k
	// Lag is judged beyond what 1x itself lagged: a busy machine's
	// replay lags at 1x too.
	lagMS := float64(slo.MaxLag.Microseconds()) / 1000
	if lagMS > 0 {
		lagMS += b.LagP99MS
	}
	late := lagMS > 0 && m.LagP99MS > lagMS
	// The replayer's CPU (its shards' added up) against what it could
	// use: this machine's cores, or, split in shards, theirs added up
	// when fewer (shards on this machine share its cores).
	capacity := cores
	if m.ShardCores > 0 && (capacity <= 0 || m.ShardCores < capacity) {
		capacity = m.ShardCores
	}
	saturated := capacity > 0 && m.ReplayerCPU >= ReplayerSaturated*float64(capacity)
	culprits := Culprits(b, m, slo)
	shardSaturated := len(m.ShardsSaturated) > 0
	replayerLate := m.LagReplayerMS > m.LagTargetMS
	// A lag spike alone, with the load achieved and the latencies as at
	// 1x, is noise; a step that fell short of its k, or lagged while the
	// target answered slower, is bound by something: the replayer, the
	// sessions' round trips, or the target.
	switch {
	case saturated || shardSaturated || (short && replayerLate):
		v.Bound = BoundReplayer
		v.Why = "the replayer could not keep the schedule"
		switch {
		case saturated && m.ShardCores > 0:
			v.Why = fmt.Sprintf("the shards' replayers' own CPU was saturated (%.2f of %d cores, added up)", m.ReplayerCPU, capacity)
		case saturated:
			v.Why = "the replayer's own CPU was saturated"
		case shardSaturated:
			v.Why = fmt.Sprintf("the own CPU of the replayer of shard %v was saturated (%.0f%% of its cores or more)", m.ShardsSaturated, 100*ReplayerSaturated)
		}
	case short && !latencyGrew && m.ServerShare > 0 && m.ServerShare < RoundTripShare:
		// The target answered as fast as at 1x and most of each round
		// trip was not the target's: the sessions, closed loops, could
		// not go faster.
		v.Bound = BoundRoundTrips
		v.Why = fmt.Sprintf("the target answered as fast as at 1x, and %.0f%% of the sessions' round trips was the target's: they could not issue faster", 100*m.ServerShare)
	case short || (late && latencyGrew):
		// The sessions waited on the target: it answered slower, or its
		// answers, as slow as at 1x, left them no time at k (or whose
		// time it was is unknown without the target's own durations).
		cause, waited := lagCause(b, m, culprits)
		mg := 0.01
		if lagMS > 0 && late {
			mg = max(mg, m.LagP99MS/lagMS-1)
		}
		if short {
			// Fell short of k: by how much, on the lag's scale.
			mg = max(mg, ShortFall*k/v.AchievedK-1)
		}
		add(Break{Metric: SLOMetricLag, Base: b.LagP99MS, Value: m.LagP99MS, Limit: lagMS, Margin: mg, Cause: cause, WaitedMost: waited})
	}
	slices.SortStableFunc(v.Broken, func(a, b Break) int { return cmp.Compare(b.Margin, a.Margin) })
	nameCulprit(&v, culprits)
	if math.IsInf(v.Margin, -1) {
		v.Margin = -1
	}
	v.Held = len(v.Broken) == 0
	if m.Partial && v.Held {
		// A replay that did not run whole proves nothing held.
		v.Held = false
		v.Margin = max(v.Margin, 0.01)
		v.Broken = append(v.Broken, Break{Metric: "incomplete", Margin: 0.01})
	}
	return v
}

// ruleBreaks judges m against each rule of slo, over the baseline b:
// the error rate, and each query's latency timed often enough on both,
// passing add every rule's Break. It says whether some query's latency
// grew beyond MinGrowth and slo.MinEffectMS.
func ruleBreaks(b Baseline, m Measurement, slo SLO, add func(Break)) (latencyGrew bool) {
	for _, r := range slo.Rules {
		if r.Metric == SLOMetricErrors {
			lim := b.ErrorRate + r.PP
			mg := -1.0
			if r.PP > 0 {
				mg = (m.ErrorRate-b.ErrorRate)/r.PP - 1
			} else if m.ErrorRate > b.ErrorRate {
				mg = 1
			}
			add(Break{Metric: SLOMetricErrors, Base: b.ErrorRate, Value: m.ErrorRate, Limit: lim, Margin: mg})
			continue
		}
		for _, bq := range b.Queries {
			q, ok := findQuery(m.Queries, bq.Fingerprint)
			if !ok || q.TimedCalls < slo.MinCalls {
				continue
			}
			base, val := latency(bq, r.Metric), latency(q, r.Metric)
			if base <= 0 || val <= 0 {
				continue
			}
			// The limit grows by the spread the 1x rounds showed between
			// themselves: a step must break the SLO by more than the
			// noise of the target's own 1x.
			limit := r.Ratio * max(1, bq.Spread[r.Metric])
			mg := math.Log(val/base)/math.Log(limit) - 1
			if val-base < slo.MinEffectMS {
				// Too small a change to break, however large its ratio.
				mg = min(mg, -0.01)
			}
			if val/base >= MinGrowth && val-base >= slo.MinEffectMS {
				latencyGrew = true
			}
			add(Break{Metric: r.Metric, Fingerprint: q.Fingerprint, Query: q.Query, Base: base, Value: val, Limit: base * limit, Margin: mg, Waits: q.Waits})
		}
	}
	return latencyGrew
}

// lagCause is the cause of a lag: what added the most time over its own
// 1x (the first of culprits), and, as evidence beside it, where the
// sessions waited (busiest; nil when it is the cause). When no query grew
// beyond its noise, where the sessions waited is the cause.
func lagCause(b Baseline, m Measurement, culprits []Break) (cause, waited *Break) {
	waited = busiest(b, m)
	if len(culprits) == 0 {
		return waited, nil
	}
	cause = &culprits[0]
	if waited != nil && waited.Fingerprint == cause.Fingerprint {
		waited = nil
	}
	return cause, waited
}

// nameCulprit gives the rule broken the most, when it is another query's
// latency rule, the step's culprit as its Cause: a query whose figure
// broke the SLO by the most may not be the one that added the most time
// over its 1x, and the first to break names both.
func nameCulprit(v *StepVerdict, culprits []Break) {
	if len(v.Broken) == 0 || len(culprits) == 0 || v.Bound != BoundTarget {
		return
	}
	if br := &v.Broken[0]; br.Fingerprint != "" && br.Cause == nil && br.Fingerprint != culprits[0].Fingerprint {
		br.Cause = &culprits[0]
	}
}

// RoundTripShare is the share of the sessions' round trips the target's
// own time must stay below for a step that lagged with latencies as at 1x
// to be said bound by the round trips rather than by the target.
const RoundTripShare = 0.5

// busiest is the judged query with the most time in the step, as a p95
// break: what the sessions spent their time waiting on.
func busiest(b Baseline, m Measurement) *Break {
	var best *Break
	for _, bq := range b.Queries {
		q, ok := findQuery(m.Queries, bq.Fingerprint)
		if !ok || bq.P95MS <= 0 {
			continue
		}
		if best == nil || q.TotalMS > bestTotal(m, best) {
			best = &Break{Metric: SLOMetricP95, Fingerprint: q.Fingerprint, Query: q.Query, Base: bq.P95MS, Value: q.P95MS, Waits: q.Waits}
		}
	}
	return best
}

func bestTotal(m Measurement, b *Break) float64 {
	q, _ := findQuery(m.Queries, b.Fingerprint)
	return q.TotalMS
}

func latency(q Query, m SLOMetric) float64 {
	switch m {
	case SLOMetricP50:
		return q.P50MS
	case SLOMetricP95:
		return q.P95MS
	case SLOMetricP99:
		return q.P99MS
	case SLOMetricMean:
		return q.MeanMS
	}
	return 0
}
