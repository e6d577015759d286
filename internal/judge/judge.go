// Package judge turns the runs of two sides (or one run alone), or of N
// load levels of one side (a headroom search's steps), into one typed
// verdict: for two sides the comparison and its verdict, the plans behind
// it on both targets, and the findings (Judge, Verdict); for load levels
// each level's verdict against the side's own rounds at k = 1 under an
// SLO (Levels, Step, StepVerdict). A rehearsal's fixes are judged here
// too (Fix), and a sweep's step curves: their peak, knee and cliff and
// the comparison of configurations, against the noise of a step (Curves,
// Cliff). Every command that judges (rehearse, report, replay's own
// findings, analyze, findings, headroom, sweep) does it the same way and
// only renders what it returns.
package judge

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/compareplans"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Run is one run of a side as the judge reads it: its result, the
// workload the findings read from it, and the server-side evidence its
// replay kept (nil when none, or unreadable: only the page's evidence
// sections are lost).
type Run struct {
	Result   *results.Result
	Workload *findings.Workload
	Evidence *observe.Evidence
}

// NewRun reads res once for the judge.
func NewRun(res *results.Result) Run {
	ev, _ := observe.Decode(res.Evidence)
	return Run{Result: res, Workload: findings.FromResult(res), Evidence: ev}
}

// NewRuns is NewRun of each result.
func NewRuns(rs []*results.Result) []Run {
	out := make([]Run, len(rs))
	for i, res := range rs {
		out[i] = NewRun(res)
	}
	return out
}

// Results are the runs' results, in order.
func Results(runs []Run) []*results.Result {
	out := make([]*results.Result, len(runs))
	for i, r := range runs {
		out[i] = r.Result
	}
	return out
}

// Stage is a part of the verdict, reported to Options.OnStage as soon as
// it is known.
type Stage int

const (
	// StageCompared: Verdict.Comparison is set.
	StageCompared Stage = iota + 1
	// StageExplaining: the plans are about to be explained on both
	// targets (which may take a while).
	StageExplaining
	// StageExplained: Verdict.Plans is set.
	StageExplained
	// StageFindings: Verdict.Findings (nil when the run holds no
	// workload), Verdict.CatalogErr and Verdict.FindingsErr are set.
	StageFindings
)

// Catalog says where the findings read the candidate's catalog (its
// tables, indexes, statistics and plans).
type Catalog struct {
	// DSN is the server; empty: no catalog, and the findings that need
	// one say so.
	DSN string
	// Database is the database to read there; empty: the DSN's own.
	Database string
	// ExplainAnalyze allows the findings to run EXPLAIN ANALYZE of
	// plain SELECTs.
	ExplainAnalyze bool
	// Required makes a catalog that cannot be reached an error of the
	// findings, none evaluated; otherwise they are evaluated without
	// it, and the error is Verdict.CatalogErr.
	Required bool
}

// FindingsOptions ask the judge for the findings of the candidate's
// first run (the only run when there is no candidate), judged against
// the baseline's first run (errors only on the candidate).
type FindingsOptions struct {
	Catalog    Catalog
	Thresholds Thresholds
}

// Options are what to judge: the comparison's floors and rules, and
// what beyond the comparison. A command fills them from its flags.
type Options struct {
	// MinCalls is the fewest timed calls in every run for a query to be
	// judged.
	MinCalls int64
	// MinEffectMS is the fewest milliseconds a query's mean (or p95,
	// for its tail) must grow by to be called a regression; 0 means
	// DefaultComparisonMinEffectMS, negative none.
	MinEffectMS float64
	// AllowMixedLatency compares latencies measured in different
	// places, flagging every ratio.
	AllowMixedLatency bool
	// AllowIncomplete compares runs that cannot be judged; the verdict
	// is then never a pass.
	AllowIncomplete bool
	// Unjudgeable are reasons the caller knows the runs cannot be judged
	// (a rehearsal stopped early), besides those the comparison finds.
	Unjudgeable []compare.Unjudgeable
	// Rules (on the two sides) fail the comparison when broken.
	Rules PairRules
	// Look and Looks: the comparison is the Look-th look at runs that
	// a rehearsal adds while a query is undecided on a rule, of at most
	// Looks (compare.Options.Look); Looks 0 judges no rule undecided.
	Look, Looks int
	// ExpectWork says every run was observed (server work per call): a
	// run without it is said to leave server work uncompared.
	ExpectWork bool
	// JudgeLevel is the level a query's mean is judged on where every
	// run has it (compare.Options.JudgeLevel): empty or
	// MeanLevelServer, pg_stat_statements' time; MeanLevelApplication,
	// the replay's round trips. ParseMeanLevel reads a user's.
	JudgeLevel MeanLevel
	// Plans explains the plans behind the comparison on both targets;
	// nil leaves them out.
	Plans *PlansOptions
	// Examples, when set, gives the plans and the findings a real
	// execution of the statements whose normalized text cannot be
	// explained: it is called once, with the fingerprints of the
	// comparison, and returns where to look each one up (nil: none).
	Examples func(fingerprints []string) func(fingerprint string) *results.Sample
	// Findings evaluates the findings; nil leaves them out.
	Findings *FindingsOptions
	// OnStage is called as each part of the verdict is known, before
	// the next (perhaps long) one starts, so that a command shows it at
	// once; an error it returns stops the judging with that error.
	OnStage func(Stage, *Verdict) error
}

// Verdict is everything the judge found.
type Verdict struct {
	// Comparison is the comparison of the candidate's runs with the
	// baseline's, or the summary of the one run.
	Comparison *compare.Report
	// Plans are the plans explained on both targets; nil when not asked.
	Plans *compareplans.Result
	// Findings are the findings; nil when not asked or when the run
	// holds no workload.
	Findings *findings.Report
	// CatalogErr is why the candidate's catalog could not be read: the
	// findings that need it are left out (Catalog.Required unset).
	CatalogErr error
	// FindingsErr is why the findings could not be evaluated (Ctrl-C,
	// or a catalog that Catalog.Required and could not be reached).
	FindingsErr error
	// Batched is what batching the single-row INSERTs saved per row,
	// when rounds measured it (BatchInserts, AddBatchMeasure).
	Batched *BatchMeasure
}

// Judge compares the candidate's runs with the baseline's (or summarizes
// the baseline's one run when there is no candidate), then explains the
// plans and evaluates the findings as opts ask. A comparison that cannot
// be made returns its error (compare.ErrIncomplete,
// *compare.MixedLatencyError) and no verdict; plans that fail (Ctrl-C)
// return the verdict so far with the error; findings that fail are
// Verdict.FindingsErr, and the rest of the verdict stands.
func Judge(ctx context.Context, base, cand []Run, opts Options) (*Verdict, error) {
	if len(base) == 0 {
		return nil, errors.New("judge: no baseline run")
	}
	v := &Verdict{}
	var err error
	if v.Comparison, err = comparison(base, cand, opts.Comparison()); err != nil {
		return nil, err
	}
	if err := stage(opts, StageCompared, v); err != nil {
		return v, err
	}
	// One reading of the logs for examples, for the plans and the
	// findings alike.
	var examples func(fingerprint string) *explain.Sample
	if opts.Examples != nil && (opts.Plans != nil || opts.Findings != nil) {
		examples = opts.Examples(fingerprints(v.Comparison))
	}
	if opts.Plans != nil {
		if err := stage(opts, StageExplaining, v); err != nil {
			return v, err
		}
		po := opts.Plans.compareplans()
		po.Examples = examples
		v.Plans, err = compareplans.Run(ctx, compareplans.Input{Report: v.Comparison, Baseline: Results(base), Candidate: Results(cand)}, po)
		if err != nil {
			return v, err
		}
		if err := stage(opts, StageExplained, v); err != nil {
			return v, err
		}
	}
	if opts.Findings != nil {
		last := base[0]
		in := findings.Input{}
		if len(cand) > 0 {
			last = cand[0]
			in.Baseline = base[0].Workload
		}
		if last.Workload != nil {
			in.Workload, in.Observed, in.Examples = last.Workload, findings.ObservedFromResult(last.Result), examples
			v.Findings, v.CatalogErr, v.FindingsErr = Findings(ctx, in, opts.Findings.Catalog, v.Plans, opts.Findings.Thresholds.findings())
		}
		if err := stage(opts, StageFindings, v); err != nil {
			return v, err
		}
	}
	return v, nil
}

// fingerprints are those of rep's queries, then of its divergence.
func fingerprints(rep *compare.Report) []string {
	fps := make([]string, 0, len(rep.Queries)+len(rep.Divergence))
	for _, q := range rep.Queries {
		fps = append(fps, q.Fingerprint)
	}
	for _, d := range rep.Divergence {
		fps = append(fps, d.Fingerprint)
	}
	return fps
}

func stage(opts Options, s Stage, v *Verdict) error {
	if opts.OnStage == nil {
		return nil
	}
	return opts.OnStage(s, v)
}

// comparison is compare.Runs of the two sides, or the summary of the
// baseline's one run, refused as compare.Validate says unless the
// options allow an incomplete one.
func comparison(base, cand []Run, opts compare.Options) (*compare.Report, error) {
	if len(cand) == 0 {
		if err := compare.Validate(base[0].Result); err != nil && !opts.AllowIncomplete {
			return nil, err
		}
		return compare.Summarize(base[0].Result), nil
	}
	return compare.Runs(Results(base), Results(cand), opts)
}

// Findings evaluates the findings of in with the catalog of cat, reading
// the candidate's plans already explained (plans, when not nil) so that
// the findings and the plans section speak of the same plans. A catalog
// that cannot be reached is catalogErr, the findings evaluated without
// it, or err when cat.Required.
func Findings(ctx context.Context, in findings.Input, cat Catalog, plans *compareplans.Result, opts findings.Options) (rep *findings.Report, catalogErr, err error) {
	closeConn, cerr := findings.ConnectTo(ctx, cat.DSN, cat.Database, cat.ExplainAnalyze, &in)
	switch {
	case cerr != nil && cat.Required:
		return nil, nil, cerr
	case cerr != nil:
		catalogErr = cerr
	default:
		defer closeConn()
		if ce, ok := in.Explainer.(*catalog.Explainer); ok && plans != nil && plans.Findings != nil {
			plans.Findings.Next = ce
			in.Explainer = plans.Findings
		}
	}
	rep, err = findings.Evaluate(ctx, in, opts)
	if err != nil {
		return nil, catalogErr, err
	}
	return rep, catalogErr, nil
}

// String names the stage, for messages and tests.
func (s Stage) String() string {
	switch s {
	case StageCompared:
		return "compared"
	case StageExplaining:
		return "explaining"
	case StageExplained:
		return "explained"
	case StageFindings:
		return "findings"
	}
	return fmt.Sprintf("Stage(%d)", int(s))
}
