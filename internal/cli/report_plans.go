package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/compareplans"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// planFlags are the flags that explain the plans of what regressed.
type planFlags struct {
	controlDSN, candidateDSN string
	top                      int
	analyze                  bool
	// database is where queries whose samples do not say run: empty
	// for report (each DSN's own), the workload's for rehearse.
	database string
	// databases map, per side, a statement's database to the one to
	// explain it in: a rehearsal's last round's copies.
	databases map[explain.Side]map[string]string
	// examples gives a real execution of a fingerprint from the logs,
	// for the texts that cannot be explained normalized; nil: none.
	examples func(fingerprint string) *explain.Sample
}

func addPlanFlags(fl *pflag.FlagSet, f *planFlags) {
	dsnVar(fl, &f.controlDSN, "control-dsn", "explain the regressed queries on this server, the baseline's (read-only; without it, the baseline's plans come from its log when it had auto_explain)")
	dsnVar(fl, &f.candidateDSN, "candidate-dsn", "explain the regressed queries on this server, the candidate's (read-only), and give the findings its catalog")
	addPlanOptionFlags(fl, f)
}

// addPlanOptionFlags registers how plans are explained, which report
// and rehearse share.
func addPlanOptionFlags(fl *pflag.FlagSet, f *planFlags) {
	fl.IntVar(&f.top, "plans-top", compareplans.DefaultTop, "besides the regressed and diverged queries, explain this many queries by time added")
	fl.BoolVar(&f.analyze, "explain-analyze", true, "run EXPLAIN (ANALYZE, BUFFERS) for plain SELECTs with kept values (read-only transaction, statement_timeout 10s), for per-node time and buffers")
}

// planHelp is report --help's paragraph on plans.
const planHelp = `With --control-dsn and --candidate-dsn, report explains on both servers
every query listed as regressed (slower, or writing more per call) or
diverged, and the top --plans-top by time added, and says per query "plan
changed" (the first nodes that differ), "same plan, slower" (the nodes whose
time or reads grew) or "same plan, more work", and the setting, index or
statistic behind it, such as an index on the candidate that stops an
update's HOT updates (docs/plans-json.md). A query is explained with
the parameter values of its slowest and its median execution when the
results kept them (analyze or replay --keep-samples); otherwise with its
generic plan, and the report says so; each query runs in the database of
its samples, else in the DSN's own. Without --control-dsn, the baseline's
plans are those its log holds, when production ran auto_explain. Explain
runs read-only, under statement_timeout and lock_timeout, and never runs a
write; the plans are written without their constants. Queries that cannot
be explained are listed with the reason.

`

func (f planFlags) given() bool { return f.controlDSN != "" || f.candidateDSN != "" }

// planHints are report's words for what the plans lack.
var planHints = report.PlanHints{KeepSamples: "analyze or replay --keep-samples", Connections: "--control-dsn and --candidate-dsn"}

// reportPlans explains the plans of the comparison's regressions when a
// server was given; nil when none was. Only Ctrl-C makes it fail: a
// server that cannot be reached is a problem of each statement, shown.
func reportPlans(ctx context.Context, stderr io.Writer, f planFlags, rep *compare.Report, base, cand []reportRun) (*compareplans.Result, error) {
	if !f.given() {
		return nil, nil
	}
	fmt.Fprintf(stderr, "pgrehearse: explaining the plans of the regressed queries and of those that add the most time, on both servers\n")
	res, err := compareplans.Run(ctx, compareplans.Input{Report: rep, Baseline: resultsList(base), Candidate: resultsList(cand)},
		compareplans.Options{ControlDSN: f.controlDSN, CandidateDSN: f.candidateDSN, Top: planTop(f.top), Analyze: f.analyze, Database: f.database, Databases: f.databases, Examples: f.examples})
	if err != nil && errors.Is(err, context.Canceled) {
		return res, &exitError{code: ExitFailure, err: errors.New("interrupted while explaining plans")}
	}
	return res, err
}

// planTop is --plans-top in compareplans' terms, where 0 is the default.
func planTop(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

func resultsList(runs []reportRun) []*results.Result {
	out := make([]*results.Result, len(runs))
	for i, r := range runs {
		out[i] = r.res
	}
	return out
}

// checkPlanFlags checks the plan flags against the results given.
func checkPlanFlags(f planFlags, compared bool) error {
	switch {
	case f.given() && !compared:
		return usageError("--control-dsn and --candidate-dsn explain what a comparison found: give two results to compare")
	case f.top < 0:
		return usageError("--plans-top must not be negative, got %d", f.top)
	}
	return nil
}

// connectReportFindings gives the findings the candidate's catalog and
// the plans already made, so that the missing-index finding reads the
// same plans as the plans section; a no-op without --candidate-dsn.
func connectReportFindings(ctx context.Context, f planFlags, pr *compareplans.Result, in *findings.Input) (func(), error) {
	if f.candidateDSN == "" {
		return func() {}, nil
	}
	closeConn, err := findings.Connect(ctx, f.candidateDSN, false, in)
	if err != nil {
		return nil, err
	}
	if ce, ok := in.Explainer.(*catalog.Explainer); ok && pr != nil && pr.Findings != nil {
		pr.Findings.Next = ce
		in.Explainer = pr.Findings
	}
	return closeConn, nil
}

// addPlansSection puts the plans section of the page right after its
// summary, where the regressions are listed (first without one).
func addPlansSection(p *htmlreport.Page, pr *compareplans.Result) {
	s := report.PlansSection(pr.Report, pr.Flagged, planHints)
	at := 0
	for i, sec := range p.Sections {
		if sec.ID == "summary" {
			at = i + 1
		}
	}
	p.Sections = append(p.Sections[:at], append([]htmlreport.Section{s}, p.Sections[at:]...)...)
}
