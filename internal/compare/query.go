package compare

import (
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// comparer judges one query across the runs of both sides.
type comparer struct {
	o              Options
	mixed, useHist bool
	bSpans, cSpans []float64
	// bRunMS and bServerRunMS are the baseline's time per run, of the
	// results' durations and of pg_stat_statements (medians over its
	// runs; 0 without): what a slower mean's added time is a share of
	// (Effect.AddedShare).
	bRunMS, bServerRunMS float64
	// bAppRunMS is the same of its round trips (Options.JudgeLevel).
	bAppRunMS float64
	// tests is how many figures the comparison judges (the mean and
	// the p95 of every query judged): the family whose chance of any
	// change the calls cannot carry is held at Alpha/2 (CallsEvidence).
	tests int
	// roundNoise is the noise from round to round of the mean and of
	// the p95, pooled over every query judged (poolRoundNoise); absent
	// without histograms or runs enough for a rank interval.
	roundNoise map[Metric]stats.RoundNoise
	// source is the level of the results' durations; bWork and cWork
	// each side's pg_stat_statements figures by run, bApp and cApp
	// its round trips by run (levels.go); measured: the noise is.
	source       LatencySource
	bWork, cWork workRows
	bApp, cApp   []map[string]*Query
	// appWindowed are the queries some run's round trips of were taken
	// within its schedule window (windowRows).
	appWindowed map[string]bool
	measured    bool
	// hist is the comparison's decoded histograms (histCache).
	hist histCache
	// pairs are the runs beside each other in time (runPairs).
	pairs [][2]int
}

// poolRoundNoise measures the rounds' noise of the mean and of the p95
// over every query the comparison judges, both sides: each side of each
// query is a group of runs whose logarithms vary by the rounds' noise
// and by each run's calls (their bounds at the family's level), which
// stats.PooledRoundNoise tells apart. Three rounds of one query cannot
// tell its noise; the rehearsal's queries together can.
func (c *comparer) poolRoundNoise(base, cand []*Run) {
	alpha := stats.CallsAlpha(c.o.Alpha, c.tests)
	c.roundNoise = map[Metric]stats.RoundNoise{}
	for _, m := range []Metric{MetricMean, MetricP95} {
		var groups []stats.LogRuns
		for _, fp := range fingerprints(append(slices.Clone(base), cand...)) {
			b, k := rows(base, fp), rows(cand, fp)
			bSome, _ := present(b)
			cSome, _ := present(k)
			if !bSome || !cSome || minTimed(b) < c.o.MinCalls || minTimed(k) < c.o.MinCalls {
				continue
			}
			for _, side := range [][]*Query{b, k} {
				if g, ok := c.logRuns(side, m, alpha, 0); ok {
					groups = append(groups, g)
				}
			}
		}
		c.roundNoise[m] = stats.PooledRoundNoise(groups)
	}
}

// logRuns are a side's runs of metric m on the log scale with their
// calls' variance, from their bounds at one-sided level alpha
// (stats.LogRunsOf), less ms taken out of each run's figure and bounds
// (the log's per-call overhead, QueryLevels.LogP95; 0 for the figures as
// measured); false when a histogram does not decode.
func (c *comparer) logRuns(rows []*Query, m Metric, alpha, less float64) (stats.LogRuns, bool) {
	var figs []float64
	var bds []stats.Bounds
	for _, q := range rows {
		if q == nil || q.TimedCalls == 0 {
			continue
		}
		bd, _, ok := c.runBounds(q, m, alpha)
		if !ok {
			return stats.LogRuns{}, false
		}
		// At the values' resolution, as the runs' own test takes them.
		figs, bds = append(figs, math.Max(metricOf(q, m)-less, msResolution)), append(bds, lessBounds(bd, less))
	}
	return stats.LogRunsOf(figs, bds, alpha), true
}

// overhead is the per-call overhead taken out of each run's figure, of
// the baseline's runs and of the candidate's: the log's durations less
// what pg_stat_statements counts (QueryLevels.LogP95). The zero value
// takes nothing out: the figures as measured.
type overhead struct{ b, k float64 }

// lessValues are values(rows, m) with less ms taken out of each,
// msResolution at least; values itself for less 0.
func lessValues(rows []*Query, m Metric, less float64) []float64 {
	vs := values(rows, m)
	if less == 0 {
		return vs
	}
	for i, v := range vs {
		vs[i] = math.Max(v-less, msResolution)
	}
	return vs
}

// lessBounds are a run's bounds with less ms taken out of each,
// msResolution at least, as a duration alike for every call moves them;
// a bound the calls could not give (0, +Inf) stays.
func lessBounds(bd stats.Bounds, less float64) stats.Bounds {
	if less == 0 {
		return bd
	}
	if bd.Low > 0 {
		bd.Low = math.Max(bd.Low-less, msResolution)
	}
	if !math.IsInf(bd.High, 1) {
		bd.High = math.Max(bd.High-less, msResolution)
	}
	return bd
}

// figures are a side's figures for a query from each run's row (nil where
// a run lacks it) and each run's span.
func figures(rows []*Query, spans []float64) *Figures {
	n := len(rows)
	if n == 1 {
		q := rows[0]
		f := &Figures{Calls: q.Calls, Errors: q.Errors, Latency: q.Latency, MaxMS: q.MaxMS}
		if q.Calls > 0 {
			f.ErrorRatePct = 100 * float64(q.Errors) / float64(q.Calls)
		}
		if spans[0] > 0 {
			f.CallsPerS = float64(q.Calls) / spans[0]
		}
		return f
	}
	var calls, errs, timed []int64
	var total, mean, p50, p95, p99, maxMS, rate, perS []float64
	f := &Figures{}
	for i, q := range rows {
		rf := RunFigures{}
		if q != nil {
			rf = RunFigures{Calls: q.Calls, Errors: q.Errors, Latency: q.Latency}
			maxMS = append(maxMS, q.MaxMS)
			if q.Calls > 0 {
				rate = append(rate, 100*float64(q.Errors)/float64(q.Calls))
			}
			if spans[i] > 0 {
				perS = append(perS, float64(q.Calls)/spans[i])
			}
		}
		f.Runs = append(f.Runs, rf)
		calls, errs, timed = append(calls, rf.Calls), append(errs, rf.Errors), append(timed, rf.TimedCalls)
		total = append(total, rf.TotalMS)
		if rf.TimedCalls > 0 {
			mean, p50, p95, p99 = append(mean, rf.MeanMS), append(p50, rf.P50MS), append(p95, rf.P95MS), append(p99, rf.P99MS)
		}
	}
	f.Calls, f.Errors, f.TimedCalls = medianInt(calls), medianInt(errs), medianInt(timed)
	f.TotalMS = median0(total)
	f.MeanMS, f.P50MS, f.P95MS, f.P99MS, f.MaxMS = median0(mean), median0(p50), median0(p95), median0(p99), median0(maxMS)
	f.ErrorRatePct, f.CallsPerS = median0(rate), median0(perS)
	cf := make([]float64, len(calls))
	for i, c := range calls {
		cf[i] = float64(c)
	}
	f.Spread = &Spread{Calls: spread0(cf), MeanMS: spread0(mean), P50MS: spread0(p50), P95MS: spread0(p95), P99MS: spread0(p99)}
	return f
}

// median0 is the median, 0 for none.
func median0(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return stats.Median(xs)
}

// spread0 is stats.Spread, 0 where it is not a number.
func spread0(xs []float64) float64 {
	s := stats.Spread(xs)
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return 0
	}
	return s
}

// metricOf reads metric m from a row.
func metricOf(q *Query, m Metric) float64 {
	v, _ := latencyOf(m, q.MeanMS, q.P50MS, q.P95MS, q.P99MS)
	return v
}

// values are the runs' values of metric m, from the runs that timed the
// query.
func values(rows []*Query, m Metric) []float64 {
	var out []float64
	for _, q := range rows {
		if q != nil && q.TimedCalls > 0 {
			out = append(out, metricOf(q, m))
		}
	}
	return out
}

func minTimed(rows []*Query) int64 {
	var n int64 = math.MaxInt64
	for _, q := range rows {
		if q == nil {
			return 0
		}
		n = min(n, q.TimedCalls)
	}
	return n
}

func present(rows []*Query) (some, all bool) {
	all = true
	for _, q := range rows {
		if q == nil {
			all = false
		} else {
			some = true
		}
	}
	return some, all
}

func (c *comparer) diff(b, k []*Query) QueryDiff {
	d := QueryDiff{BaselineRows: b, CandidateRows: k, MixedLatency: c.mixed}
	bSome, bAll := present(b)
	cSome, cAll := present(k)
	first := firstRow(b)
	if first == nil {
		first = firstRow(k)
	}
	d.Fingerprint, d.Query = first.Fingerprint, first.Query
	switch {
	case !cSome:
		d.Status, d.Baseline = StatusOnlyBaseline, figures(b, c.bSpans)
		return d
	case !bSome:
		d.Status, d.Candidate = StatusOnlyCandidate, figures(k, c.cSpans)
		return d
	}
	d.Baseline, d.Candidate = figures(b, c.bSpans), figures(k, c.cSpans)
	bf, cf := d.Baseline, d.Candidate
	d.Ratio = &Ratios{Mean: ratio(cf.MeanMS, bf.MeanMS), P50: ratio(cf.P50MS, bf.P50MS), P95: ratio(cf.P95MS, bf.P95MS), P99: ratio(cf.P99MS, bf.P99MS)}
	d.Factor = d.Ratio.Mean
	bCalls, bErrors := callsAndErrors(b)
	kCalls, kErrors := callsAndErrors(k)
	d.ErrorsP = proportionIncrease(bErrors, bCalls, kErrors, kCalls)
	if !bAll || !cAll {
		d.Reasons = append(d.Reasons, ReasonMissingInRun)
	}
	if minTimed(b) < c.o.MinCalls || minTimed(k) < c.o.MinCalls {
		d.Status = StatusTooFewCalls
		d.Reasons = append(d.Reasons, ReasonTooFewCalls)
		return d
	}
	d.Effects = &Effects{}
	for _, m := range []Metric{MetricMean, MetricP50, MetricP95, MetricP99} {
		e, unreadable := c.effect(b, k, m, cf.TimedCalls, overhead{})
		*d.Effects.Of(m) = e
		if unreadable && m == MetricMean {
			d.Reasons = append(d.Reasons, ReasonHistogramUnreadable)
		}
	}
	c.levels(&d, b, k)
	c.roundsEvidence(&d)
	if bf.TimedCalls > 0 && cf.TimedCalls > 0 {
		d.AddedMS = AddedMS(MetricMean, d.Effects.Mean.DeltaMS, cf.TimedCalls)
		d.TailAddedMS = AddedMS(MetricP95, d.Effects.P95.DeltaMS, cf.TimedCalls)
	}
	c.judge(&d)
	c.promote(&d)
	return d
}

// effect is the change of metric m over the runs, with o taken out of
// each run's figure (the log's per-call overhead, QueryLevels.LogP95; the
// zero overhead for the figures as measured): one judgement for both.
func (c *comparer) effect(b, k []*Query, m Metric, calls int64, o overhead) (Effect, bool) {
	bv, kv := lessValues(b, m, o.b), lessValues(k, m, o.k)
	so := stats.Options{Alpha: c.o.Alpha, MinEffect: c.o.MinEffect, DefaultNoise: c.o.Noise.of(m), Min: msResolution}
	unreadable := false
	if c.useHist && stats.Level(len(b), len(k), c.o.Alpha) == 0 {
		// Too few runs for an interval over them (one or two a side):
		// what the calls of the runs say of the figure's sampling
		// error, beside the default noise floor. A p95 of 48 calls
		// rests on its three slowest, and two runs do not average
		// that away.
		sb, okB := c.runsLogSE(b, m, o.b)
		sk, okK := c.runsLogSE(k, m, o.k)
		so.WithinLog = math.Sqrt(sb*sb + sk*sk)
		unreadable = !okB || !okK
	}
	r := stats.Effect(bv, kv, so)
	if m == MetricMean && len(b) == 1 && len(k) == 1 {
		r = robustMean(b[0], k[0], r, so)
	}
	e := effectOf(r, stats.Median(kv)-stats.Median(bv))
	e.NextRun = nextRun(bv, kv, &e.Estimate, c.o.Alpha)
	if (m == MetricMean || m == MetricP95) && o == (overhead{}) {
		// The figures as measured (the log's less its overhead is
		// context beside them).
		e.MinDetectable = finite(c.minDetectable(b, k, m))
	}
	if m == MetricMean {
		e.setShare(stats.Median(bv), calls, c.bRunMS)
	}
	if (m == MetricMean || m == MetricP95) && r.RankInterval && c.useHist && e.Change == ChangeSlower && e.Beyond &&
		(e.pastMSFloor(c.o.MinEffectMS, c.o.MinTimeShare) || len(c.o.Rules) > 0) {
		// The runs call the figure slower: the calls inside them must
		// carry it too, at the family's level; under the per-call
		// floor, a rule may still read it (Effect.carriedBeyond).
		if ev, ok := c.callsEvidence(b, k, m, o); ok {
			e.setEvidence(ev, c.o.MinEffectMS, c.o.MinTimeShare)
		}
	}
	if (m == MetricMean || m == MetricP95) && r.RankInterval && c.useHist && e.Change == ChangeFaster && e.Beyond && -e.DeltaMS >= c.o.MinEffectMS {
		// The same evidence of a change the other way, which a fix's
		// verdict claims as a gain (Effect.Faster).
		if ev, ok := c.callsEvidence(b, k, m, o); ok {
			e.Faster = ev
		}
	}
	return e, unreadable
}

// callsEvidence is the rank interval over the runs of metric m with each
// run's figure at the bounds its calls give it (stats.CallsInterval), each
// bound one-sided at stats.CallsAlpha of the comparison's tests; false
// when a histogram does not decode. With an overhead o taken out of the
// runs' figures, it is out of their bounds too, and the rounds' noise,
// pooled over the figures as measured (relative: a factor), is widened
// by what taking it out does to a relative spread (the baseline's
// figure over the figure without it): 0.3 ms +-3% less 0.2 ms is 0.1 ms
// +-9%.
func (c *comparer) callsEvidence(b, k []*Query, m Metric, o overhead) (*CallsEvidence, bool) {
	ev := &CallsEvidence{Alpha: stats.CallsAlpha(c.o.Alpha, c.tests), Tests: c.tests}
	side := func(rows []*Query, baseline bool) ([]stats.Bounds, bool) {
		var out []stats.Bounds
		for _, q := range rows {
			if q == nil || q.TimedCalls == 0 {
				continue
			}
			bd, few, ok := c.runBounds(q, m, ev.Alpha)
			if !ok {
				return nil, false
			}
			less := o.k
			if baseline {
				less = o.b
			}
			bd = lessBounds(bd, less)
			// A slower claim rests on the baseline's upper bounds
			// and the candidate's lower ones.
			if few && (baseline && math.IsInf(bd.High, 1) || !baseline && bd.Low <= 0) {
				ev.TooFewCalls = true
			}
			out = append(out, bd)
		}
		return out, true
	}
	bx, okB := side(b, true)
	kx, okK := side(k, false)
	if !okB || !okK {
		return nil, false
	}
	if ev.TooFewCalls && m == MetricP95 {
		ev.MinCalls = stats.MinCallsForQuantile(0.95, ev.Alpha)
	}
	low, high, ok := stats.CallsInterval(bx, kx, c.o.Alpha)
	if !ok {
		return nil, false
	}
	ev.Low, ev.High = low, finite(high)
	// The same runs against the rounds' noise of the whole comparison.
	noise, pooled := c.roundNoise[m]
	if !pooled {
		// Not measured (no histograms, too few runs): only the calls
		// decide, as before the pooled noise.
		ev.FamilyLow, ev.FamilyHigh = ev.Low, ev.High
		return ev, true
	}
	bl, okB := c.logRuns(b, m, ev.Alpha, o.b)
	kl, okK := c.logRuns(k, m, ev.Alpha, o.k)
	if !okB || !okK {
		return nil, false
	}
	if v := median0(values(b, m)); o.b > 0 && v > 0 {
		f := v / math.Max(v-o.b, msResolution)
		noise.Tau2 *= f * f
	}
	ev.RoundNoise, ev.RoundNoiseDF = noise.Factor(), noise.DF
	if _, flo, fhi, ok := stats.FamilyInterval(bl, kl, noise, c.o.Alpha, c.tests); ok {
		ev.FamilyLow, ev.FamilyHigh = flo, finite(fhi)
	} else {
		ev.FamilyLow, ev.FamilyHigh = 0, finite(math.Inf(1))
	}
	return ev, true
}

// runBounds are the bounds of a run's metric m from its calls, each
// one-sided at alpha: the order statistics bracketing the p95 read from
// the histogram at their ranks (stats.QuantileRanks), or the mean's
// delta-method bounds. few is set when the calls are too few for a
// bound (then 0 or +Inf); ok is false when the histogram does not
// decode.
func (c *comparer) runBounds(q *Query, m Metric, alpha float64) (b stats.Bounds, few, ok bool) {
	bs, err := c.buckets(q)
	if err != nil || len(bs) == 0 {
		return stats.Bounds{}, false, false
	}
	var n int64
	var sum, sum2 float64
	for _, b := range bs {
		v, c := float64(b.ValueUS)/1000, float64(b.Count)
		n += b.Count
		sum += v * c
		sum2 += v * v * c
	}
	if m == MetricMean {
		mean := sum / float64(n)
		sd := 0.0
		if n > 1 {
			sd = math.Sqrt(math.Max(0, (sum2-float64(n)*mean*mean)/float64(n-1)))
		}
		b := stats.MeanBounds(q.MeanMS, sd, n, alpha)
		return b, n < 2, true
	}
	lo, hi := stats.QuantileRanks(n, 0.95, alpha)
	b = stats.Bounds{Low: 0, High: math.Inf(1)}
	if lo >= 1 {
		b.Low = math.Max(valueAtRank(bs, float64(lo)), msResolution)
	}
	if hi <= n {
		b.High = math.Max(valueAtRank(bs, float64(hi)), msResolution)
	}
	return b, lo < 1 || hi > n, true
}

// robustMean makes a one-run change of the mean survive its slowest
// calls: the mean of each run is taken again without its slowest call,
// and the interval is the union of both intervals; a change counts only
// when both means show it. A mean carried by one call (a checkpoint, a
// lock wait of a dozen calls) is not a change of the query.
func robustMean(b, k *Query, full stats.Result, so stats.Options) stats.Result {
	trim := func(q *Query) float64 {
		if q.TimedCalls < 2 {
			return q.MeanMS
		}
		return math.Max(q.TotalMS-q.MaxMS, 0) / float64(q.TimedCalls-1)
	}
	t := stats.Effect([]float64{trim(b)}, []float64{trim(k)}, so)
	r := full
	r.Low, r.High = math.Min(full.Low, t.Low), math.Max(full.High, t.High)
	r.Change, r.Beyond = stats.Same, false
	switch {
	case r.Low > 1:
		r.Change = stats.Higher
		r.Beyond = math.Min(full.Ratio, t.Ratio) >= r.Floor
	case r.High < 1:
		r.Change = stats.Lower
		r.Beyond = math.Max(full.Ratio, t.Ratio) <= 1/r.Floor
	}
	return r
}

func finite(v float64) float64 {
	if math.IsInf(v, 1) || math.IsNaN(v) {
		return math.MaxFloat64
	}
	return v
}

// judge gives a tested query its status. A label never contradicts its
// figures: a regression's metric is slower beyond noise, by its floor
// and by MinEffectMS, so its factor is above 1 and the time it adds is
// positive; a query whose tail grew while its mean did not is a tail
// regression, ranked by what the tail added; an improvement has its mean
// faster beyond noise and the floors, with neither its median nor its
// tail slower beyond noise. The mean and the p95 are judged here; the
// p50 and the p99 only through a broken rule (promote).
func (c *comparer) judge(d *QueryDiff) {
	e := d.Effects
	msFloor := c.o.MinEffectMS
	slower := func(m Metric) bool {
		x := e.Of(m)
		return x.Change == ChangeSlower && x.Beyond && x.pastMSFloor(msFloor, c.o.MinTimeShare) && x.Calls == nil || c.breaksUnderFloors(d, m) ||
			m == MetricP95 && c.breaksWithoutOverhead(d, m)
	}
	faster := func(x *Effect) bool { return x.Change == ChangeFaster && x.Beyond && -x.DeltaMS >= msFloor }
	switch {
	case slower(MetricMean):
		d.Status, d.Regressed, d.Factor, d.ImpactMS = StatusRegressed, MetricMean, e.Mean.Ratio, d.AddedMS
		if e.P50.Change == ChangeFaster {
			d.Reasons = append(d.Reasons, ReasonMedianFasterMeanSlower)
		}
	case slower(MetricP95):
		d.Status, d.Regressed, d.Factor, d.ImpactMS = StatusTailRegressed, MetricP95, e.P95.Ratio, d.TailAddedMS
		if e.Mean.Change == ChangeFaster {
			d.Reasons = append(d.Reasons, ReasonMeanFasterTailSlower)
		}
	case faster(&e.Mean) && e.P50.Change != ChangeSlower && e.P95.Change != ChangeSlower:
		d.Status = StatusImproved
	case faster(&e.Mean):
		d.Status = StatusSmallChange
		d.Reasons = append(d.Reasons, ReasonFasterButSlowerElsewhere)
	case e.Mean.Change != ChangeNone || e.P50.Change != ChangeNone || e.P95.Change != ChangeNone:
		d.Status = StatusSmallChange
		// The reason is about the figure a reader looks for: a
		// slower one first.
		d.Changed = MetricMean
		for _, m := range []Metric{MetricMean, MetricP95, MetricP50} {
			if e.Of(m).Change == ChangeSlower {
				d.Changed = m
				break
			}
		}
		// A figure slower beyond every floor that its calls could not
		// carry is what the reader looks for first: the one that would
		// have been a regression.
		for _, m := range []Metric{MetricMean, MetricP95} {
			if e.Of(m).Calls != nil {
				d.Changed = m
				break
			}
		}
		if e.Of(d.Changed).Change != ChangeSlower {
			for _, m := range []Metric{MetricMean, MetricP50, MetricP95} {
				if e.Of(m).Change != ChangeNone {
					d.Changed = m
					break
				}
			}
		}
		d.Reasons = append(d.Reasons, underWhich(e.Of(d.Changed), c.o.MinEffect, msFloor))
	default:
		d.Status = StatusUnchanged
	}
}

// breaksUnderFloors reports whether figure m of d, under the per-call
// floors (MinEffectMS, MinTimeShare), breaks a rule on m all the same:
// its interval and its calls' evidence lie wholly beyond the rule's
// threshold (Effect.carriedBeyond). Such a query is a regression with
// ReasonBreaksRuleUnderFloors, so that its label never reads "small
// change" beside the rule it breaks; without rules the floors decide.
func (c *comparer) breaksUnderFloors(d *QueryDiff, m Metric) bool {
	x := d.Effects.Of(m)
	if x == nil || x.pastMSFloor(c.o.MinEffectMS, c.o.MinTimeShare) {
		return false
	}
	for _, r := range c.o.Rules {
		if r.Metric != m {
			continue
		}
		if bv := figureOf(d.Baseline, m); bv > 0 && x.carriedBeyond(ruleThreshold(r, bv)) {
			if !slices.Contains(d.Reasons, ReasonBreaksRuleUnderFloors) {
				d.Reasons = append(d.Reasons, ReasonBreaksRuleUnderFloors)
			}
			return true
		}
	}
	return false
}

// breaksWithoutOverhead reports whether a rule on percentile m of d is
// broken by the log's figure with its per-call overhead taken out and
// not by the log's own (Rule.checkWithoutOverhead), adding
// ReasonBreaksRuleWithoutOverhead: such a query is a regression of that
// figure, so that its label never reads "small change" beside the rule
// it breaks.
func (c *comparer) breaksWithoutOverhead(d *QueryDiff, m Metric) bool {
	for _, r := range c.o.Rules {
		if r.Metric != m {
			continue
		}
		if _, broken := r.checkWithoutOverhead(d, settingsOf(c.o)); broken {
			if !slices.Contains(d.Reasons, ReasonBreaksRuleWithoutOverhead) {
				d.Reasons = append(d.Reasons, ReasonBreaksRuleWithoutOverhead)
			}
			return true
		}
	}
	return false
}

// promote makes a judged query that breaks a rule on the p50 or the p99
// a regression of that figure (a tail regression for the p99), so that
// it is never "unchanged" beside the failed verdict. Only a broken rule
// does that: naming a figure in a rule adds no regression that the rule
// itself would not fail on.
func (c *comparer) promote(d *QueryDiff) {
	if d.Effects == nil || d.Status.Regression() {
		return
	}
	e, calls := d.Effects, d.Candidate.TimedCalls
	for _, r := range c.o.Rules {
		if r.Metric != MetricP50 && r.Metric != MetricP99 {
			continue
		}
		br, broken := r.check(d, settingsOf(c.o), nil)
		if !broken {
			continue
		}
		d.Reasons = slices.DeleteFunc(d.Reasons, underAFloor)
		if br.WithoutOverhead != nil {
			d.Reasons = append(d.Reasons, ReasonBreaksRuleWithoutOverhead)
		}
		d.Changed = ""
		if r.Metric == MetricP50 {
			// The typical call's change, over every call.
			d.Status, d.Regressed, d.Factor, d.ImpactMS = StatusRegressed, MetricP50, e.P50.Ratio, AddedMS(MetricP50, e.P50.DeltaMS, calls)
		} else {
			// The slowest 1% of calls, as the p95's 5%.
			d.Status, d.Regressed, d.Factor, d.ImpactMS = StatusTailRegressed, MetricP99, e.P99.Ratio, AddedMS(MetricP99, e.P99.DeltaMS, calls)
		}
		return
	}
}

// underAFloor is a reason of a small change's figure.
func underAFloor(r Reason) bool {
	return r == ReasonUnderEffectFloor || r == ReasonUnderNoiseFloor || r == ReasonUnderMSFloor || r == ReasonNotJudged
}

// underWhich says which floor a change beyond the test stayed under, or
// that it cleared them all on a figure the verdict does not judge.
func underWhich(x *Effect, minEffect, msFloor float64) Reason {
	r := x.Ratio
	if r < 1 && r > 0 {
		r = 1 / r
	}
	switch {
	case x.Calls != nil && x.Calls.TooFewCalls:
		return ReasonTailTooFewCalls
	case x.Calls != nil && x.Calls.Low <= 1:
		return ReasonWithinCallsNoise
	case x.Calls != nil:
		return ReasonWithinRoundNoise
	case r < 1+minEffect:
		return ReasonUnderEffectFloor
	case r < x.Floor:
		return ReasonUnderNoiseFloor
	case math.Abs(x.DeltaMS) < msFloor:
		return ReasonUnderMSFloor
	default:
		return ReasonNotJudged
	}
}

// runsLogSE is the standard error of the mean of the logarithms of
// metric m over runs, less ms taken out of each run's (the log's per-call
// overhead; 0 for the figures as measured), from each run's own (logSE):
// one run's for one run.
func (c *comparer) runsLogSE(runs []*Query, m Metric, less float64) (float64, bool) {
	var sum2 float64
	ok := true
	for _, q := range runs {
		se, good := c.logSE(q, m, less)
		sum2 += se * se
		ok = ok && good
	}
	if len(runs) == 0 {
		return 0, ok
	}
	return math.Sqrt(sum2) / float64(len(runs)), ok
}

// logSE is the standard error of the logarithm of metric m of a run,
// from its calls: the delta method for the mean (the calls' standard
// deviation over the mean, over √n), the distribution-free rank interval
// for a quantile; less ms taken out of every call (the log's per-call
// overhead; 0 for the figures as measured). False when the histogram
// does not decode (then 0).
func (c *comparer) logSE(q *Query, m Metric, less float64) (float64, bool) {
	if q == nil || q.TimedCalls == 0 || q.Hist == "" {
		return 0, true
	}
	bs, err := c.buckets(q)
	if err != nil {
		return 0, false
	}
	var n, sum, sum2 float64
	for _, b := range bs {
		v, c := float64(b.ValueUS)/1000, float64(b.Count)
		n += c
		sum += v * c
		sum2 += v * v * c
	}
	if n < 2 {
		return 0, true
	}
	if m == MetricMean {
		mean := sum / n
		if mean <= 0 {
			return 0, true
		}
		sd := math.Sqrt(math.Max(0, (sum2-n*mean*mean)/(n-1)))
		return sd / math.Max(mean-less, msResolution) / math.Sqrt(n), true
	}
	p := map[Metric]float64{MetricP50: 0.5, MetricP95: 0.95, MetricP99: 0.99}[m]
	// The ranks between which the p-quantile lies with about 95%
	// probability (normal approximation to the binomial); their spread
	// on the log scale over 2·1.96 is the standard error.
	const z = 1.96
	w := z * math.Sqrt(n*p*(1-p))
	lo, hi := valueAtRank(bs, math.Max(1, math.Floor(n*p-w))), valueAtRank(bs, math.Min(n, math.Ceil(n*p+w)))
	lo, hi = math.Max(lo-less, msResolution), math.Max(hi-less, msResolution)
	return math.Log(hi/lo) / (2 * z), true
}

// valueAtRank is the value in ms of the call of rank r (1-based) in the
// buckets.
func valueAtRank(bs []Bucket, r float64) float64 {
	var cum float64
	for _, b := range bs {
		if cum += float64(b.Count); cum >= r {
			return float64(b.ValueUS) / 1000
		}
	}
	return float64(bs[len(bs)-1].ValueUS) / 1000
}

// callsAndErrors are the calls and the errors of rows, over the runs.
func callsAndErrors(rows []*Query) (calls, errs int64) {
	for _, q := range rows {
		if q != nil {
			calls += q.Calls
			errs += q.Errors
		}
	}
	return calls, errs
}
