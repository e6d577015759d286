package compare

import (
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// The application's next run, and what the rounds could tell (issue 76).
//
// A figure's interval (Estimate.Low-High) is that of the change of the
// mean of the rounds: more rounds narrow it towards the true change. The
// verdict judges on it, and only on it: a rule is broken where it lies
// beyond the threshold, cleared where it ends under. What the
// application will see on its next run of the same length varies by the
// rounds' own spread besides, however many rounds were run: NextRun is
// that wider interval, shown beside the other and never judged (wider,
// it would only leave more rules undecided; narrower it never is).
//
// MinDetectable says how small a change the rounds could have told from
// none at the level judged: a query whose figure did not change by more
// is "~" because the rehearsal could not see it, not because it is
// proven unchanged. Report.Resolution says it for the run.

// NextRun is the interval of the ratio the application would see on its
// next run on the candidate against its next on the control, each as
// long as one of the rehearsal's rounds (stats.PredictInterval, at the
// comparison's level: 90% by default), taken together with the mean's
// interval so that it never claims less than that one.
type NextRun struct {
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	Level float64 `json:"level"`
}

// nextRun is the predictive interval of a figure over the runs bv and kv
// whose mean's interval is e's; nil without runs enough for the mean's
// rank interval.
func nextRun(bv, kv []float64, e *Estimate, alpha float64) *NextRun {
	if e.Interval != IntervalRuns {
		return nil
	}
	_, low, high, ok := stats.PredictInterval(clampMS(bv), clampMS(kv), alpha)
	if !ok {
		return nil
	}
	return &NextRun{Low: math.Min(low, e.Low), High: finite(math.Max(high, e.High)), Level: 1 - alpha}
}

func clampMS(vs []float64) []float64 {
	out := make([]float64, len(vs))
	for i, v := range vs {
		out[i] = math.Max(v, msResolution)
	}
	return out
}

// Resolution is the smallest change of the mean and of the p95 a
// rehearsal's rounds could tell from none at the level the verdict
// judges (this look's, LookAlpha, with the family's Bonferroni share for
// the rounds' noise pooled over its queries), with DefaultPower (80%):
// as factors (1.12: +12%). ManyCalls* are those of a query whose calls
// are many enough to add nothing to the rounds' noise (the best any
// query reaches); Median* the median over the queries judged
// (QueryDiff's Effects' MinDetectable), Queries how many.
type Resolution struct {
	MeanManyCalls float64 `json:"mean_many_calls"`
	P95ManyCalls  float64 `json:"p95_many_calls"`
	MeanMedian    float64 `json:"mean_median"`
	P95Median     float64 `json:"p95_median"`
	Queries       int     `json:"queries"`
	Power         float64 `json:"power"`
	// Level is the two-sided level of the rank interval the rules are
	// judged on at this look (1 - LookAlpha).
	Level float64 `json:"level"`
	// MeanClears and P95Clears are the tightest thresholds (factors) of
	// a rule on the mean and on the p95 that an identical candidate
	// would clear on every query judged with DefaultPower (each query's
	// interval at the comparison's level ending under it with
	// DefaultPower to the 1/Queries, comparer.clears): the largest over
	// the queries, the one that needs it named (MeanClearsBy,
	// P95ClearsBy). A looser rule is one these rounds can pass; a
	// tighter one leaves identical sides undecided more often.
	MeanClears   float64 `json:"mean_clears"`
	MeanClearsBy string  `json:"mean_clears_by,omitempty"`
	P95Clears    float64 `json:"p95_clears"`
	P95ClearsBy  string  `json:"p95_clears_by,omitempty"`
}

// lookAlpha is the two-sided level of the rank interval this look's rules
// are judged on.
func (c *comparer) lookAlpha() float64 { return LookAlpha(c.o.Alpha, c.o.Look, c.o.Looks) }

// minDetectable is the smallest change of figure m of a query over the
// runs b and k (its own figures, as its Effect) the comparison could
// tell from none at this look's level with DefaultPower: the larger of
// what the rank interval over the runs needs (stats.RankDetectable over
// roundSD) and what the family interval needs (stats.MinDetectable over
// stats.FamilySE at the family's one-sided share). 0 (none) without the
// noise measured; +Inf where the calls are too few for a bound.
func (c *comparer) minDetectable(b, k []*Query, m Metric) float64 {
	if !c.measured {
		return 0
	}
	alpha := c.lookAlpha()
	sd, ok := c.roundSD(b, k, m)
	if !ok {
		return math.Inf(1)
	}
	rank := math.Exp(sd * stats.RankDetectable(len(values(b, m)), len(values(k, m)), alpha, stats.DefaultPower))
	noise, pooled := c.roundNoise[m]
	if !pooled || noise.DF == 0 {
		return rank
	}
	ca := stats.CallsAlpha(c.o.Alpha, c.tests)
	bl, okB := c.logRuns(b, m, ca, 0)
	kl, okK := c.logRuns(k, m, ca, 0)
	if !okB || !okK {
		return math.Inf(1)
	}
	se, ok := stats.FamilySE(bl, kl, noise)
	if !ok || math.IsInf(se, 1) {
		return math.Inf(1)
	}
	return math.Max(rank, stats.MinDetectable(se, noise.DF, stats.FamilyAlpha(alpha, c.tests), stats.DefaultPower))
}

// roundSD is the standard deviation of a round's logarithm of figure m
// of a query over the runs b and k: the rounds' noise pooled over the
// comparison's queries plus the query's calls' own sampling (their mean
// over its runs), or, without a pooled noise (no histograms), the runs'
// own spread pooled over both sides. False where a histogram does not
// decode, a run's calls are too few for a bound, or the runs give none.
func (c *comparer) roundSD(b, k []*Query, m Metric) (float64, bool) {
	noise, pooled := c.roundNoise[m]
	if !pooled || noise.DF == 0 {
		sd, _, ok := stats.LogSD(clampMS(values(b, m)), clampMS(values(k, m)))
		return sd, ok
	}
	ca := stats.CallsAlpha(c.o.Alpha, c.tests)
	bl, okB := c.logRuns(b, m, ca, 0)
	kl, okK := c.logRuns(k, m, ca, 0)
	if !okB || !okK {
		return 0, false
	}
	vars := append(slices.Clone(bl.Vars), kl.Vars...)
	var v float64
	for _, x := range vars {
		v += x
	}
	v /= float64(len(vars))
	if math.IsInf(v, 1) || math.IsNaN(v) {
		return 0, false
	}
	return math.Sqrt(noise.Tau2 + v), true
}

// clears is the tightest threshold (a factor) of a rule on figure m that
// identical sides' interval at the comparison's level (Alpha: a rule is
// cleared on it at every look) ends under with chance power, for a query
// over the runs b and k: the reach above 1 for identical normal rounds
// at that quantile of the interval that clears (clearsReach), or the
// paired interval's over the pairs' own spread (pairedClears), whichever
// is tighter. +Inf without one. Where roundSD has no figure because a
// run's calls are too few to bound it (the p95 of fewer than about 90
// calls at the calls' level), the runs' own spread stands in for it
// (stats.LogSD, as without histograms): clearing is decided on the runs'
// intervals alone, never on the calls' bounds, so such a query clears a
// rule as any other (percall's report query, 41 calls a round, stated
// p95>+inf% though its rounds' intervals cleared p95 rules).
func (c *comparer) clears(b, k []*Query, m Metric, power float64) float64 {
	bv, kv := values(b, m), values(k, m)
	sd, ok := c.roundSD(b, k, m)
	if !ok {
		if sd, _, ok = stats.LogSD(clampMS(bv), clampMS(kv)); !ok {
			return math.Inf(1)
		}
	}
	return math.Min(math.Exp(sd*c.clearsReach(len(bv), len(kv), power)), c.pairedClears(bv, kv, power))
}

// pairedClears is the tightest threshold the paired interval over the
// runs bv and kv (decide's pairedInterval, at a fifth of the
// comparison's level) ends under with chance power for identical sides:
// the spread of the pairs' differences (stats.PairedLogSD), which a
// drift of the machine over the rehearsal does not widen, times
// stats.PairedReach. A rule is cleared by whichever interval ends
// lower, so the tighter of this and the unpaired reach is a threshold
// identical sides clear with at least that chance. +Inf outside a
// rehearsal or without pairs (runPairs).
func (c *comparer) pairedClears(bv, kv []float64, power float64) float64 {
	if c.o.Looks == 0 || c.o.rankOnly || c.pairs == nil {
		return math.Inf(1)
	}
	sd, ok := stats.PairedLogSD(clampMS(bv), clampMS(kv), c.pairs)
	if !ok {
		return math.Inf(1)
	}
	return math.Exp(sd * stats.PairedReach(len(c.pairs), c.o.Alpha*stats.PairedAlphaShare, power))
}

// clearsReach is how far above 1, in standard deviations of a round's
// logarithm, the interval that clears a rule ends for identical sides of
// m and n rounds with chance power: in a rehearsal (Looks), the rank
// interval or the rounds' guarded Welch interval, whichever ends lower
// (decide's clearInterval; stats.ClearsReach); else the rank interval's
// (stats.RankDetectable, the interval being symmetric about no change).
func (c *comparer) clearsReach(m, n int, power float64) float64 {
	if c.o.Looks > 0 && !c.o.rankOnly {
		return stats.ClearsReach(m, n, c.o.Alpha, power)
	}
	return stats.RankDetectable(m, n, c.o.Alpha, power)
}

// runsDetectable is the smallest change (a factor) the rank interval
// over the runs bv and kv at two-sided level alpha tells from none with
// chance power, from their own spread (stats.LogSD): +Inf without one.
func runsDetectable(bv, kv []float64, alpha, power float64) float64 {
	sd, _, ok := stats.LogSD(clampMS(bv), clampMS(kv))
	if !ok {
		return math.Inf(1)
	}
	return math.Exp(sd * stats.RankDetectable(len(bv), len(kv), alpha, power))
}

// meanClears is clears for the mean of q, on the level its mean is
// judged on: the server's or the application's runs where it is one of
// them (judgeOn), the log's rows otherwise.
func (c *comparer) meanClears(q *QueryDiff, power float64) float64 {
	if lv := q.Levels; lv != nil && (lv.Judged == LevelServer || lv.Judged == LevelApplication) {
		lt := lv.Server
		if lv.Judged == LevelApplication {
			lt = lv.Application
		}
		if lt != nil {
			sd, _, ok := stats.LogSD(clampMS(lt.BaselineRunsMS), clampMS(lt.CandidateRunsMS))
			if !ok {
				return math.Inf(1)
			}
			return math.Min(math.Exp(sd*c.clearsReach(len(lt.BaselineRunsMS), len(lt.CandidateRunsMS), power)),
				c.pairedClears(lt.BaselineRunsMS, lt.CandidateRunsMS, power))
		}
	}
	return c.clears(q.BaselineRows, q.CandidateRows, MetricMean, power)
}

// resolution is the run's Resolution over its queries (m and n runs a
// side); nil without the noise measured.
func (c *comparer) resolution(m, n int, qs []QueryDiff) *Resolution {
	if !c.measured {
		return nil
	}
	alpha := c.lookAlpha()
	r := &Resolution{Power: stats.DefaultPower, Level: 1 - alpha}
	rank := stats.RankDetectable(m, n, alpha, stats.DefaultPower)
	many := func(metric Metric) float64 {
		noise, ok := c.roundNoise[metric]
		if !ok || noise.DF == 0 {
			return 0
		}
		tau := math.Sqrt(noise.Tau2)
		family := stats.MinDetectable(tau*math.Sqrt(1/float64(m)+1/float64(n)), noise.DF, stats.FamilyAlpha(alpha, c.tests), stats.DefaultPower)
		return finite(math.Max(math.Exp(rank*tau), family))
	}
	r.MeanManyCalls, r.P95ManyCalls = many(MetricMean), many(MetricP95)
	var means, p95s []float64
	for i := range qs {
		e := qs[i].Effects
		if e == nil || e.Mean.MinDetectable == 0 {
			continue
		}
		means, p95s = append(means, e.Mean.MinDetectable), append(p95s, e.P95.MinDetectable)
	}
	r.Queries = len(means)
	// Every query judged must clear a rule for the run to pass: each at
	// DefaultPower to the 1/Queries, so that independent queries all
	// clear with DefaultPower (queries that drift together, more often).
	power := math.Pow(stats.DefaultPower, 1/float64(max(r.Queries, 1)))
	for i := range qs {
		q := &qs[i]
		if q.Effects == nil || q.Effects.Mean.MinDetectable == 0 {
			continue
		}
		if f := finite(c.meanClears(q, power)); f > r.MeanClears {
			r.MeanClears, r.MeanClearsBy = f, q.Fingerprint
		}
		if f := finite(c.clears(q.BaselineRows, q.CandidateRows, MetricP95, power)); f > r.P95Clears {
			r.P95Clears, r.P95ClearsBy = f, q.Fingerprint
		}
	}
	if r.Queries > 0 {
		r.MeanMedian, r.P95Median = finite(stats.Median(means)), finite(stats.Median(p95s))
	}
	return r
}
