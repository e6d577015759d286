package report

import (
	"fmt"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

// comparisonQueryWidth is how much of a query's text a terminal line shows.
const comparisonQueryWidth = 70

// WriteComparison writes a comparison, or the summary of one run, for a
// person at a terminal: the verdict first (WriteVerdict, without plans),
// then its details (WriteComparisonDetails). It writes plain aligned
// text, no escapes.
func WriteComparison(w io.Writer, rep *compare.Report, top int) error {
	if err := WriteVerdict(w, rep, nil); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return WriteComparisonDetails(w, rep, top)
}

// WriteComparisonDetails writes what a comparison's verdict rests on:
// each side in a line, the ranked lists (at most top entries each),
// every figure with its spread over the runs (±) and every change with
// its interval. The verdict itself is WriteVerdict's, written before.
func WriteComparisonDetails(w io.Writer, rep *compare.Report, top int) error {
	ew := &errWriter{w: w}
	ew.printf("baseline   %s\n", runLine(&rep.Baseline))
	if rep.Candidate != nil {
		ew.printf("candidate  %s\n", runLine(rep.Candidate))
	}
	for _, warn := range rep.Warnings {
		ew.printf("WARNING: %s\n", WarningText(warn))
	}
	if rep.Candidate == nil {
		writeSummaryTop(ew, rep, top)
		writeRoundTrips(ew, rep, top)
		return ew.err
	}
	runs := [2]int{rep.Baseline.RunCount(), rep.Candidate.RunCount()}
	regHead := []string{"impact", "figure", "B ms", "C ms", "C/B (interval)", "floor", "calls C", "fingerprint", "query"}
	// With the noise measured, the interval of the application's next
	// run beside the mean's, and the smallest change the rounds could
	// tell (issue 76).
	resolved := rep.Resolution != nil
	if resolved {
		regHead = slices.Insert(regHead, 5, "next run", "can tell")
	}
	regRow := func(q *compare.QueryDiff) []string {
		e := q.Effects.Of(q.Regressed)
		impact := fmtSignedTotal(q.ImpactMS)
		b, c := figureOf(q.Baseline, q.Regressed), figureOf(q.Candidate, q.Regressed)
		what := figureName(q, q.Regressed)
		if q.Status == compare.StatusTailRegressed {
			what += " (tail)"
		}
		row := []string{impact, what, fmtMS(b.v) + fmtSpread(b.spread, runs[0]), fmtMS(c.v) + fmtSpread(c.spread, runs[1]),
			fmtEffect(e), floorText(e, rep.Settings.MinEffect), strconv.FormatInt(q.Candidate.Calls, 10) + fmtSpread(spreadCalls(q.Candidate), runs[1]),
			q.Fingerprint, OneLine(DisplayQuery(q.Query), comparisonQueryWidth)}
		if resolved {
			row = slices.Insert(row, 5, fmtNextRun(e), fmtDetectable(e.MinDetectable))
		}
		return row
	}
	writeDivergence(ew, rep, top)
	intervals := "intervals over the runs"
	if !rep.Noise.Measured {
		intervals = "one-run intervals: the calls' sampling error and the default noise floor"
	}
	writeList(ew, rep, "Regressions by impact: time added per run (mean, or the tail's p95 x its 5% of calls"+ruledImpact(rep)+"); "+intervals, rep.RegressionsByAddedTime, top, regHead, regRow)
	// By factor only when it says something the list by impact did not.
	if !slices.Equal(rep.RegressionsByFactor, rep.RegressionsByAddedTime) {
		writeList(ew, rep, "Regressions by factor", rep.RegressionsByFactor, top, regHead, regRow)
	}
	if len(rep.SlowerWhileBusier) > 0 {
		writeList(ew, rep, BusierTitle(rep), rep.SlowerWhileBusier, top, regHead, regRow)
	}
	writeList(ew, rep, NotJudgedLagTitle, rep.NotJudgedLag, top,
		[]string{"mean C/B", "p95 C/B", "fingerprint", "query"}, func(q *compare.QueryDiff) []string {
			return []string{fmtEffect(&q.Effects.Mean), fmtEffect(&q.Effects.P95), q.Fingerprint, OneLine(DisplayQuery(q.Query), comparisonQueryWidth)}
		})
	writeConnectionSetup(ew, rep)
	writeResolution(ew, rep)
	writeLevels(ew, rep, top)
	writeServerWork(ew, rep, top)
	writeRoundTrips(ew, rep, top)
	if len(rep.NewErrors) > 0 {
		t := [][]string{{"baseline", "candidate", "sqlstate", "queries"}}
		for _, e := range rep.NewErrors {
			code := e.SQLState
			if e.New {
				code += " (new)"
			}
			t = append(t, []string{strconv.FormatInt(e.Baseline, 10), strconv.FormatInt(e.Candidate, 10), code, strings.Join(e.Fingerprints, " ")})
		}
		ew.printf("\nErrors that grew, by SQLSTATE (medians over the runs)\n")
		writeTable(ew, "  ", t, 2)
	}
	oneRun := func(name string, fps []string, cand bool) {
		head := []string{"calls", "total ms", "fingerprint", "query"}
		writeList(ew, rep, name, fps, top, head, func(q *compare.QueryDiff) []string {
			f := q.Baseline
			if cand {
				f = q.Candidate
			}
			return []string{strconv.FormatInt(f.Calls, 10), fmtMS(f.TotalMS), q.Fingerprint, OneLine(DisplayQuery(q.Query), comparisonQueryWidth)}
		})
	}
	writeList(ew, rep, "Changed beyond noise, but under a floor: not regressions", rep.SmallChanges, top,
		[]string{"mean C/B", "p50 C/B", "p95 C/B", "why not a regression", "fingerprint", "query"}, func(q *compare.QueryDiff) []string {
			return []string{fmtEffect(&q.Effects.Mean), fmtEffect(&q.Effects.P50), fmtEffect(&q.Effects.P95), strings.Join(QueryNotes(rep, q), "; "),
				q.Fingerprint, OneLine(DisplayQuery(q.Query), comparisonQueryWidth)}
		})
	oneRun("Only in the candidate", rep.OnlyCandidate, true)
	oneRun("Only in the baseline", rep.OnlyBaseline, false)
	writeList(ew, rep, fmt.Sprintf("Too few calls to judge (under %d timed calls in a run)", rep.Settings.MinCalls), rep.TooFewCalls, top,
		[]string{"timed B", "timed C", "mean C/B", "fingerprint", "query"}, func(q *compare.QueryDiff) []string {
			return []string{strconv.FormatInt(timedOf(q.Baseline), 10), strconv.FormatInt(timedOf(q.Candidate), 10),
				fmtFactor(q.Factor), q.Fingerprint, OneLine(DisplayQuery(q.Query), comparisonQueryWidth)}
		})
	if len(rep.RegressionsByAddedTime) > 0 && top > 0 {
		ew.printf("\n%s\n", legend)
		if resolved {
			for _, l := range ResolvedLegend {
				ew.printf("%s\n", wrapWords(l, legendWidth))
			}
		}
	}
	return ew.err
}

// The words for the columns of a comparison whose noise is measured
// (Report.Resolution), one place for the text's legend and the page's
// (ResolvedLegend), tooltips included.
const (
	nextRunWords = "where the application's next run of a round's length would put C/B (a predictive interval: the mean's widened by the rounds' own spread)"
	// verdictIntervalWords says which interval the verdict judges.
	verdictIntervalWords = "the verdict judges the mean's interval, never this one"
	canTellWords         = "the smallest change of the figure these rounds tell from none at the level judged, 80% of the time"
)

// ResolvedLegend explains the columns "next run" and "can tell", a
// sentence each; the first says which interval the verdict judges.
var ResolvedLegend = []string{
	"next run: " + nextRunWords + "; " + verdictIntervalWords + ".",
	"can tell: " + canTellWords + ".",
}

// legendWidth is the width the text's legend wraps at.
const legendWidth = 110

// wrapWords breaks s at spaces into lines of at most width characters
// (a word longer than width has a line of its own).
func wrapWords(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		switch {
		case i == 0:
		case n+1+len(w) > width:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// fmtNextRun is a figure's next-run interval, "1.39-3.66"; "-" without.
func fmtNextRun(e *compare.Effect) string {
	if e == nil || e.NextRun == nil {
		return "-"
	}
	return fmtBound(e.NextRun.Low) + "-" + fmtBound(e.NextRun.High)
}

// fmtDetectable is a smallest change told, "+12%"; "-" without one.
func fmtDetectable(f float64) string {
	switch {
	case f <= 1 || math.IsNaN(f):
		return "-"
	case f >= 1e6:
		return "none (too few rounds or calls)"
	case f >= 3:
		return fmtFactor(f)
	}
	return "+" + strconv.FormatFloat(100*(f-1), 'f', 0, 64) + "%"
}

// writeResolution writes the smallest change the rounds could tell, for
// the run: nothing without the noise measured.
func writeResolution(ew *errWriter, rep *compare.Report) {
	lines := ResolutionLines(rep)
	if len(lines) == 0 {
		return
	}
	ew.printf("\n")
	for _, l := range lines {
		ew.printf("%s\n", l)
	}
}

// ResolutionLines say the smallest change the rounds could tell from
// none, for the run, and the tightest rules an identical candidate would
// pass with them, a line each; none without the noise measured
// (Report.Resolution). The text and the page show the same lines.
func ResolutionLines(rep *compare.Report) []string {
	r := rep.Resolution
	if r == nil {
		return nil
	}
	var parts []string
	if r.MeanManyCalls > 1 || r.P95ManyCalls > 1 {
		parts = append(parts, fmt.Sprintf("mean %s, p95 %s for a query of many calls", fmtDetectable(r.MeanManyCalls), fmtDetectable(r.P95ManyCalls)))
	}
	if r.Queries > 0 {
		parts = append(parts, fmt.Sprintf("mean %s, p95 %s for the median of the %d %s judged", fmtDetectable(r.MeanMedian), fmtDetectable(r.P95Median), r.Queries, plural(r.Queries, "query", "queries")))
	}
	if len(parts) == 0 {
		return nil
	}
	lines := []string{fmt.Sprintf("Smallest change these rounds could tell from none (%.0f%% of the time, at the %s%% level judged): %s",
		100*r.Power, strconv.FormatFloat(math.Round(1000*r.Level)/10, 'f', -1, 64), strings.Join(parts, "; "))}
	if r.MeanClears > 1 && r.P95Clears > 1 {
		lines = append(lines, fmt.Sprintf("Tightest rules an identical candidate would pass %.0f%% of the time with these rounds: mean>+%s (needed by %s), p95>+%s (needed by %s)",
			100*r.Power, clearsPct(r.MeanClears), r.MeanClearsBy, clearsPct(r.P95Clears), r.P95ClearsBy))
	}
	return lines
}

// clearsPct is a threshold factor as a rule's percentage, rounded up:
// 1.183 is "19%"; "inf%" past any rule's reach.
func clearsPct(f float64) string {
	if f >= 1e6 {
		return "inf%"
	}
	return strconv.FormatFloat(math.Ceil(100*(f-1)), 'f', 0, 64) + "%"
}

// legend explains the regression tables' columns.
const legend = `B = baseline, C = candidate; figures are medians over each side's runs, ± the largest distance of a run from
the median. C/B (interval): the change and its interval; "~" when the interval holds 1 (no change told from noise).
floor: the factor a change must reach, the larger of the effect floor and the noise floor (how far apart the
baseline's own runs were, or the default for one run).`

type figure struct{ v, spread float64 }

func figureOf(f *compare.Figures, m compare.Metric) figure {
	var sp compare.Spread
	if f.Spread != nil {
		sp = *f.Spread
	}
	switch m {
	case compare.MetricP50:
		return figure{f.P50MS, sp.P50MS}
	case compare.MetricP95:
		return figure{f.P95MS, sp.P95MS}
	case compare.MetricP99:
		return figure{f.P99MS, sp.P99MS}
	}
	return figure{f.MeanMS, sp.MeanMS}
}

func spreadCalls(f *compare.Figures) float64 {
	if f.Spread == nil {
		return 0
	}
	return f.Spread.Calls
}

// floorText is the floor a change had to reach and where it came from:
// "1.10x effect", "1.35x noise", "1.50x default".
func floorText(e *compare.Effect, minEffect float64) string {
	if e == nil {
		return "-"
	}
	src := "noise"
	switch {
	case e.Floor <= 1+minEffect+1e-9:
		src = "effect"
	case !e.NoiseMeasured:
		src = "default"
	}
	return fmtFactor(e.Floor) + " " + src
}

// writeDivergence lists the queries that did different work in the two
// runs, apart from and before the regressions, which they make doubtful.
func writeDivergence(ew *errWriter, rep *compare.Report, top int) {
	if len(rep.Divergence) == 0 || top <= 0 {
		return
	}
	n := min(top, len(rep.Divergence))
	more := ""
	if n < len(rep.Divergence) {
		more = fmt.Sprintf(" (top %d of %d)", n, len(rep.Divergence))
	}
	ew.printf("\nDivergence: queries that did different work than in the baseline (the replay's, not regressions)%s\n", more)
	t := [][]string{{"rows/call B -> C", "ordering errors", "fingerprint", "query"}}
	for _, d := range rep.Divergence[:n] {
		t = append(t, []string{rowsPerCall(d), orderingErrors(d), d.Fingerprint, OneLine(DisplayQuery(d.Query), comparisonQueryWidth)})
	}
	writeTable(ew, "  ", t, 2)
}

func rowsPerCall(d compare.Divergence) string {
	if d.BaselineRowsPerCall == nil {
		return "-"
	}
	return strconv.FormatFloat(*d.BaselineRowsPerCall, 'g', 4, 64) + " -> " + strconv.FormatFloat(*d.CandidateRowsPerCall, 'g', 4, 64)
}

func orderingErrors(d compare.Divergence) string {
	if len(d.OrderingErrors) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(d.OrderingErrors))
	for _, code := range slices.Sorted(maps.Keys(d.OrderingErrors)) {
		parts = append(parts, fmt.Sprintf("%s +%d", code, d.OrderingErrors[code]))
	}
	return strings.Join(parts, ", ")
}

// syncLine says how a replay's sessions were synchronized and what it
// cost; "" for a run that is not a replay or does not say.
func syncLine(s *compare.RunSummary) string {
	st := s.Sync
	if st == nil {
		return ""
	}
	if st.Mode == results.SyncOff {
		return "sessions not synchronized"
	}
	line := fmt.Sprintf("sync %s: %d statements waited", st.Mode, st.Waited)
	if w := s.SyncWait; w != nil && w.Count > 0 {
		line += fmt.Sprintf(" (p50 %s ms, p99 %s ms, max %s ms)", fmtMS(w.P50), fmtMS(w.P99), fmtMS(w.Max))
	}
	if st.Timeouts > 0 || st.Deadlocks > 0 {
		line += fmt.Sprintf(", %d gave up without progress, %d ended a deadlock", st.Timeouts, st.Deadlocks)
	}
	return line
}

func runLine(s *compare.RunSummary) string {
	n := s.RunCount()
	var sp compare.SummarySpread
	if s.Spread != nil {
		sp = *s.Spread
	}
	kind := string(s.Kind)
	if n > 1 {
		kind = fmt.Sprintf("%d runs (%s, medians)", n, s.Kind)
	}
	line := fmt.Sprintf("%s: %s, %s latency, %d statements", s.Name, kind, s.LatencySource, s.Statements)
	if s.SpanS > 0 {
		line += fmt.Sprintf(" in %.1f s (%.1f/s%s)", s.SpanS, s.StatementsPerS, fmtSpread(sp.StatementsPerS, n))
	}
	if s.TimedCalls > 0 {
		line += ", mean " + fmtMS(s.MeanMS) + " ms" + fmtSpread(sp.MeanMS, n)
	}
	if s.P95MS > 0 {
		line += ", p95 " + fmtMS(s.P95MS) + " ms" + fmtSpread(sp.P95MS, n)
	}
	line += fmt.Sprintf(", %d failed", s.Failed)
	if sl := syncLine(s); sl != "" {
		line += "; " + sl
	}
	return line
}

func writeSummaryTop(ew *errWriter, rep *compare.Report, top int) {
	fps := make([]string, len(rep.Queries))
	for i, q := range rep.Queries {
		fps[i] = q.Fingerprint
	}
	writeList(ew, rep, "Queries by total time", fps, top,
		[]string{"total ms", "calls", "errors", "mean ms", "p95 ms", "fingerprint", "query"}, func(q *compare.QueryDiff) []string {
			f := q.Baseline
			return []string{fmtMS(f.TotalMS), strconv.FormatInt(f.Calls, 10), strconv.FormatInt(f.Errors, 10),
				fmtMS(f.MeanMS), fmtMS(f.P95MS), q.Fingerprint, OneLine(DisplayQuery(q.Query), comparisonQueryWidth)}
		})
}

func writeList(ew *errWriter, rep *compare.Report, title string, fps []string, top int, head []string, row func(*compare.QueryDiff) []string) {
	if len(fps) == 0 || top <= 0 {
		return
	}
	n := min(top, len(fps))
	more := ""
	if n < len(fps) {
		more = fmt.Sprintf(" (top %d of %d)", n, len(fps))
	}
	ew.printf("\n%s%s\n", title, more)
	t := [][]string{head}
	for _, fp := range fps[:n] {
		t = append(t, row(rep.Query(fp)))
	}
	// Figures right-aligned, the two text columns (fingerprint, query)
	// left-aligned.
	writeTable(ew, "  ", t, len(head)-2)
}

// writeRoundTrips writes each replay's client round trips beside its
// server-side time, saying they are context and not a judgement.
func writeRoundTrips(ew *errWriter, rep *compare.Report, top int) {
	if top <= 0 {
		return
	}
	for _, rt := range rep.ClientRoundTrips {
		n := min(top, len(rt.Queries))
		more := ""
		if n < rt.Fingerprints {
			more = fmt.Sprintf(" (top %d of %d by server time)", n, rt.Fingerprints)
		}
		run := ""
		if rep.Candidate != nil {
			run = rt.Run + " "
		}
		ew.printf("\nClient round trips vs server time on the %sreplay %s%s\n", run, rt.File, more)
		ew.printf("  client-side: overhead = client round trip - server time (network, client); not compared, not a regression\n")
		ew.printf("  all %d queries: server mean %s ms, client round trip mean %s ms, overhead %s ms per call\n",
			rt.Fingerprints, fmtMS(rt.ServerMeanMS), fmtMS(rt.ClientMeanMS), fmtSignedMS(rt.OverheadMS))
		t := [][]string{{"calls", "server mean ms", "server p95 ms", "client mean ms", "client p95 ms", "overhead ms", "fingerprint", "query"}}
		for _, q := range rt.Queries[:n] {
			t = append(t, []string{strconv.FormatInt(q.Calls, 10), fmtMS(q.ServerMeanMS), fmtMS(q.ServerP95MS),
				fmtMS(q.ClientMeanMS), fmtMS(q.ClientP95MS), fmtSignedMS(q.OverheadMS), q.Fingerprint, OneLine(DisplayQuery(q.Query), comparisonQueryWidth)})
		}
		writeTable(ew, "  ", t, len(t[0])-2)
	}
}
