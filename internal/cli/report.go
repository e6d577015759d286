package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

type reportFlags struct {
	baseline    []string
	candidate   []string
	htmlPath    string
	jsonPath    string
	failOn      []string
	top         int
	minEffectMS float64
	judgeLevel  string
	findings    bool
	evidence    string
	minCalls    int64
	allowMixed  bool
	allowPart   bool
	plans       planFlags
}

func newReportCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report [flags] BASELINE.json [CANDIDATE.json] | --baseline A1.json A2.json ... --candidate B1.json B2.json ...",
		Short: "Compare results (analyze or replay JSON) and say what got slower, beyond noise",
		Long: `report compares a candidate with a baseline, per query fingerprint: calls,
errors, mean/p50/p95/p99 on both sides, each change with its interval, the
time a slowdown adds, and whether it is beyond noise. Results are the JSON of
"pgrehearse analyze --json" or "pgrehearse replay --json". With one file,
report summarizes it without comparing.

Several runs a side: --baseline A1.json A2.json A3.json --candidate B1.json
B2.json B3.json (replays of the same log onto the unchanged and the changed
target, say). Runs differ from each other by more than the calls inside one
run do, so the comparison tests over runs, as benchstat does: a query's
effect is the candidate's median over the baseline's, with the exact rank
interval over the runs mirrored about it (90% or more at the default level),
"~" when the interval holds 1; the baseline's own runs give each
query's noise floor, and a regression must exceed it, the effect floor
(+10%) and --min-effect-ms. Every figure is shown with its spread over the
runs (±).

With one run a side (the two-file form), run-to-run noise is not measured,
and the verdict says so: only changes beyond default noise floors, measured
on replays of one workload onto identical targets (docs/noise.md), are
judged, and nothing within them fails a rule. And when a replay of such a
comparison fell behind its schedule (lag p99 above its --max-lag, which it
warned of), its latencies include the replayer's delay and sessions that
overlapped otherwise than the original's: no latency is judged, the verdict
says "LATENCY NOT JUDGED" with the lag, the queries whose latency changed
are listed as "not judged (lag)", never as regressions, errors and
divergence are judged, and the exit code is 5.

Latency must be compared like with like: durations from a server log are
server-side, a replay's client round trips are not. Each result says which
it holds (latency_source); report refuses to compare different sources
unless --allow-mixed-latency is given, and then flags every ratio. A replay
run with --target-log also kept its client round trips: the summary, page
and JSON show them beside that run's server-side time (the network and
client overhead), never compared between runs nor judged.

A comparison that cannot be judged is refused (exit 5), with the reason and
the field named: a result that was interrupted or is incomplete (a replay
that lost more than its --max-lost of statements), an empty one, one whose
figures cannot be true (negative, not a number, a histogram whose count
differs from its calls), the same result given twice (or two analyses of
one log), or a candidate that measured less than 90% of the baseline's
statements over the same log time range. --allow-partial compares anyway,
and the verdict is then "NOT JUDGED, INCOMPLETE", never a pass.

A query with fewer than --min-calls timed calls in a run is listed as "too
few calls" and never called a regression. Regressions are ranked by the
time they add per run (a tail regression, whose p95 grew while its mean did
not, by what its slowest 5% of calls added) and by factor; errors that grew
are listed by SQLSTATE (errors a log without %e knows by message only are
matched by count, never new), and queries seen on one side only apart.

The summary goes to standard output, its verdict first. --html writes a
self-contained page (charts included, works offline); --json writes the
comparison (schema: docs/report-json.md), to standard output with
"--json -", in which case the summary goes to standard error.

` + planHelp + rulesHelp + `
` + exitHelp(exitDocFailOn, exitDocRefused, exitDocDiverged) + `  (2 also when --fail-on is given with one file, or when the latency
   sources differ without --allow-mixed-latency)
`,
		// The files of --baseline and --candidate follow their flag,
		// several of them (--baseline A1.json A2.json): cobra would take
		// the second one for a positional argument, so the arguments are
		// grouped first, then parsed.
		DisableFlagParsing: true,
		Args:               cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			if err := fl.Parse(groupSides(args)); err != nil {
				return flagError(cmd, err)
			}
			if help, _ := fl.GetBool("help"); help {
				return cmd.Help()
			}
			// The flags were parsed only now: their connection strings
			// are checked here.
			if err := checkDSNFlags(cmd); err != nil {
				return err
			}
			base, cand, err := reportSides(f, fl.Args())
			if err != nil {
				return err
			}
			return runReport(cmd.Context(), stdio, f, base, cand)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.htmlPath, "html", "", "write the report as one self-contained HTML `FILE`")
	fl.StringVar(&f.jsonPath, "json", "", `write the comparison as JSON to `+"`FILE`"+` ("-" for standard output)`)
	fl.StringArrayVar(&f.failOn, "fail-on", nil, "exit 3 when a `RULE` is broken, e.g. 'p95>+20%,errors>+1pp' (repeatable)")
	fl.StringArrayVar(&f.baseline, "baseline", nil, "the baseline's results, one per run: --baseline A1.json A2.json A3.json")
	fl.StringArrayVar(&f.candidate, "candidate", nil, "the candidate's results, one per run: --candidate B1.json B2.json B3.json")
	fl.IntVar(&f.top, "top", 10, "entries shown in each list of the summary, and distribution charts in the HTML (0: none)")
	fl.Int64Var(&f.minCalls, "min-calls", 10, "fewest timed calls in every run for a query to be judged")
	fl.Float64Var(&f.minEffectMS, "min-effect-ms", judge.DefaultComparisonMinEffectMS,
		"fewest milliseconds a query's mean (or p95, for its tail) must grow by to be called a regression (0: none); the default is what identical targets differed by (docs/noise.md); a slower mean that adds 1% of the run's time is not spared by it")
	judgeLevelFlag(fl, &f.judgeLevel)
	fl.StringVar(&f.evidence, "evidence", "", "add the server-side evidence of a replay's JSON (replay --observe) to the HTML page, as the candidate's")
	fl.BoolVar(&f.findings, "findings", true, "name the known performance traps in the candidate (the only result, with one)")
	fl.BoolVar(&f.allowMixed, "allow-mixed-latency", false, "compare results whose latencies were measured in different places, flagging every ratio")
	addPlanFlags(fl, &f.plans)
	fl.BoolVar(&f.allowPart, "allow-partial", false, "compare results that cannot be judged (incomplete, interrupted, much smaller, identical); the verdict is then never a pass")
	return cmd
}

// groupSides rewrites "--baseline A1 A2 --candidate B1 B2" as one flag
// per file, so that each file stays with its side: bare arguments after
// --baseline or --candidate belong to it, until the next flag.
func groupSides(args []string) []string {
	var out []string
	side := ""
	for i, a := range args {
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "--baseline" || a == "--candidate":
			side = a
		case len(a) > 1 && a[0] == '-':
			side = ""
			out = append(out, a)
		case side != "":
			out = append(out, side+"="+a)
		default:
			out = append(out, a)
		}
	}
	return out
}

// reportSides are the files of each side, from --baseline and
// --candidate or from the positional form (BASELINE [CANDIDATE]).
func reportSides(f reportFlags, args []string) (base, cand []string, err error) {
	switch {
	case len(f.baseline) > 0 || len(f.candidate) > 0:
		if len(args) > 0 {
			return nil, nil, usageError("give the results either as BASELINE CANDIDATE or with --baseline and --candidate, not both (extra: %s)", strings.Join(args, " "))
		}
		if len(f.baseline) == 0 || len(f.candidate) == 0 {
			return nil, nil, usageError("--baseline and --candidate go together: each needs at least one result")
		}
		return f.baseline, f.candidate, nil
	case len(args) == 0:
		return nil, nil, usageError("report needs a result to summarize, or results to compare: BASELINE.json [CANDIDATE.json]")
	case len(args) > 2:
		return nil, nil, usageError("report accepts between 1 and 2 positional results, got %d; give several runs a side with --baseline A1.json A2.json --candidate B1.json B2.json", len(args))
	case len(args) == 2:
		return args[:1], args[1:], nil
	}
	return args, nil, nil
}

func runReport(ctx context.Context, stdio IO, f reportFlags, basePaths, candPaths []string) error {
	rules, err := reportRules(f, len(candPaths) > 0)
	if err != nil {
		return err
	}
	if err := checkPlanFlags(f.plans, len(candPaths) > 0); err != nil {
		return err
	}
	if err := checkOutputs("--json", f.jsonPath, "--html", f.htmlPath); err != nil {
		return err
	}
	base, err := readReportRuns(basePaths)
	if err != nil {
		return err
	}
	cand, err := readReportRuns(candPaths)
	if err != nil {
		return err
	}
	summaryOut := summaryWriter(stdio, f.jsonPath, f.htmlPath)
	opts := judgeOptions(f, rules)
	if f.plans.given() {
		opts.Plans = &judge.PlansOptions{ControlDSN: f.plans.controlDSN, CandidateDSN: f.plans.candidateDSN, Top: planTop(f.plans.top),
			Analyze: f.plans.analyze}
	}
	if f.findings {
		// With --candidate-dsn, on its catalog and the plans already made.
		opts.Findings = &judge.FindingsOptions{Catalog: judge.Catalog{DSN: f.plans.candidateDSN}}
	}
	// The verdict comes first (writeVerdictFirst), with the top
	// regression's cause from the plans explained after the comparison:
	// the comparison's details, the plans and the findings wait for it.
	var details bytes.Buffer
	opts.OnStage = func(st judge.Stage, v *judge.Verdict) error {
		switch st {
		case judge.StageCompared:
			if err := report.WriteComparisonDetails(&details, v.Comparison, f.top); err != nil {
				return fmt.Errorf("write summary: %w", err)
			}
		case judge.StageExplaining:
			fmt.Fprintf(stdio.Stderr, "pgrehearse: explaining the plans of the regressed queries and of those that add the most time, on both servers\n")
		case judge.StageExplained:
			if err := report.WritePlans(&details, v.Plans.Report, v.Plans.Flagged, planHints); err != nil {
				return fmt.Errorf("write plans: %w", err)
			}
		case judge.StageFindings:
			if v.CatalogErr != nil {
				// The findings that need the server say they lacked it.
				fmt.Fprintf(stdio.Stderr, "pgrehearse: findings: --candidate-dsn: %v\n", v.CatalogErr)
			}
			// Interrupted, the findings are left out; the comparison is
			// still written.
			if v.Findings != nil {
				fmt.Fprintln(&details)
				if len(cand) > 0 {
					// Its shares of time are of one run: say which.
					fmt.Fprintln(&details, "Findings of the candidate's first run; a share of time is of that run, slowed by any regression above")
				}
				if err := report.WriteFindings(&details, v.Findings, reportHints); err != nil {
					return fmt.Errorf("write findings: %w", err)
				}
			}
		}
		return nil
	}
	v, err := judge.Judge(ctx, base, cand, opts)
	if v != nil && v.Comparison != nil {
		if werr := writeVerdictFirst(summaryOut, v, &details); werr != nil {
			return werr
		}
	}
	if err != nil {
		return judgeError(err, v)
	}
	if f.jsonPath != "" {
		if err := writeOutput(stdio.Stdout, f.jsonPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(report.VerdictDocument(v))
		}); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
	}
	if f.htmlPath != "" {
		if err := writeReportHTML(stdio.Stdout, f, v, base, cand); err != nil {
			return err
		}
		if f.htmlPath != "-" {
			fmt.Fprintf(summaryOut, "HTML report: %s\n", f.htmlPath)
		}
	}
	if v.FindingsErr != nil {
		return v.FindingsErr
	}
	switch {
	case v.Diverged():
		return &exitError{code: ExitDiverged, err: errors.New("the replay diverged: it did different work than the baseline, so the candidate is not judged")}
	case v.Failed():
		return &exitError{code: ExitRegression, err: errors.New("a --fail-on rule is broken")}
	case v.LatencyNotJudged():
		return errLatencyNotJudged
	}
	return nil
}

// errLatencyNotJudged ends a comparison that judged no latency (a replay behind its schedule, one run a side: issue 44).
var errLatencyNotJudged = &exitError{code: ExitIncomplete, err: errors.New("latency not judged: a replay fell behind its schedule " +
	"(see the verdict); replay again on a quieter machine or at a lower --speed, or compare three runs a side")}

// reportRules checks the flags against each other and parses --fail-on.
func reportRules(f reportFlags, compared bool) (judge.PairRules, error) {
	rules, err := judge.ParsePairRules(f.failOn)
	switch {
	case err != nil:
		return nil, usageError("--fail-on: %v", err)
	case len(rules) > 0 && !compared:
		return nil, usageError("--fail-on needs two results to compare, got one")
	case f.top < 0:
		return nil, usageError("--top must not be negative, got %d", f.top)
	case f.minEffectMS < 0:
		return nil, usageError("--min-effect-ms must not be negative, got %g", f.minEffectMS)
	case f.minCalls < 1:
		return nil, usageError("--min-calls must be at least 1, got %d", f.minCalls)
	case f.jsonPath == "-" && f.htmlPath == "-":
		return nil, usageError(`--json and --html cannot both go to standard output`)
	}
	if _, err := judge.ParseMeanLevel(f.judgeLevel); f.judgeLevel != "" && err != nil {
		return nil, usageError("--judge-level: %v", err)
	}
	return rules, nil
}

func readReportRuns(paths []string) ([]judge.Run, error) {
	runs := make([]judge.Run, len(paths))
	for i, p := range paths {
		res, err := readResultFile(p)
		if err != nil {
			return nil, err
		}
		runs[i] = judge.NewRun(res)
	}
	return runs, nil
}

// judgeOptions are the comparison's options as report's flags give
// them.
func judgeOptions(f reportFlags, rules judge.PairRules) judge.Options {
	return judge.Options{MinCalls: f.minCalls, MinEffectMS: minEffectMS(f.minEffectMS), AllowMixedLatency: f.allowMixed, AllowIncomplete: f.allowPart, Rules: rules,
		JudgeLevel: meanLevel(f.judgeLevel)}
}

// judgeLevelFlag adds --judge-level to fl.
func judgeLevelFlag(fl *pflag.FlagSet, v *string) {
	fl.StringVar(v, "judge-level", string(judge.MeanLevelServer), "the level a query's mean is judged on where every run has it: "+
		"server (pg_stat_statements' execution + planning time) or application (the replay's round trips: what the application waited, "+
		"with the replayer's own overhead per call on both sides)")
}

// meanLevel is --judge-level, checked by reportRules, in the judge's
// terms (empty: the default).
func meanLevel(s string) judge.MeanLevel {
	l, _ := judge.ParseMeanLevel(s)
	return l
}

// minEffectMS is --min-effect-ms in the judge's terms, where 0 is the
// default and a negative figure none.
func minEffectMS(flag float64) float64 {
	if flag == 0 {
		return -1 // none, as asked
	}
	return flag
}

// judgeError is the error of a judging that failed: a comparison refused
// says what to do, in the flags that allow it; Ctrl-C while the plans
// were explained says so.
// writeVerdictFirst writes v's verdict block (report.WriteVerdict, with
// the top regression's plans when they were explained), then details:
// what the comparison, the plans and the findings wrote, held until the
// verdict was whole.
func writeVerdictFirst(w io.Writer, v *judge.Verdict, details *bytes.Buffer) error {
	if err := report.WriteVerdict(w, v.Comparison, v.PlansReport()); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	if _, err := details.WriteTo(w); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

func judgeError(err error, v *judge.Verdict) error {
	switch {
	case judge.MixedLatency(err):
		return &exitError{code: ExitUsage, err: fmt.Errorf("%w. Compare results of the same source (replay --target-log gives server-side "+
			"durations), or pass --allow-mixed-latency to compare anyway with every ratio flagged", err)}
	case errors.Is(err, judge.ErrIncomplete):
		return refused(err)
	case errors.Is(err, context.Canceled) && v != nil && v.Comparison != nil:
		return &exitError{code: ExitFailure, err: errors.New("interrupted while explaining plans")}
	}
	return err
}

// refused says why results cannot be judged, each reason worded, with
// exit code 5.
func refused(err error) error {
	reasons, ok := judge.Refusal(err)
	if !ok {
		return err
	}
	why := make([]string, len(reasons))
	for i, u := range reasons {
		why[i] = report.UnjudgeableText(u)
	}
	return &exitError{code: ExitIncomplete, err: fmt.Errorf("REPORT REFUSED: the results cannot be judged:\n  %s\n"+
		"(--allow-partial compares anyway, and the verdict is then never a pass)", strings.Join(why, "\n  "))}
}

// writeReportHTML writes the comparison's page with the findings and
// every run's server-side evidence, --evidence's as the candidate's.
func writeReportHTML(stdout io.Writer, f reportFlags, v *judge.Verdict, base, cand []judge.Run) error {
	var extra []report.RunEvidence
	// A candidate that is the analysis of the target's own log has no
	// evidence; the replay that produced it does.
	if f.evidence != "" {
		data, err := os.ReadFile(f.evidence)
		if err != nil {
			return fmt.Errorf("--evidence: %w", err)
		}
		ev, err := observe.FromResult(data)
		if err != nil || ev == nil {
			return usageError("--evidence %s holds no server-side evidence (a replay run with --observe)", f.evidence)
		}
		extra = append(extra, report.RunEvidence{Label: "candidate", Evidence: ev})
	}
	return writeComparisonHTML(stdout, f.htmlPath, f.top, [2]string{"baseline", "candidate"}, v, base, cand, extra, nil)
}

// writeComparisonHTML writes a comparison's page to path with the
// findings and every run's server-side evidence, labelled by the sides'
// names (and the run's number when a side has several), then extra; the
// verdict box holds the top regression's cause and fix when the plans
// were explained, and the page the fixes tried (rehearse's) when tried
// holds some.
func writeComparisonHTML(stdout io.Writer, path string, top int, names [2]string, v *judge.Verdict, base, cand []judge.Run, extra []report.RunEvidence, tried []fixes.Outcome) error {
	opts := report.ComparisonOptions{Top: min(top, 12), Findings: v.Findings, Hints: reportHints, Fixes: tried, Batched: v.Batched}
	if v.Plans != nil {
		opts.Plans = v.Plans.Report
	}
	for side, runs := range [][]judge.Run{base, cand} {
		for i, run := range runs {
			label := ""
			if len(cand) > 0 {
				label = names[side]
				if len(runs) > 1 {
					label += fmt.Sprintf(" %d", i+1)
				}
			}
			opts.Evidence = append(opts.Evidence, report.RunEvidence{Label: label, Evidence: run.Evidence})
		}
	}
	opts.Evidence = append(opts.Evidence, extra...)
	page := report.ComparisonPage(v.Comparison, opts)
	if v.Plans != nil {
		addPlansSection(&page, v)
	}
	if err := writeOutput(stdout, path, func(w io.Writer) error { return htmlreport.Write(w, page) }); err != nil {
		return fmt.Errorf("write HTML: %w", err)
	}
	return nil
}

// readResultFile reads an analysis or replay result, and says how to
// write one when the file is not a result at all.
func readResultFile(path string) (*results.Result, error) {
	r, err := results.ReadFile(path)
	if errors.Is(err, results.ErrNotResult) {
		return nil, fmt.Errorf("%w; write one with analyze --json or replay --json", err)
	}
	return r, err
}

// rulesHelp documents the judge's rule language (judge.ParsePairRule) for
// report --help.
const rulesHelp = `A --fail-on rule is METRIC>THRESHOLD; several rules are separated by commas
or given in repeated flags, and the run fails when any rule is broken.
  METRIC     mean, p50, p95, p99 (latency), total_ms (a query's total time),
             errors (a query's error rate), wal and dirtied (WAL bytes and
             shared blocks dirtied per call: +N% or Nx only)
  THRESHOLD  +N%   grew by more than N percent          p95>+20%
             Nx    grew by more than a factor N          mean>2x
             +Nms  grew by more than N milliseconds      p99>+50ms
             +Npp  errors only: the error rate grew by   errors>+1pp
                   more than N percentage points
Rules apply per query, to changes beyond noise only: a latency rule is
broken by a query whose figure is slower with its interval above 1, beyond
its floors (effect, noise, --min-effect-ms) and beyond the threshold (and
that has at least the minimum of timed calls in every run); under
--min-effect-ms (and, for a mean, 1% of the run's time), with three runs a
side, by a query whose whole interval of the mean or the p95, and its
calls' at the level of every figure judged (without histograms, its
runs' at that level), lie beyond the threshold: the
rule is the user's own statement of what matters (the query is then
regressed, its notes saying how little it adds); or by a query
labelled a regression whose regressed figure is beyond the threshold when
the rule's own figure cannot tell (a p95 of too few calls), an errors rule
by a query whose error rate rose significantly (one-sided two-proportion
test over the calls of all runs), a wal or dirtied rule by a query that
writes more per call beyond noise and the work floors (three runs a side).
A mean rule reads the server's time per call (pg_stat_statements' execution
and planning) where every run has it and the noise is measured, else the
results' durations; the percentiles are the log's distribution. Queries
found in one run only never break a rule; they are listed apart.`
