package compare

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Options tune a comparison. The zero value means the defaults.
type Options struct {
	// MinCalls is the fewest timed calls, in each run, for a query to be
	// judged; 0 means 10.
	MinCalls int64
	// Alpha is the significance level; 0 means 0.01.
	Alpha float64
	// MinEffect is the growth of mean, p50 or p95 (0.10 is 10%) that a
	// significant difference needs to be called a regression; 0 means
	// 0.10.
	MinEffect float64
	// MinEffectMS is the growth in milliseconds of mean, p50 or p95 that
	// a regression needs besides MinEffect; 0 means none. A p95 going
	// from 0.03 to 0.07 ms is "+133%" and can be scheduling noise on a
	// busy machine, yet costs nobody anything.
	MinEffectMS float64
	// AllowMixedLatency compares results of different latency sources
	// instead of refusing; every ratio is then marked mixed.
	AllowMixedLatency bool
	// AllowIncomplete compares results that cannot be judged (see
	// ErrIncomplete) instead of refusing; the verdict is then never a
	// pass.
	AllowIncomplete bool
	// Rules are the thresholds the comparison fails on.
	Rules []Rule
}

func (o Options) withDefaults() Options {
	if o.MinCalls <= 0 {
		o.MinCalls = 10
	}
	if o.Alpha <= 0 {
		o.Alpha = 0.01
	}
	if o.MinEffect <= 0 {
		o.MinEffect = 0.10
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
	StatusRegressed     Status = "regressed"      // significantly slower, beyond MinEffect
	StatusImproved      Status = "improved"       // significantly faster, beyond MinEffect
	StatusUnchanged     Status = "unchanged"      // within noise
	StatusSmallChange   Status = "small_change"   // beyond noise, but by less than MinEffect or MinEffectMS
	StatusTooFewCalls   Status = "too_few_calls"  // fewer than MinCalls timed calls in a run
	StatusOnlyBaseline  Status = "only_baseline"  // not seen in the candidate
	StatusOnlyCandidate Status = "only_candidate" // not seen in the baseline
	StatusSummary       Status = "summary"        // one run, nothing compared
)

// Figures are one run's figures for a query.
type Figures struct {
	Calls        int64   `json:"calls"`
	Errors       int64   `json:"errors"`
	TimedCalls   int64   `json:"timed_calls"`
	TotalMS      float64 `json:"total_ms"`
	MeanMS       float64 `json:"mean_ms"`
	P50MS        float64 `json:"p50_ms"`
	P95MS        float64 `json:"p95_ms"`
	P99MS        float64 `json:"p99_ms"`
	MaxMS        float64 `json:"max_ms"`
	ErrorRatePct float64 `json:"error_rate_pct"`
	// CallsPerS is calls over the run's span; 0 when the span is unknown.
	CallsPerS float64 `json:"calls_per_s,omitempty"`
}

// Ratios are candidate / baseline; 0 when the baseline figure is 0.
type Ratios struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
}

// Significance says whether two runs' latencies differ beyond noise.
type Significance struct {
	// Method is "histogram" (Mann-Whitney and KS on the buckets),
	// "summary" (the conservative quantile rule) or "none" (too few
	// calls).
	Method       string  `json:"method"`
	PMannWhitney float64 `json:"p_mann_whitney,omitempty"`
	PKS          float64 `json:"p_ks,omitempty"`
	// ProbSlower is P(candidate call slower than baseline call).
	ProbSlower  float64 `json:"prob_slower,omitempty"`
	Significant bool    `json:"significant"`
	// Direction is +1 when the candidate is slower, -1 faster, 0 unclear.
	Direction int `json:"direction"`
}

// QueryDiff is one fingerprint in both runs.
type QueryDiff struct {
	// belowMinEffectMS marks a slowdown smaller than Options.MinEffectMS:
	// latency rules ignore it.
	belowMinEffectMS bool

	Fingerprint string   `json:"fingerprint"`
	Query       string   `json:"query"`
	Status      Status   `json:"status"`
	Note        string   `json:"note,omitempty"`
	Baseline    *Figures `json:"baseline,omitempty"`
	Candidate   *Figures `json:"candidate,omitempty"`
	Ratio       *Ratios  `json:"ratio,omitempty"`
	// Factor is the ratio of means, the figure regressions are ranked by.
	Factor float64 `json:"factor,omitempty"`
	// AddedMS is what the change of mean costs at the candidate's volume:
	// (candidate mean - baseline mean) x candidate timed calls.
	AddedMS      float64       `json:"added_ms"`
	Significance *Significance `json:"significance,omitempty"`
	// ErrorsP is the p-value of the error rate's increase.
	ErrorsP float64 `json:"errors_p,omitempty"`
	// MixedLatency marks ratios of latencies measured in different
	// places (Options.AllowMixedLatency): not evidence of a regression.
	MixedLatency bool `json:"mixed_latency,omitempty"`

	// Rows are the source rows, for charts (histograms).
	BaselineRow  *Query `json:"-"`
	CandidateRow *Query `json:"-"`
}

// RunSummary describes one run as a whole.
type RunSummary struct {
	Name          string        `json:"file"`
	Kind          results.Kind  `json:"kind"`
	LatencySource LatencySource `json:"latency_source"`
	Partial       bool          `json:"partial,omitempty"`
	Statements    int64         `json:"statements"`
	Failed        int64         `json:"failed"`
	Queries       int           `json:"queries"`
	FirstTime     string        `json:"first_time,omitempty"`
	LastTime      string        `json:"last_time,omitempty"`
	SpanS         float64       `json:"span_s"`
	// StatementsPerS is statements over the span.
	StatementsPerS float64 `json:"statements_per_s"`
	// MeanMS is the mean over every timed call. P95MS is the p95 of
	// every timed call, known only when every row has its histogram.
	TimedCalls int64            `json:"timed_calls"`
	TotalMS    float64          `json:"total_ms"`
	MeanMS     float64          `json:"mean_ms"`
	P95MS      float64          `json:"p95_ms,omitempty"`
	Errors     map[string]int64 `json:"errors_by_sqlstate"`
	Timeline   *Timeline        `json:"timeline,omitempty"`
	// Sync and SyncWait are a replay's synchronization and its waits
	// (results.Replay), nil for an analysis or an older replay.
	Sync     *results.Sync         `json:"sync,omitempty"`
	SyncWait *results.Distribution `json:"sync_wait_ms,omitempty"`
	byFP     map[string]*Query
}

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
	// VerdictPass: no rule broken and no significant regression.
	VerdictPass VerdictStatus = "pass"
	// VerdictRegressions: no rule broken (or none given), but some
	// queries regressed significantly: not a pass to show in green.
	VerdictRegressions VerdictStatus = "regressions"
	// VerdictFail: a rule is broken.
	VerdictFail VerdictStatus = "fail"
	// VerdictIncomplete: a result is incomplete, interrupted or much
	// smaller than the other, and the comparison was allowed anyway:
	// its figures are not a verdict on the candidate.
	VerdictIncomplete VerdictStatus = "incomplete"
	// VerdictDiverged: the candidate, a replay, did different work than
	// the baseline (rows per call, ordering errors): its timings
	// measure another workload, so it is not judged.
	VerdictDiverged VerdictStatus = "diverged"
	// VerdictSummary: one result, nothing compared.
	VerdictSummary VerdictStatus = "summary"
)

// Verdict is the outcome in one line.
type Verdict struct {
	Status VerdictStatus `json:"status"`
	Line   string        `json:"line"`
	Broken []Broken      `json:"broken,omitempty"`
}

// Report is a comparison, or the summary of one run. Its JSON form is the
// contract of `pgrehearse report --json` (docs/report-json.md).
type Report struct {
	Kind      string      `json:"kind"` // always "report"
	Verdict   Verdict     `json:"verdict"`
	Warnings  []string    `json:"warnings,omitempty"`
	Rules     []Rule      `json:"rules"`
	Baseline  RunSummary  `json:"baseline"`
	Candidate *RunSummary `json:"candidate,omitempty"`
	// MixedLatency: the runs' latency sources differ (allowed by flag).
	MixedLatency bool `json:"mixed_latency,omitempty"`
	// Incomplete says why the comparison is not a verdict on the
	// candidate (allowed by Options.AllowIncomplete); see ErrIncomplete.
	Incomplete []string `json:"incomplete,omitempty"`
	Settings   struct {
		MinCalls  int64   `json:"min_calls"`
		Alpha     float64 `json:"alpha"`
		MinEffect float64 `json:"min_effect"`
		// MinEffectMS is Options.MinEffectMS.
		MinEffectMS float64 `json:"min_effect_ms,omitempty"`
	} `json:"settings"`
	// Queries holds every fingerprint of either run: regressions first
	// by added time, then the others by candidate total time.
	Queries []QueryDiff `json:"queries"`
	// Ranked lists of fingerprints.
	RegressionsByAddedTime []string    `json:"regressions_by_added_time"`
	RegressionsByFactor    []string    `json:"regressions_by_factor"`
	NewErrors              []ErrorDiff `json:"new_errors"`
	OnlyBaseline           []string    `json:"only_baseline"`
	OnlyCandidate          []string    `json:"only_candidate"`
	TooFewCalls            []string    `json:"too_few_calls"`
	// SmallChanges are queries that differ beyond noise but by less
	// than the effect floor: not regressions, said so.
	SmallChanges []string `json:"small_changes"`
	// Divergence lists the queries that did different work in the two
	// runs (see Divergence); apart from regressions.
	Divergence []Divergence `json:"divergence"`
	// ClientRoundTrips are, per replay run that kept them, its client
	// round trips beside its server-side time: context, never judged.
	ClientRoundTrips []RoundTrips `json:"client_round_trips,omitempty"`
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

func summarize(r *Run) RunSummary {
	s := RunSummary{
		Name: r.Name(), Kind: r.Kind, LatencySource: r.LatencySource, Partial: r.Partial,
		Statements: r.Statements.Total, Failed: r.Statements.Failed, Queries: len(r.Queries),
		FirstTime: r.FirstTime.String(), LastTime: r.LastTime.String(), SpanS: r.SpanSeconds(),
		Errors: r.ErrorsBySQLState, Timeline: r.Timeline, byFP: map[string]*Query{},
	}
	if s.Errors == nil {
		s.Errors = map[string]int64{}
	}
	if r.Replay != nil {
		s.Sync, s.SyncWait = r.Sync, r.SyncWait
	}
	for i := range r.Queries {
		q := &r.Queries[i]
		if _, dup := s.byFP[q.Fingerprint]; !dup {
			s.byFP[q.Fingerprint] = q
		}
		s.TimedCalls += q.TimedCalls
		s.TotalMS += q.TotalMS
	}
	if s.TimedCalls > 0 {
		s.MeanMS = s.TotalMS / float64(s.TimedCalls)
	}
	if r.HasHist() {
		s.P95MS = workloadP95(r)
	}
	if s.SpanS > 0 {
		s.StatementsPerS = float64(s.Statements) / s.SpanS
	}
	return s
}

func figures(q *Query, spanS float64) *Figures {
	f := &Figures{
		Calls: q.Calls, Errors: q.Errors, TimedCalls: q.TimedCalls, TotalMS: q.TotalMS,
		MeanMS: q.MeanMS, P50MS: q.P50MS, P95MS: q.P95MS, P99MS: q.P99MS, MaxMS: q.MaxMS,
	}
	if q.Calls > 0 {
		f.ErrorRatePct = 100 * float64(q.Errors) / float64(q.Calls)
	}
	if spanS > 0 {
		f.CallsPerS = float64(q.Calls) / spanS
	}
	return f
}

func ratio(c, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return c / b
}

// Summarize describes one run without comparing it.
func Summarize(r *Run) *Report {
	rep := &Report{Kind: "report", Baseline: summarize(r), Rules: []Rule{}}
	o := Options{}.withDefaults()
	rep.Settings.MinCalls, rep.Settings.Alpha, rep.Settings.MinEffect, rep.Settings.MinEffectMS = o.MinCalls, o.Alpha, o.MinEffect, o.MinEffectMS
	for i := range r.Queries {
		q := &r.Queries[i]
		rep.Queries = append(rep.Queries, QueryDiff{Fingerprint: q.Fingerprint, Query: q.Query, Status: StatusSummary,
			Baseline: figures(q, rep.Baseline.SpanS), BaselineRow: q})
	}
	slices.SortStableFunc(rep.Queries, func(a, b QueryDiff) int { return cmp.Compare(b.Baseline.TotalMS, a.Baseline.TotalMS) })
	if r.Partial {
		rep.Warnings = append(rep.Warnings, r.Name()+" is a partial result")
	}
	for _, w := range r.Warnings {
		rep.Warnings = append(rep.Warnings, r.Name()+": "+w)
	}
	if w, ok := sharedCPUWarning(r); ok {
		rep.Warnings = append(rep.Warnings, w)
	}
	rep.Verdict = Verdict{Status: VerdictSummary, Line: fmt.Sprintf("%s: %d statements, %d distinct queries (one result: nothing compared)",
		r.Name(), r.Statements.Total, len(r.Queries))}
	rep.addRoundTrips(r)
	rep.fillEmpty()
	return rep
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

// Compare compares candidate against baseline. It fails with a
// *MixedLatencyError when their latency sources differ, unless allowed.
func Compare(base, cand *Run, opts Options) (*Report, error) {
	o := opts.withDefaults()
	// A result that cannot be judged is refused first: whatever else is
	// wrong with the comparison, its figures are not a verdict.
	why := unjudgeable(base, cand)
	if len(why) > 0 && !o.AllowIncomplete {
		return nil, &IncompleteError{Reasons: why}
	}
	mixed := base.LatencySource != cand.LatencySource
	if mixed && !o.AllowMixedLatency {
		return nil, &MixedLatencyError{Baseline: base.Name(), Candidate: cand.Name(),
			BaselineSource: base.LatencySource, CandidateSource: cand.LatencySource}
	}
	rep := &Report{Kind: "report", Baseline: summarize(base), Rules: o.Rules, MixedLatency: mixed, Incomplete: why}
	cs := summarize(cand)
	rep.Candidate = &cs
	if rep.Rules == nil {
		rep.Rules = []Rule{}
	}
	rep.Settings.MinCalls, rep.Settings.Alpha, rep.Settings.MinEffect, rep.Settings.MinEffectMS = o.MinCalls, o.Alpha, o.MinEffect, o.MinEffectMS
	if mixed {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("MIXED LATENCY: %s is %s, %s is %s; every ratio compares different measurements",
			base.Name(), base.LatencySource, cand.Name(), cand.LatencySource))
	}
	for _, r := range []*Run{base, cand} {
		if r.Partial {
			rep.Warnings = append(rep.Warnings, r.Name()+" is a partial result: figures cover only what was read or run")
		}
		for _, w := range r.Warnings {
			rep.Warnings = append(rep.Warnings, r.Name()+": "+w)
		}
		if w, ok := sharedCPUWarning(r); ok {
			rep.Warnings = append(rep.Warnings, w)
		}
	}
	useHist := base.HasHist() && cand.HasHist()
	if !useHist {
		rep.Warnings = append(rep.Warnings, "latency histograms missing (a result of an older pgrehearse): "+
			"significance uses the conservative quantile rule")
	}

	seen := map[string]bool{}
	for i := range base.Queries {
		bq := &base.Queries[i]
		if seen[bq.Fingerprint] {
			continue
		}
		seen[bq.Fingerprint] = true
		cq := rep.Candidate.byFP[bq.Fingerprint]
		rep.Queries = append(rep.Queries, diffQuery(bq, cq, rep.Baseline.SpanS, cs.SpanS, useHist, mixed, o))
	}
	for i := range cand.Queries {
		cq := &cand.Queries[i]
		if seen[cq.Fingerprint] {
			continue
		}
		seen[cq.Fingerprint] = true
		rep.Queries = append(rep.Queries, diffQuery(nil, cq, rep.Baseline.SpanS, cs.SpanS, useHist, mixed, o))
	}
	rep.rank()
	rep.NewErrors = newErrors(base, cand)
	rep.Divergence = divergences(base, cand)
	rep.verdict()
	rep.addRoundTrips(base, cand)
	rep.fillEmpty()
	return rep, nil
}

func diffQuery(bq, cq *Query, bSpan, cSpan float64, useHist, mixed bool, o Options) QueryDiff {
	d := QueryDiff{BaselineRow: bq, CandidateRow: cq, MixedLatency: mixed}
	switch {
	case cq == nil:
		d.Fingerprint, d.Query, d.Status = bq.Fingerprint, bq.Query, StatusOnlyBaseline
		d.Baseline = figures(bq, bSpan)
		return d
	case bq == nil:
		d.Fingerprint, d.Query, d.Status = cq.Fingerprint, cq.Query, StatusOnlyCandidate
		d.Candidate = figures(cq, cSpan)
		return d
	}
	d.Fingerprint, d.Query = bq.Fingerprint, bq.Query
	b, c := figures(bq, bSpan), figures(cq, cSpan)
	d.Baseline, d.Candidate = b, c
	d.Ratio = &Ratios{Mean: ratio(c.MeanMS, b.MeanMS), P50: ratio(c.P50MS, b.P50MS), P95: ratio(c.P95MS, b.P95MS), P99: ratio(c.P99MS, b.P99MS)}
	d.Factor = d.Ratio.Mean
	if b.TimedCalls > 0 && c.TimedCalls > 0 {
		d.AddedMS = (c.MeanMS - b.MeanMS) * float64(c.TimedCalls)
	}
	d.ErrorsP = proportionIncrease(b.Errors, b.Calls, c.Errors, c.Calls)

	sig := &Significance{Method: "none"}
	d.Significance = sig
	if b.TimedCalls < o.MinCalls || c.TimedCalls < o.MinCalls {
		d.Status = StatusTooFewCalls
		d.Note = fmt.Sprintf("too few calls to judge: %d and %d timed calls (at least %d needed)", b.TimedCalls, c.TimedCalls, o.MinCalls)
		if d.Factor > 1 {
			d.Note += fmt.Sprintf("; looks %s slower, which may be noise", FormatFactor(d.Factor))
		}
		return d
	}
	if useHist {
		if err := histTest(bq, cq, sig, o.Alpha); err != nil {
			// A damaged histogram falls back to the quantiles.
			d.Note = err.Error() + "; judged by quantiles"
			summaryInto(b, c, sig)
		}
	} else {
		summaryInto(b, c, sig)
	}
	d.Status, d.Note = judge(d.Ratio, b, c, sig, o)
	d.belowMinEffectMS = grewMS(b, c) < o.MinEffectMS
	return d
}

// judge labels a query whose latencies were tested. The label must agree
// with the figures shown beside it: a query whose mean or p95 got slower
// beyond the effect floor is a regression even when its typical call got
// faster (a slower tail is what users feel), and improved only when no
// figure got worse.
func judge(r *Ratios, b, c *Figures, sig *Significance, o Options) (Status, string) {
	if !sig.Significant {
		return StatusUnchanged, ""
	}
	floor := 1 + o.MinEffect
	grew := max(r.Mean, r.P50, r.P95) >= floor
	shrank := min(nonZero(r.Mean), nonZero(r.P50), nonZero(r.P95)) <= 1/floor
	switch {
	case grew && grewMS(b, c) >= o.MinEffectMS:
		switch {
		case r.P50 <= 1/floor || (sig.Direction < 0 && r.P50 < floor):
			return StatusRegressed, "the typical call got faster but the tail slower: " + tailNote(r)
		case shrank:
			return StatusRegressed, "the typical call got slower but the tail faster: " + tailNote(r)
		}
		return StatusRegressed, ""
	case grew:
		return StatusSmallChange, fmt.Sprintf("slower beyond noise, but by less than %g ms", o.MinEffectMS)
	case shrank:
		return StatusImproved, ""
	default:
		return StatusSmallChange, fmt.Sprintf("different beyond noise, but by less than %.0f%%", o.MinEffect*100)
	}
}

func tailNote(r *Ratios) string {
	return fmt.Sprintf("p50 %s, mean %s, p95 %s", FormatFactor(r.P50), FormatFactor(r.Mean), FormatFactor(r.P95))
}

// grewMS is the largest growth of mean, p50 or p95, in ms.
func grewMS(b, c *Figures) float64 {
	return max(c.MeanMS-b.MeanMS, c.P50MS-b.P50MS, c.P95MS-b.P95MS)
}

func nonZero(v float64) float64 {
	if v == 0 {
		return math.Inf(1)
	}
	return v
}

func histTest(bq, cq *Query, sig *Significance, alpha float64) error {
	bb, err := Buckets(bq.Hist)
	if err != nil {
		return fmt.Errorf("baseline %w", err)
	}
	cb, err := Buckets(cq.Hist)
	if err != nil {
		return fmt.Errorf("candidate %w", err)
	}
	t := testBuckets(bb, cb)
	sig.Method = "histogram"
	sig.PMannWhitney, sig.PKS, sig.ProbSlower = t.PMannWhitney, t.PKS, t.ProbSlower
	// Two tests at once: Bonferroni, so each runs at alpha/2.
	sig.Significant = 2*min(t.PMannWhitney, t.PKS) < alpha
	switch {
	case !sig.Significant:
	case t.ProbSlower > 0.5:
		sig.Direction = 1
	case t.ProbSlower < 0.5:
		sig.Direction = -1
	}
	return nil
}

func summaryInto(b, c *Figures, sig *Significance) {
	sig.Method = "summary"
	sig.Direction = summaryTest(b, c)
	sig.Significant = sig.Direction != 0
}

// rank orders Queries and fills the ranked lists.
func (r *Report) rank() {
	var regs []*QueryDiff
	for i := range r.Queries {
		q := &r.Queries[i]
		switch q.Status {
		case StatusRegressed:
			regs = append(regs, q)
		case StatusOnlyBaseline:
			r.OnlyBaseline = append(r.OnlyBaseline, q.Fingerprint)
		case StatusOnlyCandidate:
			r.OnlyCandidate = append(r.OnlyCandidate, q.Fingerprint)
		case StatusTooFewCalls:
			r.TooFewCalls = append(r.TooFewCalls, q.Fingerprint)
		case StatusSmallChange:
			r.SmallChanges = append(r.SmallChanges, q.Fingerprint)
		}
	}
	byAdded := slices.Clone(regs)
	slices.SortStableFunc(byAdded, func(a, b *QueryDiff) int {
		return cmp.Or(cmp.Compare(b.AddedMS, a.AddedMS), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	for _, q := range byAdded {
		r.RegressionsByAddedTime = append(r.RegressionsByAddedTime, q.Fingerprint)
	}
	byFactor := slices.Clone(regs)
	slices.SortStableFunc(byFactor, func(a, b *QueryDiff) int {
		return cmp.Or(cmp.Compare(b.Factor, a.Factor), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	for _, q := range byFactor {
		r.RegressionsByFactor = append(r.RegressionsByFactor, q.Fingerprint)
	}
	// The table: regressions by added time, then everything else by the
	// time it costs in the candidate (or the baseline, for queries gone).
	pos := map[string]int{}
	for i, fp := range r.RegressionsByAddedTime {
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

func newErrors(base, cand *Run) []ErrorDiff {
	codes := map[string]bool{}
	for c := range cand.ErrorsBySQLState {
		codes[c] = true
	}
	var out []ErrorDiff
	for code := range codes {
		b, c := base.ErrorsBySQLState[code], cand.ErrorsBySQLState[code]
		if c <= b {
			continue
		}
		e := ErrorDiff{SQLState: code, Baseline: b, Candidate: c, New: b == 0}
		fps := map[string]bool{}
		for _, s := range errorSamples(cand) {
			if s.SQLState == code && !fps[s.Fingerprint] {
				fps[s.Fingerprint] = true
				e.Fingerprints = append(e.Fingerprints, s.Fingerprint)
			}
		}
		for _, q := range cand.Queries {
			if q.ErrorsBySQLState[code] > 0 && !fps[q.Fingerprint] {
				fps[q.Fingerprint] = true
				e.Fingerprints = append(e.Fingerprints, q.Fingerprint)
			}
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b ErrorDiff) int {
		return cmp.Or(cmp.Compare(b.Candidate-b.Baseline, a.Candidate-a.Baseline), strings.Compare(a.SQLState, b.SQLState))
	})
	return out
}

// verdict applies the rules and writes the verdict line.
func (r *Report) verdict() {
	for _, rule := range r.Rules {
		for i := range r.Queries {
			if b, ok := rule.check(&r.Queries[i]); ok {
				r.Verdict.Broken = append(r.Verdict.Broken, b)
			}
		}
	}
	nReg := len(r.RegressionsByAddedTime)
	regs := fmt.Sprintf("%d significant regression%s", nReg, plural(nReg))
	if nReg > 0 {
		q := r.Query(r.RegressionsByAddedTime[0])
		regs += fmt.Sprintf(", worst %s (%s mean, %s added)", q.Fingerprint, FormatFactor(q.Factor), FormatTotal(q.AddedMS))
	}
	if len(r.TooFewCalls) > 0 {
		regs += fmt.Sprintf("; %d quer%s with too few calls to judge", len(r.TooFewCalls), pluralY(len(r.TooFewCalls)))
	}
	prefix := ""
	if r.MixedLatency {
		prefix = "MIXED LATENCY SOURCES, ratios unreliable: "
	}
	switch {
	case len(r.Divergence) > 0:
		r.Verdict.Status = VerdictDiverged
		r.Verdict.Line = fmt.Sprintf("%sREPLAY DIVERGED: %d quer%s did different work than in the baseline (%s), so the timings compare different workloads and the candidate is not judged; %s",
			prefix, len(r.Divergence), pluralY(len(r.Divergence)), r.Divergence[0].Reason, regs)
	case len(r.Verdict.Broken) > 0:
		rules := map[string]int{}
		var order []string
		for _, b := range r.Verdict.Broken {
			if rules[b.Rule] == 0 {
				order = append(order, b.Rule)
			}
			rules[b.Rule]++
		}
		parts := make([]string, len(order))
		for i, o := range order {
			parts[i] = fmt.Sprintf("%s broken by %d quer%s", o, rules[o], pluralY(rules[o]))
		}
		r.Verdict.Status = VerdictFail
		r.Verdict.Line = prefix + "FAIL: " + strings.Join(parts, ", ") + "; " + regs
	case len(r.Incomplete) > 0:
		r.Verdict.Status = VerdictIncomplete
		r.Verdict.Line = prefix + "NOT JUDGED, INCOMPLETE: " + strings.Join(r.Incomplete, "; ") + "; " + regs
	case nReg > 0 && len(r.Rules) == 0:
		r.Verdict.Status = VerdictRegressions
		r.Verdict.Line = prefix + "REGRESSIONS (no rule to fail on): " + regs
	case nReg > 0:
		r.Verdict.Status = VerdictRegressions
		r.Verdict.Line = prefix + "REGRESSIONS, no rule broken: " + regs
	case len(r.Rules) == 0:
		r.Verdict.Status = VerdictPass
		r.Verdict.Line = prefix + "PASS (no rule to fail on): " + regs
	default:
		r.Verdict.Status = VerdictPass
		r.Verdict.Line = prefix + "PASS: no rule broken; " + regs
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pluralY(n int) string {
	if n == 1 {
		return "y"
	}
	return "ies"
}

// workloadP95 merges every query's histogram; 0 if one does not decode.
// errorSamples are a replay's error samples; none for an analysis.
func errorSamples(r *Run) []results.ErrorSample {
	if r.Replay == nil {
		return nil
	}
	return r.Errors
}

func workloadP95(r *Run) float64 {
	var all []Bucket
	var n int64
	for _, q := range r.Queries {
		if q.TimedCalls == 0 {
			continue
		}
		b, err := Buckets(q.Hist)
		if err != nil {
			return 0
		}
		all = append(all, b...)
		for _, x := range b {
			n += x.Count
		}
	}
	slices.SortFunc(all, func(a, b Bucket) int { return cmp.Compare(a.ValueUS, b.ValueUS) })
	want := int64(math.Ceil(0.95 * float64(n)))
	var cum int64
	for _, b := range all {
		if cum += b.Count; cum >= want {
			return float64(b.ValueUS) / 1000
		}
	}
	return 0
}
