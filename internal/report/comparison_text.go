package report

import (
	"fmt"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

// comparisonQueryWidth is how much of a query's text a terminal line shows.
const comparisonQueryWidth = 70

// WriteComparison writes a comparison, or the summary of one run, for a
// person at a terminal: both runs in a line
// each, the ranked lists (at most top entries each), and the verdict last,
// where a CI log shows it. It writes plain aligned text, no escapes.
func WriteComparison(w io.Writer, rep *compare.Report, top int) error {
	ew := &errWriter{w: w}
	ew.printf("baseline   %s\n", runLine(&rep.Baseline))
	if rep.Candidate != nil {
		ew.printf("candidate  %s\n", runLine(rep.Candidate))
	}
	for _, warn := range rep.Warnings {
		ew.printf("WARNING: %s\n", warn)
	}
	if rep.Candidate == nil {
		writeSummaryTop(ew, rep, top)
		writeRoundTrips(ew, rep, top)
		ew.printf("\n%s\n", rep.Verdict.Line)
		return ew.err
	}

	regHead := []string{"added", "factor", "mean B -> C ms", "p95 B -> C ms", "calls C", "fingerprint", "query"}
	regRow := func(q *compare.QueryDiff) []string {
		return []string{fmtSigned(q.AddedMS), compare.FormatFactor(q.Factor),
			compare.FormatMS(q.Baseline.MeanMS) + " -> " + compare.FormatMS(q.Candidate.MeanMS),
			compare.FormatMS(q.Baseline.P95MS) + " -> " + compare.FormatMS(q.Candidate.P95MS),
			strconv.FormatInt(q.Candidate.Calls, 10), q.Fingerprint, OneLine(q.Query, comparisonQueryWidth)}
	}
	writeDivergence(ew, rep, top)
	writeList(ew, rep, "Regressions by time added", rep.RegressionsByAddedTime, top, regHead, regRow)
	writeList(ew, rep, "Regressions by factor", rep.RegressionsByFactor, top, regHead, regRow)
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
		ew.printf("\nErrors that grew, by SQLSTATE\n")
		writeTable(ew, "  ", t, 2)
	}
	oneRun := func(name string, fps []string, cand bool) {
		head := []string{"calls", "total_ms", "fingerprint", "query"}
		writeList(ew, rep, name, fps, top, head, func(q *compare.QueryDiff) []string {
			f := q.Baseline
			if cand {
				f = q.Candidate
			}
			return []string{strconv.FormatInt(f.Calls, 10), compare.FormatMS(f.TotalMS), q.Fingerprint, OneLine(q.Query, comparisonQueryWidth)}
		})
	}
	writeList(ew, rep, fmt.Sprintf("Changed beyond noise, but under the effect floor (+%.0f%%): not regressions", rep.Settings.MinEffect*100),
		rep.SmallChanges, top, []string{"mean", "p50", "p95", "fingerprint", "query"}, func(q *compare.QueryDiff) []string {
			return []string{compare.FormatFactor(q.Ratio.Mean), compare.FormatFactor(q.Ratio.P50), compare.FormatFactor(q.Ratio.P95), q.Fingerprint, OneLine(q.Query, comparisonQueryWidth)}
		})
	oneRun("Only in the candidate", rep.OnlyCandidate, true)
	oneRun("Only in the baseline", rep.OnlyBaseline, false)
	writeList(ew, rep, fmt.Sprintf("Too few calls to judge (under %d timed calls in a run)", rep.Settings.MinCalls), rep.TooFewCalls, top,
		[]string{"calls B", "calls C", "factor", "fingerprint", "query"}, func(q *compare.QueryDiff) []string {
			return []string{strconv.FormatInt(q.Baseline.TimedCalls, 10), strconv.FormatInt(q.Candidate.TimedCalls, 10),
				compare.FormatFactor(q.Factor), q.Fingerprint, OneLine(q.Query, comparisonQueryWidth)}
		})

	ew.printf("\n%s\n", rep.Verdict.Line)
	for _, b := range rep.Verdict.Broken {
		ew.printf("  %s broken by %s: %s\n", b.Rule, b.Fingerprint, b.Detail)
	}
	return ew.err
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
		t = append(t, []string{rowsPerCall(d), orderingErrors(d), d.Fingerprint, OneLine(d.Query, comparisonQueryWidth)})
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
		line += fmt.Sprintf(" (p50 %s ms, p99 %s ms, max %s ms)", compare.FormatMS(w.P50), compare.FormatMS(w.P99), compare.FormatMS(w.Max))
	}
	if st.Timeouts > 0 || st.Deadlocks > 0 {
		line += fmt.Sprintf(", %d gave up at the timeout, %d ended a deadlock", st.Timeouts, st.Deadlocks)
	}
	return line
}

func runLine(s *compare.RunSummary) string {
	line := fmt.Sprintf("%s: %s, %s latency, %d statements", s.Name, s.Kind, s.LatencySource, s.Statements)
	if s.SpanS > 0 {
		line += fmt.Sprintf(" in %.1f s (%.1f/s)", s.SpanS, s.StatementsPerS)
	}
	if s.TimedCalls > 0 {
		line += ", mean " + compare.FormatMS(s.MeanMS) + " ms"
	}
	if s.P95MS > 0 {
		line += ", p95 " + compare.FormatMS(s.P95MS) + " ms"
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
		[]string{"total_ms", "calls", "errors", "mean_ms", "p95_ms", "fingerprint", "query"}, func(q *compare.QueryDiff) []string {
			f := q.Baseline
			return []string{compare.FormatMS(f.TotalMS), strconv.FormatInt(f.Calls, 10), strconv.FormatInt(f.Errors, 10),
				compare.FormatMS(f.MeanMS), compare.FormatMS(f.P95MS), q.Fingerprint, OneLine(q.Query, comparisonQueryWidth)}
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
			rt.Fingerprints, compare.FormatMS(rt.ServerMeanMS), compare.FormatMS(rt.ClientMeanMS), compare.FormatSignedMS(rt.OverheadMS))
		t := [][]string{{"calls", "server mean ms", "server p95 ms", "client mean ms", "client p95 ms", "overhead ms", "fingerprint", "query"}}
		for _, q := range rt.Queries[:n] {
			t = append(t, []string{strconv.FormatInt(q.Calls, 10), compare.FormatMS(q.ServerMeanMS), compare.FormatMS(q.ServerP95MS),
				compare.FormatMS(q.ClientMeanMS), compare.FormatMS(q.ClientP95MS), compare.FormatSignedMS(q.OverheadMS), q.Fingerprint, OneLine(q.Query, comparisonQueryWidth)})
		}
		writeTable(ew, "  ", t, len(t[0])-2)
	}
}

func fmtSigned(ms float64) string {
	s := compare.FormatTotal(ms)
	if ms >= 0 {
		s = "+" + s
	}
	return s
}
