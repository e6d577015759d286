package cli

import (
	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/report"
)

// planFlags are the flags that explain the plans of what regressed.
type planFlags struct {
	controlDSN, candidateDSN string
	top                      int
	analyze                  bool
}

func addPlanFlags(fl *pflag.FlagSet, f *planFlags) {
	dsnVar(fl, &f.controlDSN, "control-dsn", "explain the regressed queries on this server, the baseline's (read-only; without it, the baseline's plans come from its log when it had auto_explain)")
	dsnVar(fl, &f.candidateDSN, "candidate-dsn", "explain the regressed queries on this server, the candidate's (read-only), and give the findings its catalog")
	addPlanOptionFlags(fl, f)
}

// addPlanOptionFlags registers how plans are explained, which report
// and rehearse share.
func addPlanOptionFlags(fl *pflag.FlagSet, f *planFlags) {
	fl.IntVar(&f.top, "plans-top", judge.DefaultPlansTop, "besides the regressed and diverged queries, explain this many queries by time added")
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

// planTop is --plans-top in the judge's terms, where 0 is the default.
func planTop(n int) int {
	if n == 0 {
		return -1
	}
	return n
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

// addPlansSection puts the plans section of the page right after its
// summary, where the regressions are listed (first without one).
func addPlansSection(p *htmlreport.Page, v *judge.Verdict) {
	s := report.PlansSection(v.Plans.Report, v.Plans.Flagged, planHints)
	at := 0
	for i, sec := range p.Sections {
		if sec.ID == "summary" {
			at = i + 1
		}
	}
	p.Sections = append(p.Sections[:at], append([]htmlreport.Section{s}, p.Sections[at:]...)...)
}
