package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

// This file words what compare returns as data: the verdict, warnings,
// the reasons a comparison is refused, a query's notes, a broken rule and
// a divergence. Every figure is formatted here.

// verdictQueryWidth is how much of a query's text a verdict line shows.
const verdictQueryWidth = 60

// fmtMS formats milliseconds with about three significant digits.
func fmtMS(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
}

// fmtSignedMS formats a difference in ms with its sign: "+0.158",
// "-1.20"; what rounds to zero is "+0.000", never "-0.000".
func fmtSignedMS(v float64) string {
	return signed(v < 0, fmtMS(math.Abs(v)), "0.")
}

// signed is s, a magnitude formatted, with "-" before it when neg, "+"
// otherwise and when s shows zero (it holds nothing but zeros).
func signed(neg bool, s, zeros string) string {
	if neg && strings.Trim(s, zeros) != "" {
		return "-" + s
	}
	return "+" + s
}

// fmtTotal formats a total time given in ms: "850 ms", "14.75 s".
func fmtTotal(ms float64) string {
	if ms >= 1000 || ms <= -1000 {
		return strconv.FormatFloat(ms/1000, 'f', 2, 64) + " s"
	}
	return fmtMS(ms) + " ms"
}

// fmtSignedTotal is fmtTotal with its sign: "+1.20 s", "-850 ms".
func fmtSignedTotal(ms float64) string {
	return signed(ms < 0, fmtTotal(math.Abs(ms)), "0. ms")
}

// fmtFactor formats a ratio as "4.00x"; "-" when undefined.
func fmtFactor(r float64) string {
	if r <= 0 || math.IsNaN(r) || math.IsInf(r, 0) {
		return "-"
	}
	if r >= wholeFrom {
		return strconv.FormatFloat(r, 'f', 0, 64) + "x"
	}
	return strconv.FormatFloat(r, 'f', 2, 64) + "x"
}

// fmtPoint formats a change shown with its interval, to the precision of
// the interval's bounds (fmtBound): three decimals close to 1, so that
// "1.00x (1.001-1.008)", a point printed outside its own interval, or
// "looks 1.00x slower", cannot be.
func fmtPoint(r float64) string {
	if nearOne(r) {
		return strconv.FormatFloat(r, 'f', 3, 64) + "x"
	}
	return fmtFactor(r)
}

// wholeFrom is where factors lose their decimals: what two decimals
// would print as 100.00.
const wholeFrom = 99.995

// nearOne is where factors and bounds get three decimals: two would round
// a bound that excludes 1 onto it.
func nearOne(r float64) bool { return r > 0.9 && r < 1.1 }

// fmtBound formats an interval's bound like a factor, without its "x".
func fmtBound(r float64) string {
	switch {
	case r >= math.MaxFloat64/2:
		return "∞"
	case r <= 0:
		return "0"
	case r >= wholeFrom:
		return strconv.FormatFloat(r, 'f', 0, 64)
	case nearOne(r):
		return strconv.FormatFloat(r, 'f', 3, 64)
	}
	return strconv.FormatFloat(r, 'f', 2, 64)
}

// fmtRoundNoise is a round noise factor as a share: 1.052 is "5.2%".
func fmtRoundNoise(f float64) string {
	return strconv.FormatFloat(100*(f-1), 'f', 1, 64) + "%"
}

// fmtEffect is a change with its interval: "2.38x (2.30-2.45)", and
// "~ 1.03x (0.91-1.17)" when the interval holds 1 (benchstat's "~").
func fmtEffect(e *compare.Effect) string {
	if e == nil {
		return "-"
	}
	s := fmtPoint(e.Ratio) + " (" + fmtBound(e.Low) + "-" + fmtBound(e.High) + ")"
	if e.Change == compare.ChangeNone {
		return "~ " + s
	}
	return s
}

// fmtSpread is the "±" of a figure over runs: " ±4%"; "" without runs.
func fmtSpread(s float64, runs int) string {
	if runs < 2 {
		return ""
	}
	return " ±" + strconv.FormatFloat(100*s, 'f', 0, 64) + "%"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// queryName is a query's shortened text after its fingerprint, for
// verdict lines.
func queryName(rep *compare.Report, fp string) string {
	if q := rep.Query(fp); q != nil {
		return fp + " " + strconv.Quote(OneLine(DisplayQuery(q.Query), verdictQueryWidth))
	}
	return fp
}

// noiseClause says how the comparison knew its noise.
func noiseClause(rep *compare.Report) string {
	n := rep.Noise
	if n.Measured {
		return fmt.Sprintf("run-to-run noise measured over %d and %d runs (%.0f%% intervals)", n.BaselineRuns, n.CandidateRuns, 100*n.Level) + levelsClause(rep)
	}
	runs := fmt.Sprintf("%d and %d runs", n.BaselineRuns, n.CandidateRuns)
	if n.BaselineRuns == n.CandidateRuns {
		runs = fmt.Sprintf("%d %s a side", n.BaselineRuns, plural(n.BaselineRuns, "run", "runs"))
	}
	return "run-to-run noise not measured (" + runs + "): only changes beyond the default floors are judged"
}

// LatencyNotJudgedText says why a comparison judged no latency: which
// replay fell behind its schedule, by how much, against which threshold,
// which side was slow, and what to do.
func LatencyNotJudgedText(nj *compare.LatencyNotJudged) string {
	runs := make([]string, len(nj.Runs))
	for i, r := range nj.Runs {
		runs[i] = fmt.Sprintf("the %s's replay (%s) fell behind the log's pace (lag p99 %s, above %s)", r.Side, r.Run, fmtTotal(r.LagP99MS), fmtTotal(r.MaxLagMS))
		if src := r.Sources; src != nil && src.TargetMS+src.ReplayerMS > 0 {
			if src.TargetMS >= src.ReplayerMS {
				runs[i] += fmt.Sprintf(", the target the slow side (%.0f%% of the lateness: a target too slow for the log's pace lags so, as does a busy machine)",
					100*src.TargetMS/(src.TargetMS+src.ReplayerMS))
			} else {
				runs[i] += fmt.Sprintf(", the replayer the slow side (%.0f%% of the lateness)", 100*src.ReplayerMS/(src.TargetMS+src.ReplayerMS))
			}
		}
	}
	return strings.Join(runs, ", and ") + ": its latencies include the replayer's own delay and sessions that overlapped otherwise than in the original, " +
		"and one run a side cannot tell that from the change; replay again on a quieter machine or at a lower --speed, or compare three runs a side " +
		"(errors, rows and server work are judged)"
}

// regressionsClause counts the regressions and names the worst.
func regressionsClause(rep *compare.Report) string {
	v := rep.Verdict
	n := v.Regressions + v.TailRegressions
	var s string
	switch {
	case v.LatencyNotJudged != nil && v.NotJudgedLag == 0:
		s = "no latency judged (none changed beyond the floors, which a lagging replay can hide too)"
	case v.LatencyNotJudged != nil:
		s = fmt.Sprintf("no latency judged: %d %s changed beyond the floors, not judged (lag)", v.NotJudgedLag, plural(v.NotJudgedLag, "query", "queries"))
	case n == 0 && v.MoreWork > 0:
		s = "no latency regression beyond noise"
	case n == 0:
		s = "no regression beyond noise"
	case v.TailRegressions == 0:
		s = fmt.Sprintf("%d %s", n, plural(n, "regression", "regressions"))
	default:
		s = fmt.Sprintf("%d %s (%d of the tail only)", n, plural(n, "regression", "regressions"), v.TailRegressions)
	}
	if q := rep.Query(v.Worst); q != nil && q.Effects != nil && q.Status.Regression() {
		e := q.Effects.Of(q.Regressed)
		what := figureName(q, q.Regressed)
		added := fmtSignedTotal(q.ImpactMS) + " per run"
		switch q.Regressed {
		case compare.MetricP95:
			added += " by the slowest 5% of calls"
		case compare.MetricP99:
			added += " by the slowest 1% of calls"
		}
		s += fmt.Sprintf(", worst %s (%s %s, %s)", queryName(rep, q.Fingerprint), what, fmtEffect(e), added)
	}
	if n := v.SlowerWhileBusier; n > 0 {
		s += fmt.Sprintf("; %d more %s slower beside it while the server was busier, not counted", n, plural(n, "query", "queries"))
	}
	if w := workClause(rep); w != "" {
		s += "; " + w
	}
	if v.TooFewCalls > 0 {
		s += fmt.Sprintf("; %d %s with too few calls to judge", v.TooFewCalls, plural(v.TooFewCalls, "query", "queries"))
	}
	return s
}

// ruledImpact says how the impact of a regression of the p50 or the p99
// is counted, when a rule made one; "" otherwise.
func ruledImpact(rep *compare.Report) string {
	var s string
	for _, fp := range rep.RegressionsByAddedTime {
		q := rep.Query(fp)
		if m := ruledFigure(q); m != "" && !strings.Contains(s, string(m)) {
			s += "; " + ruledImpactOf(m)
		}
	}
	return s
}

// ruledFigure is the figure a rule made q a regression of, the p50 or
// the p99, which the queries table does not show beside the mean and
// the p95; "" when q is no such regression.
func ruledFigure(q *compare.QueryDiff) compare.Metric {
	if q.Status.Regression() && (q.Regressed == compare.MetricP50 || q.Regressed == compare.MetricP99) {
		return q.Regressed
	}
	return ""
}

// ruledImpactOf says how the impact of a regression of m (the p50 or
// the p99) is counted.
func ruledImpactOf(m compare.Metric) string {
	if m == compare.MetricP50 {
		return "p50 change x calls"
	}
	return "p99 change x 1% of calls"
}

// VerdictLine words a report's verdict in one line: what a CI log and
// the page show first.
func VerdictLine(rep *compare.Report) string {
	v := rep.Verdict
	if v.Status == compare.VerdictSummary {
		return fmt.Sprintf("%s: %d statements, %d distinct queries (one result: nothing compared)", rep.Baseline.Name, rep.Baseline.Statements, rep.Baseline.Queries)
	}
	prefix := ""
	if v.Mixed {
		prefix = "MIXED LATENCY SOURCES, ratios unreliable: "
	}
	regs := regressionsClause(rep) + "; " + noiseClause(rep)
	switch v.Status {
	case compare.VerdictDiverged:
		d := rep.Divergence[0]
		return fmt.Sprintf("%sREPLAY DIVERGED: %d %s did different work than in the baseline (%s: %s), so the timings compare different workloads and the candidate is not judged; %s",
			prefix, len(rep.Divergence), plural(len(rep.Divergence), "query", "queries"), queryName(rep, d.Fingerprint), DivergenceReason(d), regs)
	case compare.VerdictFail:
		counts := map[string]int{}
		var order []string
		for _, b := range v.Broken {
			if counts[b.Rule] == 0 {
				order = append(order, b.Rule)
			}
			counts[b.Rule]++
		}
		parts := make([]string, len(order))
		for i, o := range order {
			parts[i] = fmt.Sprintf("%s broken by %d %s", o, counts[o], plural(counts[o], "query", "queries"))
		}
		return prefix + "FAIL: " + strings.Join(parts, ", ") + "; " + regs
	case compare.VerdictUndecided:
		return prefix + "UNDECIDED: " + undecidedClause(v.Undecided) + "; " + regs
	case compare.VerdictIncomplete:
		why := make([]string, len(rep.Incomplete))
		for i, u := range rep.Incomplete {
			why[i] = UnjudgeableText(u)
		}
		if nj := v.LatencyNotJudged; nj != nil {
			if len(why) == 0 {
				return prefix + "LATENCY NOT JUDGED: " + LatencyNotJudgedText(nj) + "; " + regs
			}
			why = append(why, "latency not judged: "+LatencyNotJudgedText(nj))
		}
		return prefix + "NOT JUDGED, INCOMPLETE: " + strings.Join(why, "; ") + "; " + regs
	case compare.VerdictRegressions:
		if len(rep.Rules) == 0 {
			return prefix + "REGRESSIONS (no rule to fail on): " + regs
		}
		return prefix + "REGRESSIONS, no rule broken: " + regs
	}
	if len(rep.Rules) == 0 {
		return prefix + "PASS (no rule to fail on): " + regs
	}
	return prefix + "PASS: no rule broken; " + regs
}

// undecidedClause counts the queries that may break each rule: "p95>+50%
// may be broken by 1 query, the rounds could not tell".
func undecidedClause(us []compare.Undecided) string {
	counts := map[string]map[string]bool{}
	var order []string
	for _, u := range us {
		if counts[u.Rule] == nil {
			counts[u.Rule] = map[string]bool{}
			order = append(order, u.Rule)
		}
		counts[u.Rule][u.Fingerprint] = true
	}
	parts := make([]string, len(order))
	for i, o := range order {
		n := len(counts[o])
		parts[i] = fmt.Sprintf("%s may be broken by %d %s", o, n, plural(n, "query", "queries"))
	}
	return strings.Join(parts, ", ") + ", the rounds could not tell"
}

// UndecidedLine words a rule a query may break, with the figure's ratio
// and the interval that holds the threshold: "p95>+50% may be broken by
// 3f2a...: p95 1.62x, interval 1.10-2.40 at 98%, holds 1.50x".
//
// Where the interval lies beyond the threshold, what holds it is said:
// "..., interval 2.10-4.69 at 90%; with its calls and the rounds' noise
// at the level of the 8 figures judged 1.32-7.16, holds 1.50x", or
// "...; within the control's noise floor 1.98x, holds 1.50x"; without
// histograms, "...; over its runs alone (no histograms) at the level of
// the 8 figures judged 0-∞, holds 1.50x".
//
// A figure of the log's without its per-call overhead is named so: "p95
// without the log's 0.200 ms per-call overhead 1.71x, ...".
func UndecidedLine(rep *compare.Report, u compare.Undecided) string {
	return fmt.Sprintf("%s may be broken by %s: %s %s, %s, holds %s", u.Rule, queryName(rep, u.Fingerprint), undecidedFigure(rep, u),
		fmtPoint(u.Ratio), undecidedEvidence(u), fmtPoint(u.Threshold))
}

// undecidedFigure names an undecided rule's figure: its metric, or the
// log's percentile without its per-call overhead (compare.Undecided's
// OverheadMS).
func undecidedFigure(rep *compare.Report, u compare.Undecided) string {
	if u.OverheadMS <= 0 {
		return string(u.Metric)
	}
	k := u.OverheadMS
	if q := rep.Query(u.Fingerprint); q != nil {
		if lo, _, ok := q.LessOverhead(u.Metric); ok {
			k = lo.CandidateOverheadMS
		}
	}
	return string(u.Metric) + " without " + overheadName(u.OverheadMS, k)
}

// overheadName names the log's per-call overhead taken out of a figure,
// bMS out of the baseline's runs and kMS out of the candidate's: "the
// log's 0.200 ms per-call overhead", or, where the candidate's own was
// the larger, "the log's per-call overhead (0.200 ms on the control,
// 0.230 ms on the candidate)".
func overheadName(bMS, kMS float64) string {
	if fmtMS(bMS) == fmtMS(kMS) {
		return "the log's " + fmtMS(bMS) + " ms per-call overhead"
	}
	return "the log's per-call overhead (" + fmtMS(bMS) + " ms on the control, " + fmtMS(kMS) + " ms on the candidate)"
}

// undecidedEvidence words what holds an undecided rule's threshold: the
// interval with its level and, where that interval lies beyond the
// threshold, the calls' evidence, the runs alone or the noise floor that
// holds it instead.
func undecidedEvidence(u compare.Undecided) string {
	level := ""
	if u.Level > 0 {
		level = fmt.Sprintf(" at %.0f%%", 100*u.Level)
	}
	switch {
	case u.RoundsOnly && (u.CallsLow > 0 || u.CallsHigh > 0):
		level += fmt.Sprintf("; over its runs alone (no histograms) at the level of the %d figures judged %s-%s", u.Tests, fmtBound(u.CallsLow), fmtBound(u.CallsHigh))
	case u.CallsLow > 0 || u.CallsHigh > 0:
		level += fmt.Sprintf("; with its calls and the rounds' noise at the level of the %d figures judged %s-%s", u.Tests, fmtBound(u.CallsLow), fmtBound(u.CallsHigh))
	case u.NoiseFloor > 0:
		level += "; within the control's noise floor " + fmtPoint(u.NoiseFloor)
	}
	return fmt.Sprintf("interval %s-%s%s", fmtBound(u.Low), fmtBound(u.High), level)
}

// mayBreakNote words why a query is undecided: each rule whose
// threshold its evidence still holds (Verdict.Undecided; an interval
// beyond the threshold names what holds it, undecidedEvidence), or, when
// the report lists none for it, that much in general.
func mayBreakNote(rep *compare.Report, fp string) string {
	var holds []string
	for _, u := range rep.Verdict.Undecided {
		if u.Fingerprint == fp {
			holds = append(holds, fmt.Sprintf("%s's %s %s (%s) holds its threshold %s", u.Rule, undecidedFigure(rep, u),
				fmtPoint(u.Ratio), undecidedEvidence(u), fmtPoint(u.Threshold)))
		}
	}
	if len(holds) == 0 {
		return "undecided: its interval holds a --fail-on rule's threshold; more rounds would tell"
	}
	return "undecided: " + strings.Join(holds, "; ") + "; more rounds would tell"
}

// BrokenLine words a broken rule with the query that broke it, its
// figures and their interval.
func BrokenLine(rep *compare.Report, b compare.Broken) string {
	return fmt.Sprintf("%s broken by %s: %s", b.Rule, queryName(rep, b.Fingerprint), BrokenDetail(rep, b))
}

// BrokenDetail words the figures of a broken rule: "p95 0.074 ms -> 16.1
// ms (218x, interval 190-240)".
func BrokenDetail(rep *compare.Report, b compare.Broken) string {
	if b.Metric == compare.MetricErrors {
		return fmt.Sprintf("error rate %.2f%% -> %.2f%% (%+.2f pp)", b.Baseline, b.Candidate, b.Candidate-b.Baseline)
	}
	if _, work := workMetricNames[b.Metric]; work {
		// A change from nothing has no ratio: "none -> 105 B a call".
		if compare.FromNone(b.Metric, b.Baseline) && !compare.FromNone(b.Metric, b.Candidate) {
			return WorkMetricName(b.Metric) + " none -> " + fmtPerCall(b.Metric, b.Candidate) + " a call"
		}
		s := fmt.Sprintf("%s per call %s -> %s (%s", WorkMetricName(b.Metric), fmtPerCall(b.Metric, b.Baseline), fmtPerCall(b.Metric, b.Candidate), fmtPoint(ratioOf(b.Candidate, b.Baseline)))
		if q := rep.Query(b.Fingerprint); q != nil && q.Work != nil {
			if e := q.Work.Of(b.Metric); e != nil {
				s += ", interval " + fmtBound(e.Low) + "-" + fmtBound(e.High)
			}
		}
		return s + ")"
	}
	m := b.Metric
	if b.Figure != "" {
		// Broken by the figure the query regressed on.
		m = b.Figure
	}
	name := string(m)
	if q := rep.Query(b.Fingerprint); q != nil {
		name = figureName(q, m)
	}
	if m == compare.MetricMean && b.Level == compare.LevelServer {
		name = "mean on " + LevelName(b.Level)
	}
	s := fmt.Sprintf("%s %s ms -> %s ms (%s", name, fmtMS(b.Baseline), fmtMS(b.Candidate), fmtPoint(ratioOf(b.Candidate, b.Baseline)))
	q := rep.Query(b.Fingerprint)
	if q != nil && q.Effects != nil {
		if e := q.Effects.Of(m); e != nil {
			s += ", interval " + fmtBound(e.Low) + "-" + fmtBound(e.High)
		}
	}
	if w := b.WithoutOverhead; w != nil {
		// Broken by the figure without the overhead, not by the log's
		// own: that figure, named so, with its interval.
		s += "); without " + overheadName(w.OverheadMS, w.CandidateOverheadMS) + " " + lessOverheadFigure(q, m, *w)
		if b.UnderFloors {
			s += "; " + underFloorsText(rep, b.Fingerprint, m, lessOverheadEffect(q, m))
		}
		return s + "), which breaks it"
	}
	if b.UnderFloors {
		s += "; " + underFloorsText(rep, b.Fingerprint, m, nil)
	}
	if b.Figure != "" {
		return s + "), the figure it regressed on; " + ownFigure(q, b.Metric)
	}
	return s + ")"
}

// ownFigure words what a rule's own figure m said of q where the figure
// q regressed on broke the rule: its change with its interval ("its mean
// on server time (pg_stat_statements) 1.13x, interval 1.10-1.20, did not
// break it alone") or, without one, that it could not tell. The rule's
// figure may have told: a query whose server time did not change while
// its round trips' tail did (queueing behind slower queries) has both.
func ownFigure(q *compare.QueryDiff, m compare.Metric) string {
	if q != nil && q.Effects != nil {
		if e := q.Effects.Of(m); e != nil && e.Ratio > 0 {
			return "its " + figureName(q, m) + " " + fmtEffect(e) + ", did not break it alone"
		}
	}
	return "its " + string(m) + " could not tell alone"
}

// lessOverheadFigure words a percentile m of q's log without its per-call
// overhead: "0.086 ms -> 0.172 ms (2.00x, interval 1.85-2.16".
func lessOverheadFigure(q *compare.QueryDiff, m compare.Metric, w compare.LessOverhead) string {
	s := fmt.Sprintf("%s ms -> %s ms (%s", fmtMS(w.Baseline), fmtMS(w.Candidate), fmtPoint(ratioOf(w.Candidate, w.Baseline)))
	if e := lessOverheadEffect(q, m); e != nil {
		s += ", interval " + fmtBound(e.Low) + "-" + fmtBound(e.High)
	}
	return s
}

// lessOverheadEffect is the change of q's percentile m without the log's
// per-call overhead; nil without q or it.
func lessOverheadEffect(q *compare.QueryDiff, m compare.Metric) *compare.Effect {
	if q == nil {
		return nil
	}
	return q.Levels.WithoutOverhead(m)
}

// underFloorsText says how little a change that breaks a rule under the
// per-call floors adds (compare.ReasonBreaksRuleUnderFloors), so that the
// reader sees the rule and the size side by side: "it adds +0.078 ms a
// call (--min-effect-ms 0.2) and at least 0.2% of the run's time (1.0%)";
// of e, the figure that broke it, where given (the log's without its
// per-call overhead), else of q's figure m.
func underFloorsText(rep *compare.Report, fp string, m compare.Metric, e *compare.Effect) string {
	q := rep.Query(fp)
	if e == nil && q != nil && q.Effects != nil {
		e = q.Effects.Of(m)
	}
	if e == nil {
		return "under the per-call floors"
	}
	s := fmt.Sprintf("it adds %s ms a call (--min-effect-ms %g)", fmtSignedMS(e.DeltaMS), rep.Settings.MinEffectMS)
	if m == compare.MetricMean && rep.Settings.MinTimeShare > 0 {
		s += fmt.Sprintf(" and at least %s of the run's time (%s)", fmtShare(e.AddedShare), fmtShare(rep.Settings.MinTimeShare))
	}
	return s
}

func ratioOf(c, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return c / b
}

// WarningText words a warning.
func WarningText(w compare.Warning) string {
	switch w.Kind {
	case compare.WarnMixedLatency:
		return fmt.Sprintf("MIXED LATENCY: %s is %s, %s is %s; every ratio compares different measurements", w.Run, w.Source, w.Other, w.OtherSource)
	case compare.WarnPartial:
		return w.Run + " is a partial result: figures cover only what was read or run"
	case compare.WarnRun:
		return w.Run + ": " + w.Text
	case compare.WarnStartupSettings:
		return w.Run + ": its sessions may have run with other connection settings than the original's, which change results silently: " + w.Text
	case compare.WarnSharedCPU:
		return sharedCPUText(w)
	case compare.WarnNoHistograms:
		return "latency histograms missing (a result of an older pgrehearse): one-run intervals lack the calls' own sampling error"
	case compare.WarnNoiseNotMeasured:
		return fmt.Sprintf("run-to-run noise was not measured: %d %s a side, and an interval over runs needs %d a side; "+
			"changes are judged against default noise floors measured on replays onto identical targets, and nothing within them is called a change",
			w.Runs, plural(w.Runs, "run", "runs"), w.MinRuns)
	case compare.WarnWorkNotCompared:
		if w.Count > 1 {
			return fmt.Sprintf("server work per call was not compared: %d runs (the first %s) have no pg_stat_statements figures (%s)",
				w.Count, w.Run, WorkMissingText(w.PGSS, w.Text))
		}
		return fmt.Sprintf("server work per call was not compared: %s has no pg_stat_statements figures (%s)", w.Run, WorkMissingText(w.PGSS, w.Text))
	case compare.WarnUncodedErrors:
		return fmt.Sprintf("%d %s logged without a SQLSTATE on one side (a log_line_prefix without %%e) %s matched by count to the other side's",
			w.Count, plural(int(w.Count), "error was", "errors were"), plural(int(w.Count), "is", "are"))
	}
	return string(w.Kind) + " " + w.Run
}

func sharedCPUText(w compare.Warning) string {
	s, cpu := w.Run+" replayed at speed 0 on the target's machine", "the replayer's CPU"
	if w.ClientCPUSeconds > 0 && w.WallSeconds > 0 {
		// A short run's CPU is a fraction of a second: 0.0 would read
		// as none.
		prec := 1
		if w.ClientCPUSeconds < 1 {
			prec = 2
		}
		s += fmt.Sprintf(", where the replayer itself used %.*f CPU-seconds (%.2f cores on average)", prec, w.ClientCPUSeconds, w.ClientCPUSeconds/w.WallSeconds)
		cpu = "that CPU"
	}
	rate := "its statements/s"
	if w.StatementsPerS > 0 {
		rate = fmt.Sprintf("its %.1f statements/s", w.StatementsPerS)
	}
	s += ": " + cpu + " was taken from the server, so " + rate + " is a lower bound of the target's own rate"
	if w.Source == compare.LatencyClient {
		s += " and its latencies (client round trips) include the competition"
	} else {
		s += " and its latencies may include waiting for CPU"
	}
	return s + "; replay from another machine to measure the target alone"
}

// UnjudgeableText words why a comparison is not a verdict.
func UnjudgeableText(u compare.Unjudgeable) string {
	switch u.Kind {
	case compare.UnjudgeableNoRuns:
		return "a side has no result to judge"
	case compare.UnjudgeablePartial:
		return u.Run + " stopped early (partial result)"
	case compare.UnjudgeableIncomplete:
		return u.Run + " is incomplete: " + u.Detail
	case compare.UnjudgeableDegraded:
		return u.Run + " is degraded: " + u.Detail
	case compare.UnjudgeableEmpty:
		if u.Detail != "" {
			return u.Run + " holds statements but " + u.Detail + ": nothing to judge"
		}
		return u.Run + " holds no statement: nothing to judge"
	case compare.UnjudgeableSmaller:
		return fmt.Sprintf("%s measured %d statements, %.0f%% of the %d of %s over the same time range (at least %.0f%% needed)",
			u.Run, u.Measured, 100*float64(u.Measured)/float64(u.Expected), u.Expected, u.Other, 100*compare.MinMeasuredShare)
	case compare.UnjudgeableIdentical:
		if u.Run == u.Other {
			return u.Run + " is given twice: a result compared with itself says nothing"
		}
		return fmt.Sprintf("%s and %s are identical inputs (the same figures: one result twice, or two analyses of one log): comparing them says nothing", u.Run, u.Other)
	case compare.UnjudgeableInvalid:
		return fmt.Sprintf("%s: %s %s", u.Run, u.Field, u.Detail)
	case compare.UnjudgeableThrottled:
		return u.Run + " were throttled by the replay itself (" + u.Detail + "): the candidate got less load than the application would give it, " +
			"so its latencies are lower bounds: a broken rule stands, but no pass and no improvement can be told"
	case compare.UnjudgeableMixedLoad:
		return fmt.Sprintf("%s and %s replayed the workload at different load levels (%s): their differences are the load's, not the candidate's", u.Run, u.Other, u.Detail)
	}
	return u.Run + " " + string(u.Kind)
}

// changedOf names the figure a small change's reason is about.
func changedOf(q *compare.QueryDiff) string {
	if q.Changed == "" {
		return string(compare.MetricMean)
	}
	return string(q.Changed)
}

// QueryNotes word why a query got its status, for a person.
func QueryNotes(rep *compare.Report, q *compare.QueryDiff) []string {
	var out []string
	if e := q.Effects; e != nil {
		var pair []string
		for _, m := range []compare.Metric{compare.MetricMean, compare.MetricP50, compare.MetricP95, compare.MetricP99} {
			if e.Of(m).Pairwise {
				pair = append(pair, string(m))
			}
		}
		if len(pair) > 0 {
			out = append(out, "the runs fall in groups: the change of the "+strings.Join(pair, ", ")+
				" is the median of the run-to-run ratios, as the ratio of the medians fell outside its interval")
		}
		// A rule cleared on an interval other than the one shown says
		// so, or the shown interval would hold a threshold the verdict
		// passed.
		for _, m := range []compare.Metric{compare.MetricMean, compare.MetricP50, compare.MetricP95, compare.MetricP99} {
			if c := e.Of(m).Cleared; c != nil {
				s := fmt.Sprintf("the %s's rules cleared on the rounds' %.0f%% interval %s-%s, not the one shown",
					m, 100*c.Level, fmtBound(c.Low), fmtBound(c.High))
				if c.Interval == compare.ClearedPaired {
					s = fmt.Sprintf("the %s's rules cleared on the rounds' paired %.0f%% interval %s-%s (each candidate round against the control round beside it), not the one shown",
						m, 100*c.Level, fmtBound(c.Low), fmtBound(c.High))
				}
				if c.Dropped > 0 {
					s += fmt.Sprintf(" (%d outlying %s left out)", c.Dropped, plural(c.Dropped, "round", "rounds"))
				}
				out = append(out, s)
			}
		}
	}
	for _, r := range q.Reasons {
		switch r {
		case compare.ReasonTooFewCalls:
			s := fmt.Sprintf("too few calls to judge: %d and %d timed calls (at least %d in every run needed)",
				timedOf(q.Baseline), timedOf(q.Candidate), rep.Settings.MinCalls)
			if q.Factor > 1 {
				s += fmt.Sprintf("; looks %s slower, which may be noise", fmtPoint(q.Factor))
			}
			out = append(out, s)
		case compare.ReasonMissingInRun:
			out = append(out, "absent from some runs of a side")
		case compare.ReasonUnderEffectFloor:
			out = append(out, fmt.Sprintf("%s changed beyond noise, but by less than %.0f%%", changedOf(q), 100*rep.Settings.MinEffect))
		case compare.ReasonUnderNoiseFloor:
			out = append(out, changedOf(q)+" changed beyond the test, but within its noise floor (how far apart its own runs were, or the default)")
		case compare.ReasonUnderMSFloor:
			s := fmt.Sprintf("%s changed beyond noise, but by less than %g ms a call", changedOf(q), rep.Settings.MinEffectMS)
			if e := q.Effects.Of(q.Changed); q.Changed == compare.MetricMean && e != nil && e.Change == compare.ChangeSlower && rep.Settings.MinTimeShare > 0 {
				s += fmt.Sprintf(" and %s of the run's time", fmtShare(rep.Settings.MinTimeShare))
			}
			out = append(out, s)
		case compare.ReasonNotJudged:
			if e := q.Effects.Of(q.Changed); e != nil && e.Change == compare.ChangeSlower {
				out = append(out, fmt.Sprintf("%s slower beyond every floor, but the %s counts only through a rule on it that the change breaks", changedOf(q), q.Changed))
			} else {
				out = append(out, fmt.Sprintf("%s faster beyond every floor, but an improvement is judged on the mean", changedOf(q)))
			}
		case compare.ReasonMeanFasterTailSlower:
			out = append(out, "the mean got faster but the slowest calls slower: a tail regression")
		case compare.ReasonMedianFasterMeanSlower:
			out = append(out, "the typical call got faster but the slow calls cost more")
		case compare.ReasonFasterButSlowerElsewhere:
			out = append(out, "the mean got faster, but the median or the slowest calls got slower: not an improvement")
		case compare.ReasonMeanFasterWritesMore:
			out = append(out, "the mean got faster, but each call writes more: not an improvement")
		case compare.ReasonTailTooFewCalls:
			s := changedOf(q) + " slower over the runs, but the tail rests on too few calls: not judged"
			if e := q.Effects.Of(q.Changed); e != nil && e.Calls != nil && e.Calls.MinCalls > 0 {
				s += fmt.Sprintf(" (%d timed calls in a run; its bound at the level of the %d figures judged needs %d)", timedOf(q.Baseline), e.Calls.Tests, e.Calls.MinCalls)
			}
			out = append(out, s)
		case compare.ReasonWithinCallsNoise:
			s := changedOf(q) + " slower over the runs, but within the sampling error of each run's calls"
			if e := q.Effects.Of(q.Changed); e != nil && e.Calls != nil {
				s += fmt.Sprintf(" (%s-%s with each run bounded by its calls, at the level of the %d figures judged)", fmtBound(e.Calls.Low), fmtBound(e.Calls.High), e.Calls.Tests)
			}
			out = append(out, s)
		case compare.ReasonWithinRoundNoise:
			s := changedOf(q) + " slower over the runs and beyond its calls' sampling, but within the rounds' noise of the whole rehearsal"
			if e := q.Effects.Of(q.Changed); e != nil && e.Calls != nil {
				s += fmt.Sprintf(" (%s-%s with rounds %s apart, pooled over its queries, at the level of the %d figures judged)",
					fmtBound(e.Calls.FamilyLow), fmtBound(e.Calls.FamilyHigh), fmtRoundNoise(e.Calls.RoundNoise), e.Calls.Tests)
			}
			out = append(out, s)
		case compare.ReasonBreaksRuleUnderFloors:
			m := q.Regressed
			if m == "" {
				m = compare.MetricMean
			}
			s := string(m) + " slower beyond a --fail-on rule's threshold over its whole interval"
			if e := q.Effects.Of(m); e != nil {
				s += fmt.Sprintf(" (%s-%s)", fmtBound(e.Low), fmtBound(e.High))
			}
			out = append(out, s+", under the floors a regression otherwise needs: "+underFloorsText(rep, q.Fingerprint, m, nil)+"; the rule says it matters")
		case compare.ReasonBreaksRuleWithoutOverhead:
			out = append(out, withoutOverheadNote(rep, q))
		case compare.ReasonReplayLagged:
			out = append(out, "its latency is not judged: a replay of this comparison of one run a side fell behind its schedule")
		case compare.ReasonCandidateThrottled:
			out = append(out, "faster, but not judged: the candidate's rounds were throttled by the replay itself, so its latency is a lower bound")
		case compare.ReasonHistogramUnreadable:
			out = append(out, "a latency histogram did not decode: the calls' own sampling error is not in the interval")
		case compare.ReasonMayBreakRule:
			out = append(out, mayBreakNote(rep, q.Fingerprint))
		default:
			out = append(out, string(r))
		}
	}
	return out
}

// withoutOverheadNote words compare.ReasonBreaksRuleWithoutOverhead: the
// figure a query regressed on, without the log's per-call overhead,
// broke a --fail-on rule its log's own figure does not: "p95 without the
// log's 0.200 ms per-call overhead 0.086 ms -> 0.172 ms (2.00x, interval
// 1.85-2.16) breaks a --fail-on rule; the log's own p95 reads 1.30x,
// the overhead compressing its ratio".
func withoutOverheadNote(rep *compare.Report, q *compare.QueryDiff) string {
	m := q.Regressed
	w, _, ok := q.LessOverhead(m)
	if !ok {
		return string(m) + " without the log's per-call overhead breaks a --fail-on rule"
	}
	s := fmt.Sprintf("%s without %s %s) breaks a --fail-on rule", m, overheadName(w.OverheadMS, w.CandidateOverheadMS), lessOverheadFigure(q, m, w))
	var under bool
	for _, b := range rep.Verdict.Broken {
		under = under || b.Fingerprint == q.Fingerprint && b.WithoutOverhead != nil && b.UnderFloors
	}
	if under {
		s += ", under the floors a regression otherwise needs: " + underFloorsText(rep, q.Fingerprint, m, lessOverheadEffect(q, m)) + "; the rule says it matters"
	}
	return s + fmt.Sprintf("; the log's own %s reads %s, the overhead compressing its ratio", m, fmtPoint(q.Effects.Of(m).Ratio))
}

func timedOf(f *compare.Figures) int64 {
	if f == nil {
		return 0
	}
	n := f.TimedCalls
	for _, r := range f.Runs {
		n = min(n, r.TimedCalls)
	}
	return n
}

// DivergenceReason words what a diverged query did differently.
func DivergenceReason(d compare.Divergence) string {
	var why []string
	if d.RowsDiffer && d.BaselineRowsPerCall != nil {
		why = append(why, fmt.Sprintf("rows per call %.3g -> %.3g", *d.BaselineRowsPerCall, *d.CandidateRowsPerCall))
	}
	for _, code := range slices.Sorted(maps.Keys(d.OrderingErrors)) {
		why = append(why, fmt.Sprintf("%d more %s errors", d.OrderingErrors[code], code))
	}
	s := strings.Join(why, ", ")
	if d.Run != "" {
		s += " in " + d.Run
	}
	return s
}

// BusierTitle heads the list of the queries slower while the server was
// busier with the worst regression.
func BusierTitle(rep *compare.Report) string {
	fp := ""
	if len(rep.SlowerWhileBusier) > 0 {
		if q := rep.Query(rep.SlowerWhileBusier[0]); q != nil {
			fp = q.BusierWith
		}
	}
	added := ""
	if q := rep.Query(fp); q != nil {
		added = " (" + fmtSignedTotal(q.AddedMS) + " of server time per run)"
	}
	return fmt.Sprintf("Slower while the server was busier with %s%s: likely contention, not counted as regressions; judge them again once it is fixed",
		queryName(rep, fp), added)
}

// NotJudgedLagTitle heads the list of the queries whose latency changed
// beyond the floors but was not judged, a replay having lagged.
const NotJudgedLagTitle = "Not judged (lag): latency changed beyond the floors, but a replay fell behind its schedule, so neither regressions nor improvements"

// StatusText is a query's status for a person: "tail regressed".
func StatusText(s compare.Status) string {
	switch s {
	case compare.StatusNotJudgedLag:
		return "not judged (lag)"
	case compare.StatusNotJudgedThrottled:
		return "not judged (throttled)"
	}
	return strings.ReplaceAll(string(s), "_", " ")
}
