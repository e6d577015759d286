package compare

import (
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// Undecided rules. A rule's verdict on a query needs the query's figure
// on one side of the rule's threshold: broken (slower beyond noise and
// beyond the threshold, Rule.check) or clear of it (the figure's interval
// ends at or under the threshold). An interval that holds both a ratio
// under the threshold and one beyond it (1.4x and 2x under p95>+50%, or
// a 1.9x hidden under a control's noise floor of 2x) cannot tell: the
// query is undecided on that rule, never "no change". A rehearsal adds
// rounds while some query is undecided (Options.Look), and says
// "undecided" where its budget ended first.
//
// Adding rounds until a change is significant is optional stopping,
// which inflates false positives: every look is one more chance for
// noise to cross the line. The first look is the comparison as it
// always was (its rank interval at Alpha, the least three rounds a side
// can give); every later look judges at LookAlpha, Alpha shared out
// evenly over the later looks the budget allows (Bonferroni), so that
// the later looks together spend at most Alpha as the first did, and a
// rule broken at a later look is broken only where the figure's interval
// at that level (Welch's t over the rounds, lookInterval) excludes 1 as
// well. An interval too wide to reach that level with the rounds so far
// decides nothing. Clearing a rule claims no change, so it needs no
// share of Alpha: at every look a rule is clear of a query whose
// figure's interval at Alpha (the comparison's own, or the rounds'
// guarded Welch interval, clearInterval), or the rounds' paired
// interval at Alpha·stats.PairedAlphaShare (pairedInterval), ends at or
// under the threshold. A rule broken at a look
// whose noise is not measured (fewer rounds a side than a rank interval
// needs: the default noise floors judged it) is undecided while rounds
// may be added: on a loaded machine two rounds a side of identical
// targets once showed END 13.6x slower at p95, beyond the default floors.

// StatusUndecided: the query's figure may break a rule (Verdict.Undecided)
// and the rounds could not tell: its interval holds ratios on both sides
// of the rule's threshold, or, at a look after added rounds, the change
// that breaks the rule is not beyond noise at that look's level.
const StatusUndecided Status = "undecided"

// VerdictUndecided: no rule broken, but some query may break one and the
// rounds could not tell (Verdict.Undecided): not a pass.
const VerdictUndecided VerdictStatus = "undecided"

// ReasonMayBreakRule goes with StatusUndecided.
const ReasonMayBreakRule Reason = "may_break_rule"

// Undecided is a rule a query may break, as data; internal/report words
// it.
type Undecided struct {
	Rule        string `json:"rule"`
	Metric      Metric `json:"metric"`
	Fingerprint string `json:"fingerprint"`
	// Threshold is the rule's threshold as a ratio of the baseline's
	// figure (1.5 for +50%; for +Nms, 1 + N over the baseline's).
	Threshold float64 `json:"threshold"`
	// Ratio, Low and High are the figure's change and its interval at
	// Level (LookAlpha), which holds Threshold; High may be
	// math.MaxFloat64 (unbounded: too few rounds for that level).
	Ratio float64 `json:"ratio"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	Level float64 `json:"level"`
	// Where Low is above Threshold, the interval alone would decide:
	// what holds the threshold is then the calls' evidence at the
	// family's level (CallsLow-CallsHigh: each run bounded by its
	// calls, and the rounds' noise pooled over the comparison, over
	// Tests figures judged; CallsEvidence), or the control's noise
	// floor (NoiseFloor, the change within it), so that the figures
	// shown beside "undecided" hold the threshold as it says.
	CallsLow   float64 `json:"calls_low,omitempty"`
	CallsHigh  float64 `json:"calls_high,omitempty"`
	Tests      int     `json:"tests,omitempty"`
	NoiseFloor float64 `json:"noise_floor,omitempty"`
	// RoundsOnly: the runs keep no latency histograms
	// (WarnNoHistograms), so CallsLow-CallsHigh are the rank interval
	// over the runs alone at the family's level (roundsEvidence), no
	// calls bounding each run.
	RoundsOnly bool `json:"rounds_only,omitempty"`
	// OverheadMS is set where the figure is the log's percentile with
	// its per-call overhead taken out (QueryLevels.LogP95): the overhead
	// taken out of the baseline's runs, measured on the control.
	OverheadMS float64 `json:"overhead_ms,omitempty"`
}

// whatHolds fills u's CallsLow, CallsHigh and Tests, or its NoiseFloor,
// when its interval lies beyond its threshold: what of e holds it; hist
// says whether the runs keep histograms (else the evidence is the
// rounds' alone, RoundsOnly).
func (u *Undecided) whatHolds(e *Effect, hist bool) {
	if u.Low <= u.Threshold {
		return
	}
	ev := e.evidence
	if ev == nil {
		ev = e.Calls
	}
	switch {
	case ev != nil:
		u.CallsLow, u.CallsHigh, u.Tests = math.Min(ev.Low, ev.FamilyLow), finite(math.Max(ev.High, ev.FamilyHigh)), ev.Tests
		u.RoundsOnly = !hist
	case !e.Beyond:
		u.NoiseFloor = e.Floor
	}
}

// LookAlpha is the two-sided level of look (from 1) of at most looks:
// alpha at the first, alpha shared evenly over the later ones.
func LookAlpha(alpha float64, look, looks int) float64 {
	if look <= 1 || looks <= 1 {
		return alpha
	}
	return alpha / float64(looks-1)
}

// decidable says whether a rule's metric has an interval to decide on:
// the latency figures per call. Errors, work and total_ms rules are
// decided as they always were.
func decidable(m Metric) bool {
	return m == MetricMean || m == MetricP50 || m == MetricP95 || m == MetricP99
}

// ruleState is where a query stands on one rule.
type ruleState int

const (
	ruleClear ruleState = iota
	ruleBroken
	// ruleUnconfirmed: broken at Alpha, but not beyond noise at the
	// look's level.
	ruleUnconfirmed
	ruleUndecided
)

// MoreRoundsWouldTell says whether more rounds could decide a query the
// rounds so far leave undecided on a rule (Verdict.Undecided): when no
// rule is broken (VerdictUndecided), and also when another query has
// already broken one (VerdictFail), so that a rehearsal that fails on
// one query still names every query that breaks a rule rather than
// leaving the small ones undecided (issue 58). A diverged or incomplete
// comparison is not: more rounds would not judge it.
func (r *Report) MoreRoundsWouldTell() bool {
	if len(r.Verdict.Undecided) == 0 {
		return false
	}
	return r.Verdict.Status == VerdictUndecided || r.Verdict.Status == VerdictFail
}

// decide marks the queries whose interval holds a rule-breaking ratio
// and that break no rule as undecided (Verdict.Undecided), and, at a
// look after added rounds, a query's broken rule that its figure's
// interval at LookAlpha does not carry. It runs before rank and verdict,
// which then count an undecided query as neither a regression nor a
// rule broken.
func (r *Report) decide(o Options) {
	if o.Looks == 0 || len(r.Rules) == 0 || r.Verdict.LatencyNotJudged != nil {
		return
	}
	alpha := LookAlpha(o.Alpha, o.Look, o.Looks)
	if o.Looks > 1 {
		r.Verdict.Look, r.Verdict.Looks, r.Verdict.Alpha = o.Look, o.Looks, alpha
	}
	for i := range r.Queries {
		q := &r.Queries[i]
		if q.Effects == nil || q.Baseline == nil || q.Candidate == nil || q.Status == StatusSlowerWhileBusier || q.Status == StatusTooFewCalls {
			continue
		}
		var und []Undecided
		confirmed, unconfirmed := false, false
		for _, rule := range r.Rules {
			if !decidable(rule.Metric) || q.notRuled(rule) {
				continue
			}
			st, u := r.ruleState(q, rule, o, alpha)
			switch st {
			case ruleBroken:
				confirmed = true
			case ruleUnconfirmed:
				unconfirmed = true
				und = append(und, u)
			case ruleUndecided:
				und = append(und, u)
			}
		}
		if confirmed || len(und) == 0 {
			continue
		}
		r.Verdict.Undecided = append(r.Verdict.Undecided, und...)
		if q.Status.Regression() && !unconfirmed {
			// A regression under the threshold that may break it:
			// the label stands, the rule is undecided.
			continue
		}
		q.Status, q.Regressed, q.ImpactMS, q.Changed = StatusUndecided, "", 0, ""
		// Not a regression now: no reason says it breaks a rule.
		q.Reasons = slices.DeleteFunc(q.Reasons, func(r Reason) bool { return r == ReasonBreaksRuleWithoutOverhead })
		q.Reasons = append(q.Reasons, ReasonMayBreakRule)
	}
}

// ruleState is where q stands on latency rule rule at level alpha, with
// the undecided entry when it is not clear or broken: on the figure that
// breaks it (the rule's own, the figure q regressed on, or the log's
// percentile without its per-call overhead, Rule.check), else on the
// rule's own figure, and, where that is clear of the threshold, on the
// log's percentile without the overhead, when the log's own carries a
// change (Effect.carried: the overhead taken out says how far it goes):
// its interval holding the threshold leaves the rule undecided too.
func (r *Report) ruleState(q *QueryDiff, rule Rule, o Options, alpha float64) (ruleState, Undecided) {
	br, broken := rule.check(q, r.Settings, nil)
	m := rule.Metric
	if broken && br.Figure != "" {
		m = br.Figure
	}
	f, less := q.ruleFigure(m, false), q.ruleFigure(m, true)
	if broken && br.WithoutOverhead != nil {
		f = less
	}
	st, u := r.figureState(f, rule, broken, br.UnderFloors, o, alpha)
	if broken || st != ruleClear || less.e == nil || !q.Effects.Of(m).carried() {
		return st, u
	}
	return r.figureState(less, rule, false, false, o, alpha)
}

// ruleFigure is a figure a rule reads: its change, its baseline's median
// and each side's runs at the level judged, and the log's per-call
// overhead taken out of the runs (0 for the level's own figure).
type ruleFigure struct {
	q          *QueryDiff
	m          Metric
	e          *Effect
	bv         float64
	bRuns      []float64
	kRuns      []float64
	overheadMS float64
}

// ruleFigure is q's figure m as a rule reads it: its own (judgedRuns),
// or, with less, the log's percentile without its per-call overhead
// (QueryDiff.LessOverhead; e nil where there is none).
func (q *QueryDiff) ruleFigure(m Metric, less bool) ruleFigure {
	f := ruleFigure{q: q, m: m}
	if !less {
		f.e, f.bv = q.Effects.Of(m), figureOf(q.Baseline, m)
		f.bRuns, f.kRuns = judgedRuns(q, m)
		return f
	}
	lo, e, ok := q.LessOverhead(m)
	if !ok {
		return f
	}
	f.e, f.bv, f.overheadMS = e, lo.Baseline, lo.OverheadMS
	f.bRuns, f.kRuns = lessValues(q.BaselineRows, m, lo.OverheadMS), lessValues(q.CandidateRows, m, lo.CandidateOverheadMS)
	return f
}

// figureState is where figure f stands on rule at level alpha, broken
// (under the per-call floors: underFloors) or not by Rule.check.
func (r *Report) figureState(f ruleFigure, rule Rule, broken, underFloors bool, o Options, alpha float64) (ruleState, Undecided) {
	e, bv, m := f.e, f.bv, f.m
	if e == nil || bv <= 0 {
		return ruleClear, Undecided{}
	}
	t := ruleThreshold(rule, bv)
	low, high, level := e.Low, e.High, e.Level
	if o.Look > 1 {
		low, high, level = lookInterval(f.bRuns, f.kRuns, m, o, alpha)
	}
	// What clears the rule: the effect's own interval (shown), the
	// rounds' guarded Welch interval at the comparison's level
	// (clearInterval), or their paired interval at a fifth of it
	// (pairedInterval).
	ci, ciOK := clearInterval(f.bRuns, f.kRuns, o.Alpha)
	ciOK = ciOK && !o.rankOnly
	pi, piOK := pairedInterval(f.bRuns, f.kRuns, r.pairs, o.Alpha)
	piOK = piOK && !o.rankOnly
	u := Undecided{Rule: rule.Text, Metric: m, Fingerprint: f.q.Fingerprint, Threshold: t, Ratio: e.Ratio, Low: low, High: finite(high), Level: level,
		OverheadMS: f.overheadMS}
	// A change under the per-call floors breaks the rule only beyond
	// the threshold over its whole interval, at a later look that
	// look's (Broken.UnderFloors); any other beyond noise.
	beyond := 1.0
	if underFloors {
		beyond = t
	}
	switch {
	case broken && !r.Noise.Measured && o.Look < o.Looks:
		// Judged against the default noise floors (too few rounds
		// for an interval over them) while rounds may still be
		// added: they measure the noise before the rule fails.
		return ruleUnconfirmed, u
	case broken && (o.Look <= 1 || low > beyond):
		return ruleBroken, u
	case broken:
		return ruleUnconfirmed, u
	}
	// Where a rule may break under the per-call floors (Rule.check:
	// the mean and the p95, noise measured; with histograms on the
	// calls' evidence, without on the runs' alone, roundsEvidence), a
	// change of any size matters, and an interval that holds the
	// threshold is undecided however little the query adds. Elsewhere
	// only a change that the comparison could call one: one that adds
	// at least the ms floor a call at the threshold, or, for a mean,
	// the share of the run's time (DefaultMinTimeShare).
	if !judgesUnderFloors(m, r.Noise.Measured) && !e.mayMatter(bv*(t-1), r.Settings.MinEffectMS, r.Settings.MinTimeShare) {
		return ruleClear, u
	}
	// Clear when an interval at the comparison's own level (Alpha)
	// ends at or under the threshold, as at the first look: e's, or
	// the rounds' guarded Welch interval (clearInterval), or their
	// paired interval at a fifth of it (pairedInterval). The later
	// looks' level (LookAlpha) guards the claim of a regression
	// against optional stopping; a clear rule claims none, and holding
	// it to that level too kept identical targets undecided after 8
	// rounds a side whose 90% interval (0.70-1.20) said no 1.5x.
	// Undecided is left for an interval that still holds both no
	// change and a change beyond the threshold.
	if high > t && e.High > t && (!ciOK || ci.High > t) && (!piOK || pi.High > t) {
		// Shown: the narrower of the look's interval and e's, or e's
		// where the look's (Welch's t at a later look) lies wholly
		// beyond the threshold while e's holds it: the rule waits on
		// e's (Rule.check), so that what is shown holds the threshold.
		if e.High < high || low > t && e.Low <= t {
			u.Low, u.High, u.Level = e.Low, finite(e.High), e.Level
		}
		u.whatHolds(e, !r.noHistograms())
		return ruleUndecided, u
	}
	switch {
	case e.High <= t:
	case ciOK && ci.High <= t:
		e.Cleared = &ClearedInterval{Interval: ClearedWelch, Low: ci.Low, High: finite(ci.High), Level: ci.Level, Dropped: ci.Dropped}
	case piOK && pi.High <= t:
		e.Cleared = &ClearedInterval{Interval: ClearedPaired, Low: pi.Low, High: finite(pi.High), Level: pi.Level}
	default:
		// The look's own (lookInterval, at its stricter level).
		e.Cleared = &ClearedInterval{Interval: ClearedLook, Low: low, High: finite(high), Level: level}
	}
	return ruleClear, u
}

// ClearedBy names the interval over the rounds that cleared a rule
// (ClearedInterval.Interval).
type ClearedBy string

const (
	// ClearedWelch: Welch's t on the rounds' logarithms with the outlier
	// guard, at the comparison's level (clearInterval).
	ClearedWelch ClearedBy = "welch"
	// ClearedPaired: Student's t on the differences of logarithms of
	// each candidate round and the control round run beside it, at a
	// fifth of the comparison's level (pairedInterval).
	ClearedPaired ClearedBy = "paired"
	// ClearedLook: a later look's own interval at its level
	// (lookInterval).
	ClearedLook ClearedBy = "look"
)

// ClearedInterval is the interval over the rounds that cleared a rule
// (Effect.Cleared), named by Interval, at Level, with Dropped rounds
// left out by the outlier guard (stats.OutlierMADs; Welch's only).
type ClearedInterval struct {
	Interval ClearedBy `json:"interval"`
	Low      float64   `json:"low"`
	High     float64   `json:"high"`
	Level    float64   `json:"level"`
	Dropped  int       `json:"dropped,omitempty"`
}

// clearInterval is the interval of a figure over the runs bv and kv at
// the comparison's level alpha that clears a rule beside the effect's
// own: Welch's t on the rounds' logarithms with the outlier guard
// (stats.GuardedWelchInterval). Through the rehearsal's budget, beside
// the effect's, it PASSes identical candidates on mean>+10% in 0.98 of
// synthetic rehearsals whose rounds are 5% apart where the effect's
// alone passed 0.93 (0.70 against 0.53 at 10% apart), and 0.97 with one
// round 1.5x slow against 0.73 (docs/noise-measured.md,
// TestVerdictIntervalDesigns in internal/stats); ok is false with fewer
// than three runs a side, where it was not measured.
func clearInterval(bv, kv []float64, alpha float64) (stats.Interval, bool) {
	return stats.GuardedWelchInterval(bv, kv, alpha, msResolution)
}

// pairedInterval is the third interval that clears a rule: each
// candidate run against the baseline's run beside it in time (pairs,
// runPairs), Student's t on the pairs' differences of logarithms at
// alpha·stats.PairedAlphaShare (stats.PairedInterval). A drift of the
// machine over the rehearsal is in each side's spread, so in Welch's
// interval, and not in a pair's difference. Through the rehearsal's
// budget, in its order of rounds, it PASSes identical candidates on
// mean>+10% whose machine drifted 3% a round in 0.79 of synthetic
// rehearsals against 0.40 without it (a random walk of 5% a round:
// 0.85 against 0.80), and changes just beyond the threshold as often
// as before (a 1.12x on +10% at most 0.007 more often, a 1.2x 0.001:
// docs/noise-measured.md, TestVerdictPairedDesigns in internal/stats);
// at alpha itself it PASSed a 1.12x 0.06 more often. ok is false
// without pairs, or where a side's runs are not every run of it (a run
// without the query: bv and kv then no longer line up with pairs).
func pairedInterval(bv, kv []float64, pairs [][2]int, alpha float64) (stats.Interval, bool) {
	if pairs == nil {
		return stats.Interval{}, false
	}
	return stats.PairedInterval(bv, kv, pairs, alpha*stats.PairedAlphaShare, msResolution)
}

// runPairs pairs each candidate run with the baseline's run beside it
// in time, from their start times (a replay's StartedAt;
// stats.AdjacentPairs): nil where a run has none (an analysis), the
// sides' counts differ, or some run has no neighbour of the other side.
func runPairs(base, cand []*Run) [][2]int {
	at := func(runs []*Run) []int64 {
		out := make([]int64, len(runs))
		for i, r := range runs {
			if r.Replay != nil {
				out[i] = r.StartedAt.Micros()
			}
		}
		return out
	}
	pairs, ok := stats.AdjacentPairs(at(base), at(cand))
	if !ok {
		return nil
	}
	return pairs
}

// noHistograms says whether a run of the comparison lacks latency
// histograms (WarnNoHistograms): no calls' evidence, so a rule is broken
// under the per-call floors on the runs' alone (roundsEvidence).
func (r *Report) noHistograms() bool {
	return slices.ContainsFunc(r.Warnings, func(w Warning) bool { return w.Kind == WarnNoHistograms })
}

// ruleThreshold is rule's threshold as a ratio of the baseline's figure
// bv.
func ruleThreshold(rule Rule, bv float64) float64 {
	switch rule.Unit {
	case UnitPercent:
		return 1 + rule.Value/100
	case UnitFactor:
		return rule.Value
	}
	return 1 + rule.Value/bv
}

// lookInterval is the interval of a figure m over the runs bv and kv at
// a later look's level alpha, which a rule broken must clear: Welch's t
// on the rounds' logarithms (stats.WelchInterval, without the outlier
// guard: a slow round widens it, so it never carries a claim of
// regression on one round); the rank interval, unbounded ([0, +Inf))
// when the runs are too few for one at that level, with fewer than
// three runs a side. The rank interval has none at the second look's
// level (0.02 with the default budget) with four runs a side
// (stats.MinAlpha(4, 4) = 0.029), so a rule broken there waited a round
// whatever its change. The runs are those of the level the
// figure is judged on (ruleFigure, judgedRuns): the server's time for a
// mean judged on pg_stat_statements, not the log's durations beside it,
// so that the interval a later look decides on is that of the figure it
// labels (issue 58: a status update 1.37x (1.18-1.55) on the server's
// time was cleared of mean>+50% at the fifth look by the log's
// 1.03-1.42); the log's less its overhead for a percentile read so.
func lookInterval(bv, kv []float64, m Metric, o Options, alpha float64) (low, high, level float64) {
	if in, ok := stats.WelchInterval(bv, kv, alpha, msResolution); ok && !o.rankOnly {
		return in.Low, in.High, in.Level
	}
	so := stats.Options{Alpha: alpha, MinEffect: o.MinEffect, DefaultNoise: o.Noise.of(m), Min: msResolution}
	res := stats.Effect(bv, kv, so)
	if !res.RankInterval {
		return 0, math.Inf(1), 0
	}
	return res.Low, res.High, res.Level
}

// judgedRuns are each side's runs of q's figure m at the level it is
// judged on (QueryDiff.LevelOf): for a mean judged apart from the
// results' durations (the server's time, or the application's round
// trips asked for), that level's runs; else the results' own.
func judgedRuns(q *QueryDiff, m Metric) (bv, kv []float64) {
	if m == MetricMean && q.JudgedApart() {
		if lt := q.Levels.judgedTime(); lt != nil {
			return lt.BaselineRunsMS, lt.CandidateRunsMS
		}
	}
	return values(q.BaselineRows, m), values(q.CandidateRows, m)
}

// judgedTime is the level the mean is judged on, nil where lv keeps no
// runs of it.
func (lv *QueryLevels) judgedTime() *LevelTime {
	switch lv.Judged {
	case LevelServer:
		return lv.Server
	case LevelApplication:
		return lv.Application
	}
	return lv.Log
}

// roundsEvidence gives d's mean and p95, slower over the runs beyond
// noise and the relative floors but under the per-call floors, the
// evidence a rule reads there (Effect.carriedBeyond) where the runs keep
// no latency histograms (WarnNoHistograms: a pg_stat_statements level
// with no log's distribution beside it, a results file of version 1):
// no calls bound each run, so the rounds alone carry the change. It is
// the rank interval over the runs of the level judged (judgedRuns) at
// the family's level: one-sided stats.FamilyAlpha of the look's level
// (LookAlpha) over the figures judged, Bonferroni's correction as the
// calls' evidence takes it, so that identical targets break a rule under
// the floors in at most Alpha/2 of comparisons however many tiny
// queries they run. Too few runs for that level (three a side cannot go
// below 1/20) give an unbounded interval: the rule is undecided while
// its interval at Alpha holds or passes the threshold, and rounds are
// added. Without rules, with histograms (the calls' evidence,
// comparer.effect and serverCarried), or without measured noise, nothing
// is set. The log's p95 without its per-call overhead (QueryLevels.LogP95)
// gets the same over its runs less the overhead.
func (c *comparer) roundsEvidence(d *QueryDiff) {
	if c.useHist || !c.measured || len(c.o.Rules) == 0 || d.Effects == nil {
		return
	}
	alpha := stats.FamilyAlpha(LookAlpha(c.o.Alpha, c.o.Look, c.o.Looks), c.tests)
	for _, f := range []ruleFigure{d.ruleFigure(MetricMean, false), d.ruleFigure(MetricP95, false), d.ruleFigure(MetricP95, true)} {
		e := f.e
		if e == nil || e.Change != ChangeSlower || !e.Beyond || e.Interval != IntervalRuns || e.pastMSFloor(c.o.MinEffectMS, c.o.MinTimeShare) {
			continue
		}
		so := stats.Options{Alpha: 2 * alpha, MinEffect: c.o.MinEffect, DefaultNoise: c.o.Noise.of(f.m), Min: msResolution}
		ev := &CallsEvidence{Alpha: alpha, Tests: c.tests, High: finite(math.Inf(1))}
		if res := stats.Effect(f.bRuns, f.kRuns, so); res.RankInterval {
			ev.Low, ev.High = res.Low, finite(res.High)
		}
		ev.FamilyLow, ev.FamilyHigh = ev.Low, ev.High
		e.evidence = ev
	}
}
