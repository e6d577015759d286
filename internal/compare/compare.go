package compare

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/stats"
)

// Options tune a comparison. The zero value means the defaults.
type Options struct {
	// MinCalls is the fewest timed calls, in every run, for a query to
	// be judged; 0 means 10.
	MinCalls int64
	// Alpha is the two-sided level of the intervals; 0 means
	// stats.DefaultAlpha (0.10, the least three runs a side can reach).
	Alpha float64
	// MinEffect is the relative change (0.10 is 10%) a figure must
	// reach to be called a regression or an improvement, however
	// certain; 0 means 0.10.
	MinEffect float64
	// MinEffectMS is the change in milliseconds of a query's mean (or
	// p95, for its tail) that a regression needs besides MinEffect; 0
	// means DefaultMinEffectMS, a negative value none. A p95 going from
	// 0.03 to 0.07 ms is "+133%" and costs nobody anything.
	MinEffectMS float64
	// MinTimeShare is the share of a run's time that a slower mean
	// under MinEffectMS must add to be a regression still (see
	// DefaultMinTimeShare); 0 means DefaultMinTimeShare, a negative
	// value none (the per-call floor alone).
	MinTimeShare float64
	// Noise is the noise floor assumed when run-to-run noise cannot be
	// measured (one run a side); its zero fields mean
	// DefaultNoiseFloors'.
	Noise NoiseFloors
	// AllowMixedLatency compares results of different latency sources
	// instead of refusing; every ratio is then marked mixed.
	AllowMixedLatency bool
	// AllowIncomplete compares results that cannot be judged (see
	// ErrIncomplete) instead of refusing; the verdict is then never a
	// pass.
	AllowIncomplete bool
	// Unjudgeable are reasons the caller knows, beyond the results',
	// that the comparison is not a verdict on the candidate (a
	// rehearsal stopped before its last round); they count as the
	// results' own do.
	Unjudgeable []Unjudgeable
	// Rules are the thresholds the comparison fails on.
	Rules []Rule
	// JudgeLaggedLatency judges latency even when a replay of a
	// comparison of one run a side fell behind its schedule (see
	// StatusNotJudgedLag): for a caller whose verdicts cannot say "not
	// judged" yet (a rehearsal's fix rounds).
	JudgeLaggedLatency bool
	// ExpectWork: the caller collected server-side evidence with every
	// run, so a run without pg_stat_statements figures is said to
	// leave server work uncompared even when no run has them.
	ExpectWork bool
	// WorkMinEffect is the relative growth of WAL bytes (or blocks
	// dirtied) per call a work regression needs; 0 means
	// DefaultWorkMinEffect. MinWALBytes and MinDirtied are the
	// absolute growths per call it needs besides; 0 means
	// DefaultMinWALBytes and DefaultMinDirtied.
	WorkMinEffect float64
	MinWALBytes   float64
	MinDirtied    float64
	// Look is which look at the runs this comparison is, from 1, of at
	// most Looks: a rehearsal that adds rounds while a query is
	// undecided on a rule compares again after each (decide.go); a
	// later look judges its rules at LookAlpha. Looks 0: no rule is
	// ever undecided (a comparison of results that cannot have more
	// runs, pgrehearse report's), as before rehearsals added rounds.
	Look, Looks int
	// rankOnly judges the rules on the rank interval alone, as before
	// the rounds' Welch interval (clearInterval, lookInterval): for the
	// tests that measure the two side by side.
	rankOnly bool
	// JudgeLevel is the level a query's mean is judged on where it can
	// be (QueryLevels.Judged): LevelServer (or empty), the default,
	// judges pg_stat_statements' time where every run has it;
	// LevelApplication judges the replay's round trips (what the
	// application waited, with the replayer's overhead on both sides:
	// QueryLevels.AppOverheadMS) where every run has them, else as
	// LevelServer. ParseJudgeLevel reads a user's.
	JudgeLevel Level
}

// ParseJudgeLevel reads the level a comparison judges the mean on
// (Options.JudgeLevel): "server" or "application".
func ParseJudgeLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case LevelServer, LevelApplication:
		return l, nil
	}
	return "", fmt.Errorf("no level %q to judge the mean on: %s or %s", s, LevelServer, LevelApplication)
}

// NoiseFloors are factors (>= 1) by which the figures of one run of a
// target differ from another run's of the same target: a single run a
// side cannot measure them, so a comparison of single runs assumes these
// and judges only changes beyond them.
type NoiseFloors struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
}

func (n NoiseFloors) of(m Metric) float64 {
	if f, ok := latencyOf(m, n.Mean, n.P50, n.P95, n.P99); ok {
		return f
	}
	return 1
}

// DefaultNoiseFloors are the largest ratios by which single replays of
// one captured workload onto two identical fresh targets differed, per
// figure, among queries whose figure moved by DefaultMinEffectMS or more
// (180 single-run pairs of 20 replays, bench/aa.sh; docs/noise-measured.md has
// the data): a comparison of one run a side calls nothing within them a
// change, and so never fails on one. They are wide because one run
// cannot tell its own noise: three runs a side measure it instead.
var DefaultNoiseFloors = NoiseFloors{Mean: 2.5, P50: 2.3, P95: 3.1, P99: 12}

// DefaultMinEffectMS is the change of a query's mean (or p95) per call
// below which nothing is a regression, whatever its ratio: on the A/A
// replays, sub-millisecond queries moved by up to 0.19 ms a call, and a
// floor of 0.05 ms let +0.06 ms changes through as regressions of three
// runs a side.
const DefaultMinEffectMS = 0.2

// DefaultMinTimeShare: the per-call floor (MinEffectMS) does not spare a
// query whose slower mean adds this share of the run's time at least:
// what the change adds per run at the end of its interval nearer 1 (the
// baseline's mean times Low less 1, times the candidate's calls) over all
// the time the baseline's runs took at the same level (Effect.AddedShare).
// A lookup of 0.05 ms called so often that it is 30% of the run's time,
// doubled, adds 30% to the server's work though it adds 0.05 ms a call: a
// regression. The same 1% as work's share floor (DefaultMinWorkShare):
// latency, like work, is judged by what it adds to the run.
const DefaultMinTimeShare = 0.01

// msResolution is the resolution of durations in results (1 µs): figures
// below it count as it, so that ratios stay finite.
const msResolution = 0.001

func (o Options) withDefaults() Options {
	if o.MinCalls <= 0 {
		o.MinCalls = 10
	}
	if o.Alpha <= 0 {
		o.Alpha = stats.DefaultAlpha
	}
	if o.MinEffect <= 0 {
		o.MinEffect = 0.10
	}
	switch {
	case o.MinEffectMS == 0:
		o.MinEffectMS = DefaultMinEffectMS
	case o.MinEffectMS < 0:
		o.MinEffectMS = 0
	}
	switch {
	case o.MinTimeShare == 0:
		o.MinTimeShare = DefaultMinTimeShare
	case o.MinTimeShare < 0:
		o.MinTimeShare = 0
	}
	if o.WorkMinEffect <= 0 {
		o.WorkMinEffect = DefaultWorkMinEffect
	}
	if o.MinWALBytes <= 0 {
		o.MinWALBytes = DefaultMinWALBytes
	}
	if o.MinDirtied <= 0 {
		o.MinDirtied = DefaultMinDirtied
	}
	if o.JudgeLevel == "" {
		o.JudgeLevel = LevelServer
	}
	if o.Looks > 0 {
		o.Look = max(o.Look, 1)
		o.Looks = max(o.Looks, o.Look)
	}
	d := DefaultNoiseFloors
	for _, p := range []struct{ f, def *float64 }{{&o.Noise.Mean, &d.Mean}, {&o.Noise.P50, &d.P50}, {&o.Noise.P95, &d.P95}, {&o.Noise.P99, &d.P99}} {
		if *p.f < 1 {
			*p.f = *p.def
		}
	}
	return o
}

// errorAlpha and minErrorCalls gate the errors rules.
const (
	errorAlpha    = 0.01
	minErrorCalls = 10
)

// ErrMixedLatency is wrapped by the error Compare returns when the two
// results measured latency in different places: a *MixedLatencyError.
var ErrMixedLatency = errors.New("mixed latency sources")

// MixedLatencyError says which result measured latency where, for the
// caller to say how to compare like with like.
type MixedLatencyError struct {
	Baseline, Candidate             string // the results' names
	BaselineSource, CandidateSource LatencySource
}

func (e *MixedLatencyError) Error() string {
	return fmt.Sprintf("%v: %s has %s latency and %s has %s latency; "+
		"client round trips include network and client time, so comparing them with server-side durations "+
		"manufactures regressions", ErrMixedLatency, e.Baseline, e.BaselineSource, e.Candidate, e.CandidateSource)
}

// Unwrap makes the error ErrMixedLatency for errors.Is.
func (e *MixedLatencyError) Unwrap() error { return ErrMixedLatency }

// Status is the judgement on one query.
type Status string

// Statuses of a query.
const (
	// StatusRegressed: the mean is slower beyond noise and beyond the
	// effect floors (or the p50 breaks a rule on it).
	StatusRegressed Status = "regressed"
	// StatusTailRegressed: the mean is not (it may even be faster),
	// but the p95 is slower beyond noise and the floors (or the p99
	// breaks a rule on it): a tail that users feel.
	StatusTailRegressed Status = "tail_regressed"
	// StatusImproved: the mean is faster beyond noise and the floors,
	// and neither its median nor its tail is slower beyond noise.
	StatusImproved Status = "improved"
	// StatusUnchanged: within noise ("~").
	StatusUnchanged Status = "unchanged"
	// StatusSmallChange: beyond noise, but under a floor (see Reasons).
	StatusSmallChange   Status = "small_change"
	StatusTooFewCalls   Status = "too_few_calls"  // fewer than MinCalls timed calls in a run
	StatusOnlyBaseline  Status = "only_baseline"  // in no run of the candidate
	StatusOnlyCandidate Status = "only_candidate" // in no run of the baseline
	StatusSummary       Status = "summary"        // one run, nothing compared
)

// Regression reports whether s is a regression of either kind.
func (s Status) Regression() bool { return s == StatusRegressed || s == StatusTailRegressed }

// Reason says why a query got its status, beyond the status itself.
type Reason string

// Reasons.
const (
	// ReasonTooFewCalls: a run had fewer than MinCalls timed calls.
	ReasonTooFewCalls Reason = "too_few_calls"
	// ReasonMissingInRun: the query is absent from some runs of a side.
	ReasonMissingInRun Reason = "missing_in_a_run"
	// ReasonUnderEffectFloor: beyond noise, but under MinEffect.
	ReasonUnderEffectFloor Reason = "under_effect_floor"
	// ReasonUnderNoiseFloor: beyond the test, but within the noise
	// floor (the control's own spread, or the default).
	ReasonUnderNoiseFloor Reason = "under_noise_floor"
	// ReasonUnderMSFloor: beyond the relative floors, but by less
	// than MinEffectMS.
	ReasonUnderMSFloor Reason = "under_ms_floor"
	// ReasonMeanFasterTailSlower: a tail regression whose mean got
	// faster beyond noise.
	ReasonMeanFasterTailSlower Reason = "mean_faster_tail_slower"
	// ReasonMedianFasterMeanSlower: a regression whose typical call
	// got faster: the slow calls cost more.
	ReasonMedianFasterMeanSlower Reason = "median_faster_mean_slower"
	// ReasonFasterButSlowerElsewhere: the mean is faster beyond the
	// floors, but the median or the p95 is slower: not an improvement.
	ReasonFasterButSlowerElsewhere Reason = "mean_faster_median_or_tail_slower"
	// ReasonNotJudged: Changed moved beyond every floor, on a figure
	// or in a direction the verdict does not judge: a slower p50 that
	// breaks no rule, or a faster p50 or p95 beside a mean that is not
	// faster.
	ReasonNotJudged Reason = "not_judged"
	// ReasonTailTooFewCalls: the runs showed the figure (the p95)
	// slower beyond every floor, but a run's calls are too few for the
	// bound its tail needs at the family's level (CallsEvidence): the
	// tail rests on too few calls to be judged, and is not a
	// regression.
	ReasonTailTooFewCalls Reason = "tail_on_too_few_calls"
	// ReasonWithinCallsNoise: the runs showed the figure slower beyond
	// every floor, but not beyond the sampling error of the calls in
	// each run, at the family's level (CallsEvidence).
	ReasonWithinCallsNoise Reason = "within_calls_noise"
	// ReasonWithinRoundNoise: the runs showed the figure slower beyond
	// every floor and its calls carried it, but not beyond the rounds'
	// noise pooled over every query of the comparison, at the
	// family's level (CallsEvidence's Family interval).
	ReasonWithinRoundNoise Reason = "within_round_noise"
	// ReasonBreaksRuleUnderFloors: a regression under the per-call
	// floors (MinEffectMS and, for a mean, MinTimeShare) that breaks a
	// rule all the same: its figure's interval, and its calls' evidence
	// at the family's level, lie wholly beyond the rule's threshold
	// (Effect.carriedBeyond). The rule is the user's own statement of
	// what matters; the report says how little the change adds beside it.
	ReasonBreaksRuleUnderFloors Reason = "breaks_rule_under_floors"
	// ReasonBreaksRuleWithoutOverhead: a regression of a percentile
	// (the p50, the p95 or the p99) that breaks a rule on it by the
	// log's figure with its per-call overhead taken out
	// (QueryLevels.LogP95, Broken.WithoutOverhead) and not by the log's
	// own, whose ratio the overhead compresses (a lookup twice slower at
	// the server reads 1.3x in the log): the report says the figure
	// that broke it.
	ReasonBreaksRuleWithoutOverhead Reason = "breaks_rule_without_log_overhead"
	// ReasonHistogramUnreadable: a histogram did not decode; the
	// sampling error inside the run is unknown.
	ReasonHistogramUnreadable Reason = "histogram_unreadable"
)

// Change is which way a figure moved.
type Change string

// Changes.
const (
	ChangeNone   Change = "~"      // the interval holds 1
	ChangeSlower Change = "slower" // the whole interval is above 1
	ChangeFaster Change = "faster" // the whole interval is below 1
)

// IntervalKind says where an Effect's interval comes from.
type IntervalKind string

// Kinds of intervals.
const (
	// IntervalRuns: the exact rank interval over the runs, at Level.
	IntervalRuns IntervalKind = "runs"
	// IntervalNoiseFloor: too few runs for a rank interval; the
	// ratio widened by its sampling error inside the runs (at Alpha)
	// and by the noise floor, default or measured.
	IntervalNoiseFloor IntervalKind = "noise_floor"
)

// Estimate is a figure's ratio, the candidate's median over the runs
// divided by the baseline's, with its interval, its floors and the
// change it shows: what a latency's Effect and a work figure's
// WorkEffect share (embedded first in each, so their JSON keeps these
// fields first and flat).
type Estimate struct {
	Ratio float64 `json:"ratio"`
	// Pairwise: Ratio is the median of the run-to-run ratios, as the
	// ratio of the medians fell outside the interval (stats.Result).
	Pairwise bool    `json:"pairwise,omitempty"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
	// Level is the interval's confidence (IntervalRuns); 0 otherwise.
	Level    float64      `json:"level,omitempty"`
	Interval IntervalKind `json:"interval"`
	// NoiseFloor is the factor the baseline's own runs differed by
	// (NoiseMeasured), or the default assumed; Floor is
	// max(1+MinEffect, NoiseFloor), which a change must reach.
	NoiseFloor    float64 `json:"noise_floor"`
	NoiseMeasured bool    `json:"noise_measured"`
	Floor         float64 `json:"floor"`
	Change        Change  `json:"change"`
	// Beyond: changed, and by at least Floor.
	Beyond bool `json:"beyond_floors"`
}

// estimateOf is a stats.Result as an Estimate, its change named up
// (higher) or down (lower) in the figure's words.
func estimateOf(r stats.Result, up, down Change) Estimate {
	e := Estimate{Ratio: r.Ratio, Pairwise: r.Pairwise, Low: r.Low, High: finite(r.High), Level: r.Level, Interval: IntervalNoiseFloor,
		NoiseFloor: r.Noise, NoiseMeasured: r.NoiseMeasured, Floor: r.Floor, Change: ChangeNone, Beyond: r.Beyond}
	if r.RankInterval {
		e.Interval = IntervalRuns
	}
	switch r.Change {
	case stats.Higher:
		e.Change = up
	case stats.Lower:
		e.Change = down
	}
	return e
}

// Effect is a latency figure's change: its Estimate, and what the
// milliseconds and the calls say of it.
type Effect struct {
	Estimate
	// DeltaMS is the candidate's median less the baseline's.
	DeltaMS float64 `json:"delta_ms"`
	// P is the Mann-Whitney p-value over the runs; 1 with one run a
	// side.
	P float64 `json:"p"`
	// NextRun is the interval of what the application would see on its
	// next run of a round's length (a predictive interval: the mean's
	// widened by the rounds' own spread); nil without runs enough for
	// the rank interval. Never judged: the verdict reads Low-High.
	NextRun *NextRun `json:"next_run,omitempty"`
	// MinDetectable is, for the mean and the p95 with the noise
	// measured, the smallest change (a factor above 1) the comparison
	// could tell from none at the level judged, at 80% power
	// (comparer.minDetectable; MaxFloat64 when the calls are too few);
	// 0 otherwise.
	MinDetectable float64 `json:"min_detectable,omitempty"`
	// Calls is set when the runs showed the figure (the mean or the
	// p95) slower beyond every floor, but the calls inside the runs
	// could not carry that change: it is then not a regression.
	Calls *CallsEvidence `json:"calls,omitempty"`
	// Cleared is, where a rule was cleared of this figure by the
	// rounds' Welch or paired interval while Low-High holds the rule's
	// threshold (decide's clearInterval, pairedInterval), that
	// interval: what the verdict read.
	// nil where Low-High cleared every rule, or no rule read it.
	Cleared *ClearedInterval `json:"cleared_by,omitempty"`
	// AddedShare is, for a slower mean, what the change adds per run at
	// the end of its interval nearer 1 over all the time the baseline's
	// runs took at the figure's level (DefaultMinTimeShare); 0 for
	// other figures, or without the runs' totals.
	AddedShare float64 `json:"added_share,omitempty"`
	// sharePerMS is the share of the run's time that one ms more a
	// call adds: the candidate's calls over the baseline's time per
	// run (0 without them); for the mean only.
	sharePerMS float64
	// evidence is, for a figure (the mean or the p95) the runs showed
	// slower beyond the relative floors, the calls' evidence of that
	// change (CallsEvidence) whether or not it clears the per-call
	// floor: what a rule's threshold is read against under the floors
	// (carriedBeyond); without histograms, the runs' own at the
	// family's level (comparer.roundsEvidence). nil where the
	// comparison has none (too few runs for the rank interval, a
	// histogram unreadable, the p50 and the p99): no rule is then
	// broken under the floors.
	evidence *CallsEvidence
	// Faster is, for a figure (the mean or the p95) the runs showed
	// faster beyond every floor, with runs enough a side for the rank
	// interval and the calls' histograms, the calls' evidence of that
	// change as Calls is of a slower one (FasterCarried). The
	// comparison's own labels do not rest on it, so it is not in the
	// JSON; a fix's verdict does (package fixes), so that an A/A fix
	// claims a gain no more often than a regression.
	Faster *CallsEvidence `json:"-"`
}

// pastMSFloor reports whether e, slower, clears the per-call floor:
// by floor ms a call at least, or, for a mean, by adding minShare of the
// run's time at least (DefaultMinTimeShare).
func (e *Effect) pastMSFloor(floor, minShare float64) bool {
	return e.DeltaMS >= floor || minShare > 0 && e.AddedShare >= minShare
}

// carriedBeyond reports whether e is slower beyond threshold t (a ratio
// of the baseline's figure, above 1) over its whole interval: slower
// beyond noise and the relative floors as a regression must be, its
// interval (the rank interval over the runs at Alpha) above t, and the
// calls' evidence at the family's level (CallsEvidence: each run bounded
// by its calls, and the rounds' noise pooled over the comparison) above
// t too. The per-call floors (MinEffectMS, MinTimeShare) are not asked:
// a rule the user gave is their own statement of what matters (issue
// 58), so a 0.08 ms lookup whose every reading is beyond +50% breaks
// mean>+50%. Without histograms the runs alone are that evidence, at the
// family's level (comparer.roundsEvidence); without any (judgesUnderFloors:
// the mean and the p95 of runs enough a side for the rank interval) the
// floors stand: nothing else guards a tiny query against the noise that
// they keep out (a 0.06 ms change between identical targets).
func (e *Effect) carriedBeyond(t float64) bool {
	if e.Change != ChangeSlower || !e.Beyond || e.Calls != nil || e.Low <= t {
		return false
	}
	ev := e.evidence
	return ev != nil && !ev.TooFewCalls && ev.Low > t && ev.FamilyLow > t
}

// carried reports whether e is slower beyond noise and the relative
// floors with its calls' evidence, where the comparison took it (the
// mean and the p95), carrying it past 1 at the family's level, whatever
// it adds a call: a change the runs and their calls show. Without that
// evidence (a p50, a p99, too few runs for the rank interval, a
// histogram unreadable) the runs alone, as for a regression.
func (e *Effect) carried() bool {
	if e.Change != ChangeSlower || !e.Beyond || e.Calls != nil {
		return false
	}
	ev := e.evidence
	return ev == nil || !ev.TooFewCalls && ev.Low > 1 && ev.FamilyLow > 1
}

// judgesUnderFloors says whether a rule on figure m may be broken under
// the per-call floors (Effect.carriedBeyond) in a comparison whose noise
// is measured (runs enough a side for the rank interval): the mean and
// the p95, whose calls' evidence the comparison takes with histograms,
// and whose runs' at the family's level without (roundsEvidence).
func judgesUnderFloors(m Metric, measured bool) bool {
	return measured && (m == MetricMean || m == MetricP95)
}

// mayMatter reports whether a slower change of deltaMS a call of e's
// figure could clear the per-call floor (see pastMSFloor).
func (e *Effect) mayMatter(deltaMS, floor, minShare float64) bool {
	return deltaMS >= floor || minShare > 0 && deltaMS*e.sharePerMS >= minShare
}

// setEvidence keeps ev, the calls' evidence of e slower beyond the
// relative floors, and makes it e.Calls when e clears the per-call floor
// and its calls do not carry it: then e is no regression.
func (e *Effect) setEvidence(ev *CallsEvidence, floor, minShare float64) {
	e.evidence = ev
	if e.pastMSFloor(floor, minShare) && (ev.TooFewCalls || ev.Low <= 1 || ev.FamilyLow <= 1) {
		e.Calls = ev
	}
}

// setShare sets e's AddedShare and sharePerMS for a mean whose baseline
// median is baseMS, over calls a run of the candidate and runMS, the
// baseline's time per run at the mean's level.
func (e *Effect) setShare(baseMS float64, calls int64, runMS float64) {
	if runMS <= 0 || calls <= 0 {
		return
	}
	e.sharePerMS = float64(calls) / runMS
	if e.Change == ChangeSlower && e.Low > 1 {
		e.AddedShare = baseMS * (e.Low - 1) * e.sharePerMS
	}
}

// FasterCarried reports whether a figure faster beyond every floor is
// faster beyond its calls' sampling and the rounds' noise pooled over
// the comparison's queries, at the family's level (Faster: its High and
// FamilyHigh below 1), as a regression must be slower.
func (e *Effect) FasterCarried() bool {
	return e.Faster != nil && e.Faster.High < 1 && e.Faster.FamilyHigh < 1
}

// CallsEvidence is a change of a figure over the runs taken again with
// each run's figure bounded by its own calls: the p95 by the order
// statistics that bracket it (the binomial interval of a quantile), the
// mean by its standard error. Each bound is one-sided at Alpha, the
// comparison's level shared among every figure it judges (Bonferroni's
// correction, stats.CallsAlpha), so that an A/A comparison shows a change
// the calls cannot carry in no more than Alpha/2 of comparisons, however
// many queries it judges. docs/noise-measured.md has the measured rates.
type CallsEvidence struct {
	// Low and High are the rank interval over the runs of the bounds:
	// a candidate run's lower bound over a baseline run's upper bound,
	// and upper over lower (stats.CallsInterval). The change is carried
	// when Low is above 1.
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// Alpha is each run's bound's one-sided level; Tests the figures
	// judged that share the comparison's level.
	Alpha float64 `json:"alpha"`
	Tests int     `json:"tests"`
	// TooFewCalls: some run had too few calls for the bound (a p95's
	// upper bound needs MinCalls calls at Alpha).
	TooFewCalls bool  `json:"too_few_calls,omitempty"`
	MinCalls    int64 `json:"min_calls,omitempty"`
	// RoundNoise is the figure's noise from round to round beyond the
	// calls' sampling, pooled over every query the comparison judges
	// and both sides (stats.PooledRoundNoise), as a factor (1.05:
	// rounds about 5% apart), and RoundNoiseDF the degrees of freedom
	// it was measured with. FamilyLow and FamilyHigh are the change
	// (of the runs' geometric means) with its interval at the family's
	// level, each run varying by that noise and by its own calls'
	// sampling (stats.FamilyInterval, one-sided stats.FamilyAlpha).
	// The change is carried when Low and FamilyLow are both above 1.
	RoundNoise   float64 `json:"round_noise"`
	RoundNoiseDF int     `json:"round_noise_df"`
	FamilyLow    float64 `json:"family_low"`
	FamilyHigh   float64 `json:"family_high"`
}

// Effects are the changes of a query's latency figures.
type Effects struct {
	Mean Effect `json:"mean"`
	P50  Effect `json:"p50"`
	P95  Effect `json:"p95"`
	P99  Effect `json:"p99"`
}

// Of returns the effect on metric m; nil for a metric without one.
func (e *Effects) Of(m Metric) *Effect {
	p, _ := latencyOf(m, &e.Mean, &e.P50, &e.P95, &e.P99)
	return p
}

// Figures are one side's figures for a query: with one run, that run's;
// with several, the median over the runs, and Spread and Runs.
type Figures struct {
	Calls  int64 `json:"calls"`
	Errors int64 `json:"errors"`
	querystats.Latency
	MaxMS        float64 `json:"max_ms"`
	ErrorRatePct float64 `json:"error_rate_pct"`
	// CallsPerS is calls over the run's span; 0 when the span is unknown.
	CallsPerS float64 `json:"calls_per_s,omitempty"`
	// Spread is, with several runs, each figure's largest distance of
	// a run from the median, relative (0.04: ±4%).
	Spread *Spread `json:"spread,omitempty"`
	// Runs are each run's figures, with several runs, in the order
	// given; a run that lacks the query has zero calls.
	Runs []RunFigures `json:"runs,omitempty"`
}

// Spread is the "±" of Figures measured in several runs: fractions
// (0.04: ±4%), not milliseconds, whatever the field names say in Go.
type Spread struct {
	Calls  float64 `json:"calls"`
	MeanMS float64 `json:"mean"`
	P50MS  float64 `json:"p50"`
	P95MS  float64 `json:"p95"`
	P99MS  float64 `json:"p99"`
}

// RunFigures are one run's figures for a query.
type RunFigures struct {
	Calls  int64 `json:"calls"`
	Errors int64 `json:"errors"`
	querystats.Latency
}

// Ratios are candidate / baseline of the medians; 0 when the baseline
// figure is 0.
type Ratios struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
}

// QueryDiff is one fingerprint in both sides.
type QueryDiff struct {
	// Kind is what the row measures: a query (RowQuery, omitted), or
	// the connections' setup (Report.ConnectionSetup).
	Kind        RowKind  `json:"kind,omitempty"`
	Fingerprint string   `json:"fingerprint"`
	Query       string   `json:"query"`
	Status      Status   `json:"status"`
	Reasons     []Reason `json:"reasons,omitempty"`
	// Changed is, for a small change, the metric its under-a-floor
	// reason is about: the first slower beyond the test of the mean,
	// the p95 and the p50, else the first changed.
	Changed   Metric   `json:"changed,omitempty"`
	Baseline  *Figures `json:"baseline,omitempty"`
	Candidate *Figures `json:"candidate,omitempty"`
	Ratio     *Ratios  `json:"ratio,omitempty"`
	Effects   *Effects `json:"effects,omitempty"`
	// Regressed is the metric a regression is about: the mean (or the
	// p50, when it breaks a rule on it), or the p95 (or the p99, when
	// it breaks a rule on it) for a tail regression; empty otherwise.
	Regressed Metric `json:"regressed,omitempty"`
	// Factor is the ratio of the regressed metric (of the mean for a
	// query that did not regress).
	Factor float64 `json:"factor,omitempty"`
	// AddedMS is what the change of the mean costs per run at the
	// candidate's volume: (candidate mean - baseline mean) x candidate
	// timed calls, medians.
	AddedMS float64 `json:"added_ms"`
	// TailAddedMS estimates what the slowest 5% of calls added per
	// run: (candidate p95 - baseline p95) x 5% of the candidate's timed
	// calls.
	TailAddedMS float64 `json:"tail_added_ms"`
	// ImpactMS ranks regressions: AddedMS, or TailAddedMS for a tail
	// regression; for a regression of the p50, its change x the
	// candidate's timed calls, and of the p99, its change x 1% of them.
	ImpactMS float64 `json:"impact_ms"`
	// ErrorsP is the p-value of the error rate's increase, over the
	// calls of all runs.
	ErrorsP float64 `json:"errors_p,omitempty"`
	// MixedLatency marks ratios of latencies measured in different
	// places (Options.AllowMixedLatency): not evidence of a regression.
	MixedLatency bool `json:"mixed_latency,omitempty"`
	// BusierWith is, for StatusSlowerWhileBusier, the regression the
	// query slowed beside.
	BusierWith string `json:"busier_with,omitempty"`
	// Work is the query's server work per call on both sides, when
	// every run has pg_stat_statements figures of it.
	Work *QueryWork `json:"work,omitempty"`
	// Levels are the query's mean time per call at each level it was
	// measured at (server, log, application) and the level its mean
	// is judged on (levels.go); nil for a query not judged.
	Levels *QueryLevels `json:"levels,omitempty"`
	// TxControl says a transaction-control statement (txcontrol.go):
	// BEGIN, not judged by the latency rules; COMMIT, judged on its
	// round trips paced by BEGIN's.
	TxControl TxControl `json:"tx_control,omitempty"`

	// BaselineRows and CandidateRows are each run's row (nil where a
	// run lacks the query), for charts.
	BaselineRows  []*Query `json:"-"`
	CandidateRows []*Query `json:"-"`
}

// BaselineRow is the first baseline run's row, or nil.
func (q *QueryDiff) BaselineRow() *Query { return firstRow(q.BaselineRows) }

// CandidateRow is the first candidate run's row, or nil.
func (q *QueryDiff) CandidateRow() *Query { return firstRow(q.CandidateRows) }

func firstRow(rows []*Query) *Query {
	for _, r := range rows {
		if r != nil {
			return r
		}
	}
	return nil
}

// RunSummary describes one side: with one run, that run; with several,
// the medians over them, and each run in Runs.
type RunSummary struct {
	// Name is the result's name, or the names of a side's runs.
	Name          string        `json:"file"`
	Files         []string      `json:"files"`
	Kind          results.Kind  `json:"kind"`
	LatencySource LatencySource `json:"latency_source"`
	Partial       bool          `json:"partial,omitempty"`
	Statements    int64         `json:"statements"`
	Failed        int64         `json:"failed"`
	Queries       int           `json:"queries"`
	FirstTime     string        `json:"first_time,omitempty"`
	LastTime      string        `json:"last_time,omitempty"`
	SpanS         float64       `json:"span_s"`
	// StatementsPerS is statements over the span; for a replay that
	// ran past its schedule window (results.Window), the statements
	// issued within it over its length, WindowS.
	StatementsPerS float64 `json:"statements_per_s"`
	WindowS        float64 `json:"window_s,omitempty"`
	// MeanMS is the mean over every timed call. P95MS is the p95 of
	// every timed call, known only when every row has its histogram.
	TimedCalls int64            `json:"timed_calls"`
	TotalMS    float64          `json:"total_ms"`
	MeanMS     float64          `json:"mean_ms"`
	P95MS      float64          `json:"p95_ms,omitempty"`
	Errors     map[string]int64 `json:"errors_by_sqlstate"`
	Timeline   *Timeline        `json:"timeline,omitempty"`
	// Gaps are the stretches of Timeline in which no statement started,
	// each idle or a stall.
	Gaps []Gap `json:"gaps,omitempty"`
	// Sync and SyncWait are a replay's synchronization and its waits
	// (results.Replay), nil for an analysis or an older replay.
	Sync     *results.Sync         `json:"sync,omitempty"`
	SyncWait *results.Distribution `json:"sync_wait_ms,omitempty"`
	// Spread is, with several runs, the relative "±" of MeanMS, P95MS
	// and StatementsPerS over them.
	Spread *SummarySpread `json:"spread,omitempty"`
	// Runs are each run's summary, with several.
	Runs []RunSummary `json:"runs,omitempty"`
}

// SummarySpread is the "±" of a side's figures over its runs, as
// fractions (Spread).
type SummarySpread struct {
	MeanMS         float64 `json:"mean"`
	P95MS          float64 `json:"p95"`
	StatementsPerS float64 `json:"statements_per_s"`
}

// RunCount is the number of runs the summary covers.
func (s *RunSummary) RunCount() int { return max(1, len(s.Runs)) }

// ErrorDiff is a SQLSTATE whose count grew.
type ErrorDiff struct {
	SQLState  string `json:"sqlstate"`
	Baseline  int64  `json:"baseline"`
	Candidate int64  `json:"candidate"`
	New       bool   `json:"new"`
	// Fingerprints are queries that failed with it in the candidate,
	// when the result says so.
	Fingerprints []string `json:"fingerprints,omitempty"`
}

// VerdictStatus is the outcome of a report.
type VerdictStatus string

// Verdict statuses.
const (
	// VerdictPass: no rule broken and no regression.
	VerdictPass VerdictStatus = "pass"
	// VerdictRegressions: no rule broken (or none given), but some
	// queries regressed beyond noise: not a pass to show in green.
	VerdictRegressions VerdictStatus = "regressions"
	// VerdictFail: a rule is broken.
	VerdictFail VerdictStatus = "fail"
	// VerdictIncomplete: a result is incomplete, interrupted or much
	// smaller than the other, and the comparison was allowed anyway:
	// its figures are not a verdict on the candidate. Or the latency
	// was not judged (Verdict.LatencyNotJudged: a replay of a
	// comparison of one run a side lagged), and nothing else failed.
	VerdictIncomplete VerdictStatus = "incomplete"
	// VerdictDiverged: the candidate, a replay, did different work than
	// the baseline (rows per call, ordering errors): its timings
	// measure another workload, so it is not judged.
	VerdictDiverged VerdictStatus = "diverged"
	// VerdictSummary: one result, nothing compared.
	VerdictSummary VerdictStatus = "summary"
)

// Verdict is the outcome, as data; internal/report words it.
type Verdict struct {
	Status VerdictStatus `json:"status"`
	Broken []Broken      `json:"broken,omitempty"`
	// Undecided are the rules queries may break that the runs could
	// not tell (decide.go): VerdictUndecided when no rule is broken.
	Undecided []Undecided `json:"undecided,omitempty"`
	// Look and Looks: the comparison is the Look-th look at the runs
	// of at most Looks (Options.Look); Alpha is the level of its
	// rules' decisions (LookAlpha). Absent for a comparison of one
	// look.
	Look  int     `json:"look,omitempty"`
	Looks int     `json:"looks,omitempty"`
	Alpha float64 `json:"look_alpha,omitempty"`
	// Regressions and TailRegressions count the queries of each
	// status; Worst is the first by impact.
	Regressions     int `json:"regressions"`
	TailRegressions int `json:"tail_regressions"`
	// MoreWork counts the work regressions (StatusMoreWork).
	MoreWork int `json:"more_work,omitempty"`
	// SlowerWhileBusier counts the queries slower beside the worst
	// regression, not counted as regressions.
	SlowerWhileBusier int    `json:"slower_while_busier,omitempty"`
	Worst             string `json:"worst,omitempty"`
	TooFewCalls       int    `json:"too_few_calls"`
	// NoiseMeasured: every side had runs enough for rank intervals at
	// the level; false when changes were judged against the default
	// noise floors.
	NoiseMeasured bool `json:"noise_measured"`
	// Mixed, Diverged and Incomplete repeat the report's, for the
	// verdict's wording.
	Mixed bool `json:"-"`
	// LatencyNotJudged says why no latency was judged (a replay of a
	// comparison of one run a side fell behind its schedule): the
	// status is then VerdictIncomplete, unless a rule on errors or
	// work is broken or the replay diverged; nil when latency was
	// judged. NotJudgedLag counts the queries so left unjudged
	// (StatusNotJudgedLag).
	LatencyNotJudged *LatencyNotJudged `json:"latency_not_judged,omitempty"`
	NotJudgedLag     int               `json:"not_judged_lag,omitempty"`
}

// Noise says how a comparison knew its noise.
type Noise struct {
	// Measured: both sides have runs enough for the exact rank
	// interval at Alpha (three each at 0.10).
	Measured bool `json:"measured"`
	// BaselineRuns and CandidateRuns count the runs of each side.
	BaselineRuns  int `json:"baseline_runs"`
	CandidateRuns int `json:"candidate_runs"`
	// MinRuns is how many runs a side needs for a rank interval at
	// Alpha (with as many on the other side).
	MinRuns int `json:"min_runs"`
	// Level is the rank intervals' confidence; 0 without them.
	Level float64 `json:"level,omitempty"`
	// Defaults are the noise floors assumed without measured noise.
	Defaults NoiseFloors `json:"default_floors"`
}

// Settings are the options a comparison ran with.
type Settings struct {
	MinCalls    int64   `json:"min_calls"`
	Alpha       float64 `json:"alpha"`
	MinEffect   float64 `json:"min_effect"`
	MinEffectMS float64 `json:"min_effect_ms"`
	// MinTimeShare: see Options.MinTimeShare (0: none).
	MinTimeShare float64 `json:"min_time_share"`
	// JudgeLevel is Options.JudgeLevel when it is not the default
	// (LevelServer): the level asked for the means.
	JudgeLevel Level `json:"judge_level,omitempty"`
}

// Report is a comparison, or the summary of one run. Its JSON form, with
// the words internal/report adds, is the contract of `pgrehearse report
// --json` (docs/report-json.md).
type Report struct {
	Kind     string    `json:"kind"` // always "report"
	Verdict  Verdict   `json:"verdict"`
	Warnings []Warning `json:"-"`
	Rules    []Rule    `json:"rules"`
	// Baseline and Candidate describe each side.
	Baseline  RunSummary  `json:"baseline"`
	Candidate *RunSummary `json:"candidate,omitempty"`
	// MixedLatency: the runs' latency sources differ (allowed by flag).
	MixedLatency bool `json:"mixed_latency,omitempty"`
	// Incomplete says why the comparison is not a verdict on the
	// candidate (allowed by Options.AllowIncomplete); see ErrIncomplete.
	Incomplete []Unjudgeable `json:"-"`
	Settings   Settings      `json:"settings"`
	Noise      Noise         `json:"noise"`
	// Resolution is the smallest change the rounds could tell, for the
	// run; nil without the noise measured.
	Resolution *Resolution `json:"resolution,omitempty"`
	// Queries holds every fingerprint of either side: regressions
	// first by impact, then the others by candidate total time.
	Queries []QueryDiff `json:"queries"`
	// Ranked lists of fingerprints: regressions of both kinds, by
	// impact and by factor.
	RegressionsByAddedTime []string    `json:"regressions_by_added_time"`
	RegressionsByFactor    []string    `json:"regressions_by_factor"`
	NewErrors              []ErrorDiff `json:"new_errors"`
	// UncodedErrors counts errors that one side logged without a
	// SQLSTATE and that were matched by count to the other side's.
	UncodedErrors int64    `json:"uncoded_errors_matched,omitempty"`
	OnlyBaseline  []string `json:"only_baseline"`
	OnlyCandidate []string `json:"only_candidate"`
	TooFewCalls   []string `json:"too_few_calls"`
	// SmallChanges differ beyond noise but under a floor: not
	// regressions, said so.
	SmallChanges []string `json:"small_changes"`
	// Divergence lists the queries that did different work in the two
	// sides (see Divergence); apart from regressions.
	Divergence []Divergence `json:"divergence"`
	// ServerWork says whether server work per call was compared; nil
	// when no run has server-side evidence (and none was expected).
	ServerWork *ServerWork `json:"server_work,omitempty"`
	// MoreWork are the work regressions, by WAL bytes added per run.
	MoreWork []string `json:"more_work,omitempty"`
	// SlowerWhileBusier are the queries slower beside a dominant
	// regression (StatusSlowerWhileBusier), by impact.
	SlowerWhileBusier []string `json:"slower_while_busier,omitempty"`
	// NotJudgedLag are the queries whose latency changed beyond the
	// floors but was not judged, a replay having lagged
	// (StatusNotJudgedLag), by the time they would have added.
	NotJudgedLag []string `json:"not_judged_lag,omitempty"`
	// ClientRoundTrips are, per replay run that kept them, its client
	// round trips beside its server-side time: context, never judged.
	ClientRoundTrips []RoundTrips `json:"client_round_trips,omitempty"`
	// ConnectionSetup is the replays' connection setup as a row of its
	// own (Kind RowConnectionSetup), when every run of both sides
	// connected MinConnections times at least (comparer.connectionSetup):
	// labelled by a query's rules, outside the verdict; nil otherwise.
	ConnectionSetup *QueryDiff `json:"connection_setup,omitempty"`

	// pairs are the runs paired with the other side's run beside them
	// in time (runPairs; nil where their order cannot pair them): what
	// the paired interval that may clear a rule reads (decide).
	pairs [][2]int
}

// Query returns the diff of fingerprint fp, or nil.
func (r *Report) Query(fp string) *QueryDiff {
	for i := range r.Queries {
		if r.Queries[i].Fingerprint == fp {
			return &r.Queries[i]
		}
	}
	return nil
}

func ratio(c, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return c / b
}

// Summarize describes one run without comparing it.
func Summarize(r *Run) *Report {
	o := Options{}.withDefaults()
	rep := &Report{Kind: "report", Baseline: summarize(r, nil), Rules: []Rule{}, Settings: settingsOf(o)}
	rep.Noise = Noise{BaselineRuns: 1, MinRuns: minRuns(o.Alpha), Defaults: o.Noise}
	for i := range r.Queries {
		q := &r.Queries[i]
		rep.Queries = append(rep.Queries, QueryDiff{Fingerprint: q.Fingerprint, Query: q.Query, Status: StatusSummary,
			Baseline: figures([]*Query{q}, []float64{rep.Baseline.SpanS}), BaselineRows: []*Query{q}})
	}
	slices.SortStableFunc(rep.Queries, func(a, b QueryDiff) int { return cmp.Compare(b.Baseline.TotalMS, a.Baseline.TotalMS) })
	rep.Warnings = runWarnings([]*Run{r})
	rep.Verdict = Verdict{Status: VerdictSummary}
	rep.addRoundTrips(r)
	rep.fillEmpty()
	return rep
}

func settingsOf(o Options) Settings {
	s := Settings{MinCalls: o.MinCalls, Alpha: o.Alpha, MinEffect: o.MinEffect, MinEffectMS: o.MinEffectMS, MinTimeShare: o.MinTimeShare}
	if o.JudgeLevel != LevelServer {
		s.JudgeLevel = o.JudgeLevel
	}
	return s
}

// minRuns is the fewest runs a side needs, with as many on the other,
// for a rank interval at level alpha.
func minRuns(alpha float64) int {
	for n := 1; n < 100; n++ {
		if stats.MinAlpha(n, n) <= alpha+1e-12 {
			return n
		}
	}
	return 100
}

func (r *Report) fillEmpty() {
	for _, p := range []*[]string{&r.RegressionsByAddedTime, &r.RegressionsByFactor, &r.OnlyBaseline, &r.OnlyCandidate, &r.TooFewCalls, &r.SmallChanges} {
		if *p == nil {
			*p = []string{}
		}
	}
	if r.NewErrors == nil {
		r.NewErrors = []ErrorDiff{}
	}
	if r.Divergence == nil {
		r.Divergence = []Divergence{}
	}
	if r.Queries == nil {
		r.Queries = []QueryDiff{}
	}
}

// Compare compares a candidate run with a baseline run: Runs with one run
// a side.
func Compare(base, cand *Run, opts Options) (*Report, error) {
	return Runs([]*Run{base}, []*Run{cand}, opts)
}

// Runs compares the candidate's runs with the baseline's (the control's).
// Each run gives, per query, its figures (mean, p50, p95, p99, calls);
// a query's effect on each is the candidate's median over the baseline's,
// with an interval from the run-to-run spread (package stats), and the
// baseline's own runs give its noise floor. With too few runs for the
// interval at Options.Alpha (three a side at the default), the noise is
// not measured: changes are judged against Options.Noise, and the
// verdict says so.
//
// It fails with an *IncompleteError when a result cannot be judged
// (unless Options.AllowIncomplete), and with a *MixedLatencyError when
// latency sources differ (unless Options.AllowMixedLatency).
func Runs(base, cand []*Run, opts Options) (*Report, error) {
	if len(base) == 0 || len(cand) == 0 {
		return nil, &IncompleteError{Reasons: []Unjudgeable{{Kind: UnjudgeableNoRuns}}}
	}
	o := opts.withDefaults()
	if _, err := ParseJudgeLevel(string(o.JudgeLevel)); err != nil {
		return nil, err
	}
	// A result that cannot be judged is refused first: whatever else is
	// wrong with the comparison, its figures are not a verdict.
	hc := histCache{}
	why := append(unjudgeable(base, cand, hc), o.Unjudgeable...)
	if len(why) > 0 && !o.AllowIncomplete {
		return nil, &IncompleteError{Reasons: why}
	}
	all := append(slices.Clone(base), cand...)
	mixed := false
	for _, r := range all[1:] {
		if r.LatencySource != all[0].LatencySource {
			mixed = true
			if !o.AllowMixedLatency {
				return nil, &MixedLatencyError{Baseline: all[0].Name(), Candidate: r.Name(),
					BaselineSource: all[0].LatencySource, CandidateSource: r.LatencySource}
			}
		}
	}
	rep := &Report{Kind: "report", Baseline: summarizeSide(base, hc), Rules: o.Rules, MixedLatency: mixed, Incomplete: why, Settings: settingsOf(o)}
	cs := summarizeSide(cand, hc)
	rep.Candidate = &cs
	if rep.Rules == nil {
		rep.Rules = []Rule{}
	}
	rep.Noise = Noise{BaselineRuns: len(base), CandidateRuns: len(cand), MinRuns: minRuns(o.Alpha), Defaults: o.Noise}
	if stats.MinAlpha(len(base), len(cand)) <= o.Alpha+1e-12 {
		rep.Noise.Measured = true
		rep.Noise.Level = stats.Level(len(base), len(cand), o.Alpha)
	}
	if mixed {
		rep.Warnings = append(rep.Warnings, Warning{Kind: WarnMixedLatency, Run: base[0].Name(), Source: base[0].LatencySource,
			Other: cand[0].Name(), OtherSource: cand[0].LatencySource})
	}
	rep.Warnings = append(rep.Warnings, runWarnings(all)...)
	if !rep.Noise.Measured {
		rep.Warnings = append(rep.Warnings, Warning{Kind: WarnNoiseNotMeasured, Runs: min(len(base), len(cand)), MinRuns: rep.Noise.MinRuns})
	}
	useHist := true
	for _, r := range all {
		useHist = useHist && r.HasHist()
	}
	if !useHist {
		rep.Warnings = append(rep.Warnings, Warning{Kind: WarnNoHistograms})
	}

	c := comparer{o: o, mixed: mixed, useHist: useHist, hist: hc, bSpans: spans(base), cSpans: spans(cand), bRunMS: runTimeMS(base)}
	c.pairs = runPairs(base, cand)
	rep.pairs = c.pairs
	c.tests = judgedFigures(base, cand, o.MinCalls)
	if useHist && rep.Noise.Measured {
		c.poolRoundNoise(base, cand)
	}
	bw, cw, work := rep.serverWork(base, cand, o)
	c.source, c.measured = base[0].LatencySource, rep.Noise.Measured
	c.appWindowed = map[string]bool{}
	c.bWork, c.cWork, c.bApp, c.cApp = bw, cw, appRows(base, c.appWindowed), appRows(cand, c.appWindowed)
	c.bServerRunMS, c.bAppRunMS = bw.timePerRun(), appRunMS(c.bApp)
	for _, fp := range fingerprints(all) {
		d := c.diff(rows(base, fp), rows(cand, fp))
		if work && d.Baseline != nil && d.Candidate != nil {
			c.work(&d, bw, cw, rep.Noise.Measured)
		}
		rep.Queries = append(rep.Queries, d)
	}
	rep.Resolution = c.resolution(len(base), len(cand), rep.Queries)
	rep.ConnectionSetup = c.connectionSetup(base, cand)
	// A lagging replay's latency is not judged: its changes are
	// relabelled before anything ranks them or counts them.
	rep.Verdict.LatencyNotJudged = laggedRuns(base, cand, rep.Noise.Measured || o.JudgeLaggedLatency)
	rep.markLagged()
	rep.markThrottled(o)
	if work {
		rep.rankWork()
	}
	rep.markBusier(c.cSpans)
	rep.decide(o)
	rep.rank()
	rep.NewErrors, rep.UncodedErrors = newErrors(base, cand)
	if rep.UncodedErrors > 0 {
		rep.Warnings = append(rep.Warnings, Warning{Kind: WarnUncodedErrors, Count: rep.UncodedErrors})
	}
	rep.Divergence = divergences(base, cand)
	rep.verdict()
	rep.addRoundTrips(base[0], cand[0])
	rep.fillEmpty()
	return rep, nil
}

// judgedFigures is how many figures the comparison judges: the mean and
// the p95 of every query in both sides with MinCalls timed calls in every
// run (as diff judges them).
func judgedFigures(base, cand []*Run, minCalls int64) int {
	n := 0
	for _, fp := range fingerprints(append(slices.Clone(base), cand...)) {
		b, k := rows(base, fp), rows(cand, fp)
		bSome, _ := present(b)
		cSome, _ := present(k)
		if bSome && cSome && minTimed(b) >= minCalls && minTimed(k) >= minCalls {
			n += 2
		}
	}
	return n
}

func spans(runs []*Run) []float64 {
	out := make([]float64, len(runs))
	for i, r := range runs {
		out[i] = r.SpanSeconds()
	}
	return out
}

// fingerprints are those of every run, each once, in the order first
// seen.
func fingerprints(runs []*Run) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range runs {
		for i := range r.Queries {
			fp := r.Queries[i].Fingerprint
			if !seen[fp] {
				seen[fp] = true
				out = append(out, fp)
			}
		}
	}
	return out
}

// rows are each run's row of fp, nil where a run lacks it.
func rows(runs []*Run, fp string) []*Query {
	out := make([]*Query, len(runs))
	for i, r := range runs {
		out[i] = r.Query(fp)
	}
	return out
}

// rank orders Queries and fills the ranked lists.
func (r *Report) rank() {
	var regs, busier []*QueryDiff
	for i := range r.Queries {
		q := &r.Queries[i]
		switch q.Status {
		case StatusRegressed, StatusTailRegressed:
			regs = append(regs, q)
		case StatusOnlyBaseline:
			r.OnlyBaseline = append(r.OnlyBaseline, q.Fingerprint)
		case StatusOnlyCandidate:
			r.OnlyCandidate = append(r.OnlyCandidate, q.Fingerprint)
		case StatusTooFewCalls:
			r.TooFewCalls = append(r.TooFewCalls, q.Fingerprint)
		case StatusSmallChange:
			r.SmallChanges = append(r.SmallChanges, q.Fingerprint)
		case StatusSlowerWhileBusier:
			busier = append(busier, q)
		}
	}
	slices.SortStableFunc(busier, func(a, b *QueryDiff) int {
		return cmp.Or(cmp.Compare(b.ImpactMS, a.ImpactMS), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	for _, q := range busier {
		r.SlowerWhileBusier = append(r.SlowerWhileBusier, q.Fingerprint)
	}
	byImpact := slices.Clone(regs)
	slices.SortStableFunc(byImpact, func(a, b *QueryDiff) int {
		return ByAddedTime(a.ImpactMS, a.Fingerprint, b.ImpactMS, b.Fingerprint)
	})
	for _, q := range byImpact {
		r.RegressionsByAddedTime = append(r.RegressionsByAddedTime, q.Fingerprint)
	}
	byFactor := slices.Clone(regs)
	slices.SortStableFunc(byFactor, func(a, b *QueryDiff) int {
		return cmp.Or(cmp.Compare(b.Factor, a.Factor), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	for _, q := range byFactor {
		r.RegressionsByFactor = append(r.RegressionsByFactor, q.Fingerprint)
	}
	// The table: regressions by impact, work regressions by WAL added,
	// then everything else by the time it costs in the candidate (or
	// the baseline, for queries gone).
	pos := map[string]int{}
	for i, fp := range slices.Concat(r.RegressionsByAddedTime, r.MoreWork, r.SlowerWhileBusier, r.NotJudgedLag) {
		pos[fp] = i
	}
	cost := func(q *QueryDiff) float64 {
		if q.Candidate != nil {
			return q.Candidate.TotalMS
		}
		return q.Baseline.TotalMS
	}
	slices.SortStableFunc(r.Queries, func(a, b QueryDiff) int {
		pa, aReg := pos[a.Fingerprint]
		pb, bReg := pos[b.Fingerprint]
		switch {
		case aReg && bReg:
			return cmp.Compare(pa, pb)
		case aReg:
			return -1
		case bReg:
			return 1
		}
		return cmp.Or(cmp.Compare(cost(&b), cost(&a)), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
}

// verdict applies the rules and decides the verdict.
func (r *Report) verdict() {
	for _, rule := range r.Rules {
		if r.Verdict.LatencyNotJudged != nil && latencyRule(rule.Metric) {
			continue
		}
		for i := range r.Queries {
			if b, ok := rule.check(&r.Queries[i], r.Settings, r.ServerWork); ok {
				r.Verdict.Broken = append(r.Verdict.Broken, b)
			}
		}
	}
	for i := range r.Queries {
		switch r.Queries[i].Status {
		case StatusRegressed:
			r.Verdict.Regressions++
		case StatusTailRegressed:
			r.Verdict.TailRegressions++
		case StatusMoreWork:
			r.Verdict.MoreWork++
		case StatusSlowerWhileBusier:
			r.Verdict.SlowerWhileBusier++
		case StatusNotJudgedLag:
			r.Verdict.NotJudgedLag++
		}
	}
	if len(r.RegressionsByAddedTime) > 0 {
		r.Verdict.Worst = r.RegressionsByAddedTime[0]
	} else if len(r.MoreWork) > 0 {
		r.Verdict.Worst = r.MoreWork[0]
	}
	r.Verdict.TooFewCalls = len(r.TooFewCalls)
	r.Verdict.NoiseMeasured = r.Noise.Measured
	r.Verdict.Mixed = r.MixedLatency
	nReg := r.Verdict.Regressions + r.Verdict.TailRegressions + r.Verdict.MoreWork
	switch {
	case len(r.Divergence) > 0:
		r.Verdict.Status = VerdictDiverged
	case len(r.Verdict.Broken) > 0:
		r.Verdict.Status = VerdictFail
	case len(r.Incomplete) > 0 || r.Verdict.LatencyNotJudged != nil:
		r.Verdict.Status = VerdictIncomplete
	case len(r.Verdict.Undecided) > 0:
		r.Verdict.Status = VerdictUndecided
	case nReg > 0:
		r.Verdict.Status = VerdictRegressions
	default:
		r.Verdict.Status = VerdictPass
	}
}

// medianInt is the median of integer counts, rounded down.
func medianInt(xs []int64) int64 {
	f := make([]float64, len(xs))
	for i, x := range xs {
		f[i] = float64(x)
	}
	return int64(math.Floor(stats.Median(f)))
}
