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

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/observe"
	"github.com/pgrehearse/pgrehearse/internal/outfile"
	"github.com/pgrehearse/pgrehearse/internal/report"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

func init() { commands = append(commands, newReportCmd) }

type reportFlags struct {
	htmlPath    string
	jsonPath    string
	failOn      []string
	top         int
	minEffectMS float64
	findings    bool
	evidence    string
	minCalls    int64
	allowMixed  bool
	allowPart   bool
}

func newReportCmd(ctx context.Context, stdio IO) *cobra.Command {
	var f reportFlags
	cmd := &cobra.Command{
		Use:   "report [flags] BASELINE.json [CANDIDATE.json]",
		Short: "Compare two results (analyze or replay JSON) and say what got slower",
		Long: `report compares a candidate run with a baseline, per query fingerprint: calls,
errors, mean/p50/p95/p99 in both runs, their ratios, the time a slowdown adds,
and whether the difference is beyond noise. Results are the JSON of
"pgrehearse analyze --json" (best with --hist, whose latency histograms allow
a real significance test) or "pgrehearse replay --json". With one file,
report summarizes it without comparing.

Latency must be compared like with like: durations from a server log are
server-side, a replay's client round trips are not. Each result says which
it holds (latency_source); report refuses to compare different sources
unless --allow-mixed-latency is given, and then flags every ratio. A replay
run with --target-log also kept its client round trips: the summary, page
and JSON show them beside that run's server-side time (the network and
client overhead), never compared between runs nor judged.

A candidate that cannot be judged is refused (exit 5): a result that was
interrupted or is incomplete (a replay that lost more than its --max-lost of
statements), one with no statement, or a candidate that measured less than
90% of the baseline's statements over the same log time range (read from the
baseline's timeline). --allow-partial compares anyway, and its verdict is then
"NOT JUDGED, INCOMPLETE", never a pass.

A query with fewer than --min-calls timed calls in either run is listed as
"too few calls" and never called a regression. Regressions are ranked by
time added ((candidate mean - baseline mean) x candidate calls) and by
factor (ratio of means); errors that grew are listed by SQLSTATE, and
queries seen in one run only apart.

The summary goes to standard output, its verdict last. --html writes a
self-contained page (charts included, works offline); --json writes the
comparison (schema: docs/report-json.md), to standard output with
"--json -", in which case the summary goes to standard error.

` + rulesHelp + `
` + exitCodeHelp + `  (2 also when --fail-on is given with one file, or when the latency
   sources differ without --allow-mixed-latency)
`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), stdio, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.htmlPath, "html", "", "write the report as one self-contained HTML `FILE`")
	fl.StringVar(&f.jsonPath, "json", "", `write the comparison as JSON to `+"`FILE`"+` ("-" for standard output)`)
	fl.StringArrayVar(&f.failOn, "fail-on", nil, "exit 3 when a `RULE` is broken, e.g. 'p95>+20%,errors>+1pp' (repeatable)")
	fl.IntVar(&f.top, "top", 10, "entries shown in each list of the summary, and distribution charts in the HTML (0: none)")
	fl.Int64Var(&f.minCalls, "min-calls", 10, "fewest timed calls in each run for a query to be judged")
	fl.Float64Var(&f.minEffectMS, "min-effect-ms", 0, "fewest milliseconds a query's mean, p50 or p95 must grow by to be called a regression")
	fl.StringVar(&f.evidence, "evidence", "", "add the server-side evidence of a replay's JSON (replay --observe) to the HTML page, as the candidate's")
	fl.BoolVar(&f.findings, "findings", true, "name the known performance traps in the candidate (the only result, with one)")
	fl.BoolVar(&f.allowMixed, "allow-mixed-latency", false, "compare results whose latencies were measured in different places, flagging every ratio")
	fl.BoolVar(&f.allowPart, "allow-partial", false, "compare results that are incomplete, interrupted or much smaller than the baseline; the verdict is then never a pass")
	return cmd
}

func runReport(ctx context.Context, stdio IO, f reportFlags, paths []string) error {
	rules, err := reportRules(f, len(paths))
	if err != nil {
		return err
	}
	runs, err := readReportRuns(paths)
	if err != nil {
		return err
	}
	rep, err := compareRuns(runs, f, rules)
	if err != nil {
		return err
	}
	summaryOut := stdio.Stdout
	if f.jsonPath == "-" || f.htmlPath == "-" {
		summaryOut = stdio.Stderr
	}
	if err := report.WriteComparison(summaryOut, rep, f.top); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	var frep *findings.Report
	if f.findings {
		if frep = reportFindings(ctx, runs); frep != nil {
			fmt.Fprintln(summaryOut)
			if err := report.WriteFindings(summaryOut, frep, reportHints); err != nil {
				return fmt.Errorf("write findings: %w", err)
			}
		}
	}
	if f.jsonPath != "" {
		if err := writeOutput(stdio.Stdout, f.jsonPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(reportOutput{Report: rep, Findings: frep})
		}); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
	}
	if f.htmlPath != "" {
		if err := writeReportHTML(stdio.Stdout, f, rep, frep, runs); err != nil {
			return err
		}
		if f.htmlPath != "-" {
			fmt.Fprintf(summaryOut, "HTML report: %s\n", f.htmlPath)
		}
	}
	switch rep.Verdict.Status {
	case compare.VerdictDiverged:
		return &exitError{code: ExitDiverged, err: errors.New("the replay diverged: it did different work than the baseline, so the candidate is not judged")}
	case compare.VerdictFail:
		return &exitError{code: ExitRegression, err: errors.New("a --fail-on rule is broken")}
	}
	return nil
}

// reportRules checks the flags against each other and parses --fail-on.
func reportRules(f reportFlags, files int) ([]compare.Rule, error) {
	rules, err := compare.ParseRules(f.failOn)
	switch {
	case err != nil:
		return nil, usageError("--fail-on: %v", err)
	case len(rules) > 0 && files == 1:
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
	return rules, nil
}

// reportRun is one result given to report, read once, with what the
// findings and the page take from it.
type reportRun struct {
	res      *results.Result
	workload *findings.Workload
	// evidence is the server-side evidence a replay kept; nil when none
	// (or unreadable: the page only loses its sections).
	evidence *observe.Evidence
}

func readReportRuns(paths []string) ([]reportRun, error) {
	runs := make([]reportRun, len(paths))
	for i, p := range paths {
		res, err := readResultFile(p)
		if err != nil {
			return nil, err
		}
		ev, _ := observe.Decode(res.Evidence)
		runs[i] = reportRun{res: res, workload: findings.FromResult(res), evidence: ev}
	}
	return runs, nil
}

// compareRuns compares the candidate (the second run) with the baseline,
// or summarizes a single run; a comparison refused says what to do, in
// the flags that allow it.
func compareRuns(runs []reportRun, f reportFlags, rules []compare.Rule) (*compare.Report, error) {
	if len(runs) == 1 {
		return compare.Summarize(runs[0].res), nil
	}
	rep, err := compare.Compare(runs[0].res, runs[1].res, compare.Options{
		MinCalls: f.minCalls, MinEffectMS: f.minEffectMS, AllowMixedLatency: f.allowMixed, AllowIncomplete: f.allowPart, Rules: rules,
	})
	var mixed *compare.MixedLatencyError
	if errors.As(err, &mixed) {
		return nil, &exitError{code: ExitUsage, err: fmt.Errorf("%w. Compare results of the same source (replay --target-log gives server-side "+
			"durations), or pass --allow-mixed-latency to compare anyway with every ratio flagged", err)}
	}
	var inc *compare.IncompleteError
	if errors.As(err, &inc) {
		return nil, &exitError{code: ExitIncomplete, err: fmt.Errorf("REPORT REFUSED: the candidate cannot be judged:\n  %s\n"+
			"(--allow-partial compares anyway, and the verdict is then never a pass)", strings.Join(inc.Reasons, "\n  "))}
	}
	return rep, err
}

// reportFindings are the findings of the last result (the candidate),
// judged against the first when there are two: errors that appear only
// on the target. Nil when the last result holds no workload.
func reportFindings(ctx context.Context, runs []reportRun) *findings.Report {
	last := runs[len(runs)-1].workload
	if last == nil {
		return nil
	}
	in := findings.Input{Workload: last}
	if len(runs) == 2 {
		in.Baseline = runs[0].workload
	}
	return findings.Evaluate(ctx, in, findings.Options{})
}

// writeReportHTML writes the comparison's page with the findings and
// every run's server-side evidence, --evidence's as the candidate's.
func writeReportHTML(stdout io.Writer, f reportFlags, rep *compare.Report, frep *findings.Report, runs []reportRun) error {
	opts := report.ComparisonOptions{Top: min(f.top, 12), Findings: frep, Hints: reportHints}
	for i, run := range runs {
		label := ""
		if len(runs) == 2 {
			label = [2]string{"baseline", "candidate"}[i]
		}
		opts.Evidence = append(opts.Evidence, report.RunEvidence{Label: label, Evidence: run.evidence})
	}
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
		opts.Evidence = append(opts.Evidence, report.RunEvidence{Label: "candidate", Evidence: ev})
	}
	page := report.ComparisonPage(rep, opts)
	if err := writeOutput(stdout, f.htmlPath, func(w io.Writer) error { return htmlreport.Write(w, page) }); err != nil {
		return fmt.Errorf("write HTML: %w", err)
	}
	return nil
}

// reportOutput is what report --json writes: the comparison, and the
// findings under "findings".
type reportOutput struct {
	*compare.Report
	Findings *findings.Report `json:"findings,omitempty"`
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

// writeOutput renders into memory first so that a failed render leaves no
// half-written file, then writes path ("-" is stdout).
func writeOutput(stdout io.Writer, path string, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return err
	}
	if path == "-" {
		_, err := stdout.Write(buf.Bytes())
		return err
	}
	return outfile.Write(path, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err })
}

// rulesHelp documents compare's rule language (compare.ParseRule) for
// report --help.
const rulesHelp = `A --fail-on rule is METRIC>THRESHOLD; several rules are separated by commas
or given in repeated flags, and the run fails when any rule is broken.
  METRIC     mean, p50, p95, p99 (latency), total_ms (a query's total time),
             errors (a query's error rate)
  THRESHOLD  +N%   grew by more than N percent          p95>+20%
             Nx    grew by more than a factor N          mean>2x
             +Nms  grew by more than N milliseconds      p99>+50ms
             +Npp  errors only: the error rate grew by   errors>+1pp
                   more than N percentage points
Rules apply per query, to significant differences only: a latency rule is
broken by a query whose distributions differ beyond noise (and that has at
least the minimum of timed calls in both runs), an errors rule by a query
whose error rate rose significantly (one-sided two-proportion test).
Queries found in one run only never break a rule; they are listed apart.`
