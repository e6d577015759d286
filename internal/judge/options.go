package judge

import (
	"context"
	"errors"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/compareplans"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/fingerprint"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// DefaultComparisonMinEffectMS is the fewest milliseconds a query's mean
// (or p95) must grow by to be called a regression when
// Options.MinEffectMS is 0: what identical targets differed by
// (docs/noise.md).
const DefaultComparisonMinEffectMS = compare.DefaultMinEffectMS

// DefaultPlansTop is how many queries by time added are explained
// besides the regressed and diverged ones when PlansOptions.Top is 0.
const DefaultPlansTop = compareplans.DefaultTop

// PlansOptions ask the judge to explain the plans behind the comparison
// on both targets.
type PlansOptions struct {
	// ControlDSN and CandidateDSN are the servers to explain on; without
	// a control, the baseline's logged plans (auto_explain) stand for
	// its plans.
	ControlDSN, CandidateDSN string
	// Top is how many queries by time added are explained besides the
	// regressed and diverged ones; 0 means DefaultPlansTop, negative none.
	Top int
	// Analyze allows EXPLAIN (ANALYZE, BUFFERS) of plain SELECTs with
	// known values.
	Analyze bool
	// Database is where statements whose samples do not say run; empty:
	// each DSN's own.
	Database string
	// ControlDatabases and CandidateDatabases map a statement's database
	// to the one to explain it in on that side (a rehearsal's last
	// round's copies); nil: none for that side.
	ControlDatabases, CandidateDatabases map[string]string
}

// compareplans are the options of compareplans.Run that o gives.
func (o *PlansOptions) compareplans() compareplans.Options {
	dbs := map[explain.Side]map[string]string{}
	if o.ControlDatabases != nil {
		dbs[explain.Control] = o.ControlDatabases
	}
	if o.CandidateDatabases != nil {
		dbs[explain.Candidate] = o.CandidateDatabases
	}
	return compareplans.Options{ControlDSN: o.ControlDSN, CandidateDSN: o.CandidateDSN, Top: o.Top,
		Analyze: o.Analyze, Database: o.Database, Databases: dbs}
}

// Thresholds are the findings' thresholds a caller may change; 0 keeps
// the findings' own default of each.
type Thresholds struct {
	// IndexMinRows is the rows from which a table is big for
	// missing-index.
	IndexMinRows float64
	// KeyMinRows is the rows from which a table is large for
	// random-keys.
	KeyMinRows float64
	// HotCallsPerCore is hot-queryid's calls per second per CPU core.
	HotCallsPerCore float64
}

func (t Thresholds) findings() findings.Options {
	return findings.Options{IndexMinRows: t.IndexMinRows, KeyMinRows: t.KeyMinRows, HotCallsPerCore: t.HotCallsPerCore}
}

// MeanLevel is a level of time per call a query's mean may be judged
// on (Options.JudgeLevel).
type MeanLevel = compare.Level

// The levels a mean may be judged on.
const (
	MeanLevelServer      = compare.LevelServer
	MeanLevelApplication = compare.LevelApplication
)

// ParseMeanLevel reads the level to judge the means on: "server" or
// "application".
func ParseMeanLevel(s string) (MeanLevel, error) {
	return compare.ParseJudgeLevel(s)
}

// Comparison are the options of the comparison that o gives; a caller
// that compares more runs the same way (a rehearsal's fixes) uses them.
func (o Options) Comparison() compare.Options {
	return compare.Options{MinCalls: o.MinCalls, MinEffectMS: o.MinEffectMS, AllowMixedLatency: o.AllowMixedLatency,
		AllowIncomplete: o.AllowIncomplete, Unjudgeable: o.Unjudgeable, Rules: o.Rules, ExpectWork: o.ExpectWork,
		Look: o.Look, Looks: o.Looks, JudgeLevel: o.JudgeLevel}
}

// Compare compares the candidate's results with the baseline's as opts
// say (compare.Runs): the comparison alone, without the plans or the
// findings, for a caller that compares runs again the same way (a
// rehearsal's rounds, its fixes).
func Compare(base, cand []*results.Result, opts Options) (*Comparison, error) {
	return compare.Runs(base, cand, opts.Comparison())
}

// Comparison is the comparison of two sides' runs (Verdict.Comparison).
type Comparison = compare.Report

// Unjudgeable is a reason runs cannot be judged (Options.Unjudgeable,
// Refusal).
type Unjudgeable = compare.Unjudgeable

// UnjudgeablePartial: a rehearsal stopped before its last round.
const UnjudgeablePartial = compare.UnjudgeablePartial

// UnjudgeableThrottled: the candidate's rounds were throttled by the
// replay itself (compare.UnjudgeableThrottled).
const UnjudgeableThrottled = compare.UnjudgeableThrottled

// More is what more runs could tell a comparison (MoreRuns).
type More struct {
	// Undecided: a query's interval holds a ratio that breaks a rule
	// (compare's decide.go), whether or not another query has already
	// broken one (compare.Report.MoreRoundsWouldTell).
	Undecided bool `json:"undecided,omitempty"`
	// Wide are the queries that regressed whose mean's interval spans
	// more than the width asked (compare.Report.WideMeans).
	Wide []compare.WideMean `json:"wide,omitempty"`
}

// Any says whether more runs could tell anything.
func (m More) Any() bool { return m.Undecided || len(m.Wide) > 0 }

// DefaultWidth is the widest interval of a regression's mean, its high
// over its low, that MoreRuns accepts (compare.DefaultWidth).
const DefaultWidth = compare.DefaultWidth

// MoreRuns compares the candidate's runs with the baseline's as opts
// say and says what more runs could tell: a query undecided on a rule,
// and the regressions whose mean's interval spans more than width (0
// or 1: none asked). A comparison that cannot be made asks for nothing:
// more runs would not make it.
func MoreRuns(base, cand []Run, opts Options, width float64) More {
	if len(base) == 0 || len(cand) == 0 {
		return More{}
	}
	rep, err := Compare(Results(base), Results(cand), opts)
	if err != nil {
		return More{}
	}
	return More{Undecided: rep.MoreRoundsWouldTell(), Wide: rep.WideMeans(width)}
}

// Undecided says that no rule is broken but some query may break one,
// which the runs could not tell (Options.Looks).
func (v *Verdict) Undecided() bool {
	return v.Comparison.Verdict.Status == compare.VerdictUndecided
}

// NotJudged says that the comparison is no verdict on the candidate
// (Options.Unjudgeable, the results' own reasons) and that no rule is
// broken: not a pass, not a failure.
func (v *Verdict) NotJudged() bool {
	return v.Comparison.Verdict.Status == compare.VerdictIncomplete
}

// Diverged says that the candidate's runs did different work than the
// baseline's, so that the candidate is not judged.
func (v *Verdict) Diverged() bool {
	return v.Comparison.Verdict.Status == compare.VerdictDiverged
}

// Failed says that a rule of Options.Rules (PairRules) is broken.
func (v *Verdict) Failed() bool {
	return v.Comparison.Verdict.Status == compare.VerdictFail
}

// LatencyNotJudged says that the comparison judged no latency (a replay
// of a comparison of one run a side fell behind its schedule) and that
// nothing else decided the verdict: not a pass, not a failure.
func (v *Verdict) LatencyNotJudged() bool {
	c := v.Comparison.Verdict
	return c.LatencyNotJudged != nil && c.Status == compare.VerdictIncomplete
}

// A verdict that judged no latency, as a report's JSON carries it
// (verdict.status, verdict.latency_not_judged), for a command that reads
// one back.
type (
	VerdictStatus    = compare.VerdictStatus
	LatencyNotJudged = compare.LatencyNotJudged
)

// The status and the reason of such a verdict.
const (
	VerdictIncomplete     = compare.VerdictIncomplete
	NotJudgedReplayLagged = compare.NotJudgedReplayLagged
)

// ErrIncomplete is the error of runs that cannot be judged (an
// *IncompleteError says why); Options.AllowIncomplete compares them
// anyway, never as a pass.
var ErrIncomplete = compare.ErrIncomplete

// Refusal is why runs cannot be judged, as Judge's error says: each
// reason for report.UnjudgeableText; ok is false when err is not such
// a refusal.
func Refusal(err error) (reasons []compare.Unjudgeable, ok bool) {
	var inc *compare.IncompleteError
	if !errors.As(err, &inc) {
		return nil, false
	}
	return inc.Reasons, true
}

// MixedLatency says that err refuses to compare latencies measured in
// different places (a server log's against a replay's round trips),
// which Options.AllowMixedLatency allows.
func MixedLatency(err error) bool {
	var mixed *compare.MixedLatencyError
	return errors.As(err, &mixed)
}

// FindingsInput is a workload to name the traps of, as a command reads
// it: an analysis or a replay, and what was seen of its logs' events.
type FindingsInput struct {
	// Result is the workload's analysis or replay.
	Result *results.Result
	// Baseline, when set, is the run Result is compared with: the
	// errors finding then lists statements that failed only in Result.
	Baseline *results.Result
	// Sampler, when set, observed the events of Result's logs.
	Sampler *Sampler
	// ServerCPUs is the server's CPU count, 0 when unknown; CPUSource
	// says, in the caller's words, where it comes from.
	ServerCPUs int
	CPUSource  string
}

// WorkloadFindings evaluates the findings of in, alone, with the catalog
// of opts.Catalog (Findings).
func WorkloadFindings(ctx context.Context, in FindingsInput, opts FindingsOptions) (rep *findings.Report, catalogErr, err error) {
	fin := findings.Input{ServerCPUs: in.ServerCPUs, CPUSource: in.CPUSource}
	if in.Result != nil {
		fin.Workload = findings.FromResult(in.Result)
	}
	if in.Baseline != nil {
		fin.Baseline = findings.FromResult(in.Baseline)
	}
	if in.Sampler != nil {
		fin.Observed = in.Sampler.s.Result()
	}
	return Findings(ctx, fin, opts.Catalog, nil, opts.Thresholds.findings())
}

// Sampler observes a log's events on their way to an analysis, for the
// findings that need what only the events show (logged parameter values,
// an execution to explain).
type Sampler struct {
	s *findings.EventSampler
}

// NewSampler is a Sampler that fingerprints with cache.
func NewSampler(cache *fingerprint.Cache) *Sampler {
	return &Sampler{s: findings.NewEventSampler(cache)}
}

// Add observes one event (a source.Tap).
func (s *Sampler) Add(ev *event.Event) { s.s.Add(ev) }

// PlansReport is the report of the plans explained on both targets; nil
// when they were not asked for.
func (v *Verdict) PlansReport() *explain.Report {
	if v.Plans == nil {
		return nil
	}
	return v.Plans.Report
}
