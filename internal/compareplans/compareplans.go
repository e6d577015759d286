package compareplans

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// DefaultTop is how many queries by time added are explained besides the
// regressed and diverged ones.
const DefaultTop = 20

// Options configure Run.
type Options struct {
	// ControlDSN and CandidateDSN are the servers to explain on. Without
	// a control, the baseline's logged plans (auto_explain) stand for
	// its plans.
	ControlDSN, CandidateDSN string
	// Top is how many queries by time added are explained besides the
	// regressed and diverged ones; 0 means DefaultTop, negative none.
	Top int
	// Analyze allows EXPLAIN (ANALYZE, BUFFERS) of plain SELECTs with
	// known values (explain.Options.Analyze).
	Analyze bool
	// StatementTimeout bounds each statement explain sends (0: its
	// default).
	StatementTimeout time.Duration
	// Database is where statements whose samples do not say run (a
	// rehearsal's targets know the workload's); empty: each DSN's own.
	Database string
	// Databases map, per side, a statement's database to the one to
	// explain it in (explain.Options.Databases).
	Databases map[explain.Side]map[string]string
	// Examples gives a real execution of a fingerprint from the log, for
	// the statements whose normalized text cannot be explained
	// (explain.Options.Examples).
	Examples func(fingerprint string) *explain.Sample
	// Progress, when set, is called after each statement.
	Progress func(done, total int)
}

// Result is what Run found.
type Result struct {
	// Report is explain's, its plans redacted.
	Report *explain.Report
	// Flagged holds the comparison's status of the fingerprints it
	// found slower (a latency regression) or doing more work per call
	// (compare.StatusMoreWork): a same plan among them is "same plan,
	// slower" or "same plan, more work", and its causes are named.
	Flagged map[string]compare.Status
	// KeptSamples: some statement was explained with kept parameter
	// values; without, every plan with parameters is generic.
	KeptSamples bool
	// Findings serves the candidate's plans to the findings
	// (missing-index), made before the plans were redacted: set its
	// Next to a connection for what it does not hold.
	Findings *explain.FindingsExplainer
}

// Input is a comparison and the results it compared.
type Input struct {
	Report              *compare.Report
	Baseline, Candidate []*results.Result
}

// Statements returns what to explain for in, in order: the latency
// regressions by time added, the work regressions (more WAL or dirtied
// blocks per call) as compare ranks them (by what they add per run), the divergent queries, then the
// top queries by time added (top of them, regressed or not), each once;
// with the samples (the baseline's, else the candidate's) and the
// baseline's logged plan. Every regression of either kind is explained,
// whatever top is: the latency regressions come first because they are
// what the verdict names first.
func Statements(in Input, top int) []explain.Statement {
	if top == 0 {
		top = DefaultTop
	}
	rep := in.Report
	var order []string
	seen := map[string]bool{}
	add := func(fp string) {
		if !seen[fp] {
			seen[fp] = true
			order = append(order, fp)
		}
	}
	for _, fp := range rep.RegressionsByAddedTime {
		add(fp)
	}
	for _, fp := range rep.MoreWork {
		add(fp)
	}
	for _, d := range rep.Divergence {
		add(d.Fingerprint)
	}
	var byAdded []*compare.QueryDiff
	for i := range rep.Queries {
		if q := &rep.Queries[i]; q.AddedMS > 0 && q.Baseline != nil && q.Candidate != nil {
			byAdded = append(byAdded, q)
		}
	}
	slices.SortStableFunc(byAdded, func(a, b *compare.QueryDiff) int { return cmp.Compare(b.AddedMS, a.AddedMS) })
	for _, q := range byAdded[:max(0, min(top, len(byAdded)))] {
		add(q.Fingerprint)
	}
	out := make([]explain.Statement, 0, len(order))
	for _, fp := range order {
		q := rep.Query(fp)
		text := ""
		if q != nil {
			text = q.Query
		} else {
			for _, d := range rep.Divergence {
				if d.Fingerprint == fp {
					text = d.Query
				}
			}
		}
		st := explain.Statement{Fingerprint: fp, Query: text, Samples: samplesOf(fp, in.Baseline, in.Candidate), MoreWork: moreWork(q)}
		for _, r := range in.Baseline {
			if lp := r.LoggedPlanOf(fp); lp != nil {
				st.Logged = lp.Plan
				break
			}
		}
		out = append(out, st)
	}
	return out
}

// moreWork is the work per call the comparison found q's candidate does
// more of: the metric that made it a work regression (or that its
// latency regression also does more of), and the other if it grew beyond
// noise and the relative work floor too; nil when work was not judged.
func moreWork(q *compare.QueryDiff) []explain.Work {
	if q == nil || q.Work == nil || !q.Work.Judged {
		return nil
	}
	var out []explain.Work
	for _, m := range []struct {
		metric compare.Metric
		work   explain.Work
	}{{compare.MetricWALBytes, explain.WorkWAL}, {compare.MetricDirtied, explain.WorkDirtied}} {
		if e := q.Work.Of(m.metric); q.Work.More == m.metric || e.Change == compare.ChangeMore && e.Beyond && e.Delta > 0 {
			out = append(out, m.work)
		}
	}
	return out
}

// samplesOf returns fingerprint's samples from the first run of a side
// that kept them, the baseline's first: its values are production's.
func samplesOf(fp string, sides ...[]*results.Result) []explain.Sample {
	for _, runs := range sides {
		for _, r := range runs {
			if s := r.SamplesOf(fp); len(s) > 0 {
				return s
			}
		}
	}
	return nil
}

// Flagged returns the status of each query rep found slower (its latency
// regressions) or doing more work per call (StatusMoreWork).
func Flagged(rep *compare.Report) map[string]compare.Status {
	out := map[string]compare.Status{}
	for i := range rep.Queries {
		if q := &rep.Queries[i]; q.Status.Regression() || q.Status == compare.StatusMoreWork {
			out[q.Fingerprint] = q.Status
		}
	}
	return out
}

// Run explains in's statements on both servers. It fails only when ctx
// ends (with what was explained so far); a server that cannot be reached
// makes problems of its statements.
func Run(ctx context.Context, in Input, opts Options) (*Result, error) {
	stmts := Statements(in, opts.Top)
	for i := range stmts {
		if stmts[i].Database == "" && len(stmts[i].Samples) == 0 {
			stmts[i].Database = opts.Database
		}
	}
	rep, err := explain.Run(ctx, stmts, explain.Options{
		ControlDSN: opts.ControlDSN, CandidateDSN: opts.CandidateDSN, Analyze: opts.Analyze,
		StatementTimeout: opts.StatementTimeout, Progress: opts.Progress, Databases: opts.Databases,
		Examples: opts.Examples,
	})
	if rep == nil {
		return nil, err
	}
	res := &Result{Report: rep, Flagged: Flagged(in.Report), Findings: rep.ForFindings(explain.Candidate, nil)}
	for _, st := range stmts {
		res.KeptSamples = res.KeptSamples || len(st.Samples) > 0
	}
	rep.Redact()
	return res, err
}
