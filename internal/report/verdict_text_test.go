package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
)

// TestVerdictFirst: a comparison's text starts with its verdict (issue
// 44: some 130 lines came before the FAIL line): the verdict line, the
// rule broken with the query that broke it, and the top regression's
// plans with their cause and the fix it points to; the details follow,
// and the verdict is not said again after them.
func TestVerdictFirst(t *testing.T) {
	rep, plans := verdictComparison(t)
	var b strings.Builder
	if err := WriteVerdict(&b, rep, plans); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want := []string{
		"FAIL: mean>+50% broken by 1 query; 1 regression, worst slow",
		`  mean>+50% broken by slow "SELECT slow": mean 10.0 ms -> 30.0 ms (3.00x, interval`,
		`  top regression slow "SELECT slow": plan changed: Index Scan (customers_email_idx) -> Seq Scan (customers); cause: index missing on candidate`,
		"    fix: create index customers_email_idx on the candidate as on the other side: CREATE INDEX customers_email_idx ON public.customers USING btree (email)",
	}
	if len(lines) != len(want) {
		t.Fatalf("verdict block of %d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d:\n got %q\nwant %q...", i+1, lines[i], w)
		}
	}

	// Without plans, the comparison's text starts with the verdict line
	// and its broken rule, and says neither again.
	b.Reset()
	if err := WriteComparison(&b, rep, 10); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if !strings.HasPrefix(text, want[0]) || !strings.Contains(text, "\n"+want[1]) || strings.Count(text, "FAIL:") != 1 || strings.Contains(text, "top regression") {
		t.Errorf("comparison text:\n%s", text)
	}
}

// TestFixText: a cause that a command undoes names it; the change itself
// (another version) names none.
func TestFixText(t *testing.T) {
	rep := plansReport(t)
	if got, want := FixText(rep.Outcomes[1].Causes[0]), "try shared_buffers = 128MB on the candidate, the control's value (the plans could not confirm it)"; got != want {
		t.Errorf("setting: %q, want %q", got, want)
	}
	c := rep.Outcomes[1].Causes[0]
	c.Kind, c.Control, c.Candidate = explain.CauseVersion, "13.23", "18.4"
	if got := FixText(c); got != "" {
		t.Errorf("version: %q, want none", got)
	}
	// Extended statistics on one side only: the fix goes the way that
	// brings the candidate back, creating them where the candidate
	// lacks them, dropping them where only the candidate has them.
	ext := explain.Cause{Kind: explain.CauseExtendedStatistics, Relation: "s", Setting: "s_ab"}
	for _, tc := range []struct {
		side explain.Side
		want string
	}{
		{explain.Candidate, "create the extended statistics s_ab on the candidate as on the control, then ANALYZE s"},
		{explain.Control, "drop the extended statistics s_ab on the candidate, as the control has none, if the queries they were made for allow: DROP STATISTICS s_ab"},
	} {
		ext.Side = tc.side
		if got := FixText(ext); got != tc.want {
			t.Errorf("extended statistics lacking on the %s: %q, want %q", tc.side, got, tc.want)
		}
	}
}

// TestVerdictLatencyNotJudged: the candidate's replay fell behind its
// schedule (lag p99 9.6 s, above its 100 ms), one run a side: the verdict
// says the latency is not judged and why, the 3x query is listed as not
// judged (lag), never as a regression, and the JSON carries the reason as
// its typed constant.
func TestVerdictLatencyNotJudged(t *testing.T) {
	rep := slowerComparison(t, map[string]any{"lag_ms": map[string]any{"count": 1000, "p50": 1, "p99": 20, "max": 30}, "max_lag_ms": 100},
		map[string]any{"lag_ms": map[string]any{"count": 1000, "p50": 900, "p99": 9600, "max": 12000}, "max_lag_ms": 100,
			"lag_sources": map[string]any{"target_ms": 100, "replayer_ms": 900}})
	var b strings.Builder
	if err := WriteComparison(&b, rep, 10); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	want := "LATENCY NOT JUDGED: the candidate's replay (cand.json) fell behind the log's pace (lag p99 9.60 s, above 100 ms), the replayer the slow side (90% of the lateness): " +
		"its latencies include the replayer's own delay"
	if !strings.HasPrefix(text, want) || !strings.Contains(text, "no latency judged: 1 query changed beyond the floors, not judged (lag)") ||
		!strings.Contains(text, "\n"+NotJudgedLagTitle+"\n") || strings.Contains(text, "Regressions by") || strings.Contains(text, "broken by") ||
		strings.Contains(text, "PASS") || strings.Contains(text, "FAIL") {
		t.Errorf("comparison text:\n%s", text)
	}
	doc := comparisonJSON(t, rep)
	var got struct {
		Verdict struct {
			Status           string `json:"status"`
			Line             string `json:"line"`
			LatencyNotJudged struct {
				Reason string `json:"reason"`
				Runs   []struct {
					Side     string  `json:"side"`
					LagP99MS float64 `json:"lag_p99_ms"`
					MaxLagMS float64 `json:"max_lag_ms"`
				} `json:"runs"`
			} `json:"latency_not_judged"`
		} `json:"verdict"`
		NotJudgedLag []string `json:"not_judged_lag"`
		Queries      []struct {
			Fingerprint, Status, Note string
		} `json:"queries"`
	}
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	v := got.Verdict
	if v.Status != string(compare.VerdictIncomplete) || !strings.HasPrefix(v.Line, want) || v.LatencyNotJudged.Reason != string(compare.NotJudgedReplayLagged) ||
		len(v.LatencyNotJudged.Runs) != 1 || v.LatencyNotJudged.Runs[0].Side != "candidate" || v.LatencyNotJudged.Runs[0].LagP99MS != 9600 ||
		v.LatencyNotJudged.Runs[0].MaxLagMS != 100 || len(got.NotJudgedLag) != 1 || got.NotJudgedLag[0] != "slow" {
		t.Errorf("JSON verdict %+v, not judged %v", v, got.NotJudgedLag)
	}
	for _, q := range got.Queries {
		if q.Fingerprint == "slow" && (q.Status != string(compare.StatusNotJudgedLag) || !strings.Contains(q.Note, "its latency is not judged")) {
			t.Errorf("slow in the JSON: %+v", q)
		}
	}
}

// TestVerdictUndecided: a rehearsal whose rounds could not tell whether
// a query breaks a rule says UNDECIDED first, then each rule with its
// query, the figure's ratio, its interval and the threshold it holds
// (issue 58 item 4); a rule broken by the figure a query regressed on
// names that figure.
func TestVerdictUndecided(t *testing.T) {
	rep := &compare.Report{Candidate: &compare.RunSummary{}, Rules: []compare.Rule{{Text: "p95>+50%", Metric: compare.MetricP95}},
		Queries: []compare.QueryDiff{{Fingerprint: "q1", Query: "SELECT 1", Status: compare.StatusUndecided}}}
	rep.Verdict = compare.Verdict{Status: compare.VerdictUndecided, Undecided: []compare.Undecided{{Rule: "p95>+50%", Metric: compare.MetricP95,
		Fingerprint: "q1", Threshold: 1.5, Ratio: 1.4, Low: 0.9, High: 2.2, Level: 0.98}}}
	var b strings.Builder
	if err := WriteVerdict(&b, rep, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "UNDECIDED: p95>+50% may be broken by 1 query, the rounds could not tell; ") ||
		lines[1] != `  p95>+50% may be broken by q1 "SELECT 1": p95 1.40x, interval 0.90-2.20 at 98%, holds 1.50x` {
		t.Errorf("verdict block:\n%s", b.String())
	}
	// The query's own notes word its reason, never the token
	// (may_break_rule printed raw, found on stored rounds).
	rep.Queries[0].Reasons = []compare.Reason{compare.ReasonMayBreakRule}
	if notes, want := QueryNotes(rep, &rep.Queries[0]), "undecided: p95>+50%'s p95 1.40x (interval 0.90-2.20 at 98%) holds its threshold 1.50x; more rounds would tell"; len(notes) != 1 || notes[0] != want {
		t.Errorf("undecided query's notes %q, want %q", notes, want)
	}
	// An interval beyond the threshold does not hold it: the note names
	// what does (the calls' evidence), as the verdict's line does
	// (found on a busy bench/forecast run, 4.15x (2.73-5.06) said to hold 1.50x).
	beyond := rep.Verdict.Undecided[0]
	beyond.Ratio, beyond.Low, beyond.High, beyond.CallsLow, beyond.CallsHigh, beyond.Tests = 4.15, 2.73, 5.06, 1.38, 10.96, 8
	rep.Verdict.Undecided[0] = beyond
	want := "undecided: p95>+50%'s p95 4.15x (interval 2.73-5.06 at 98%; with its calls and the rounds' noise at the level of the 8 figures judged 1.38-10.96) holds its threshold 1.50x; more rounds would tell"
	if notes := QueryNotes(rep, &rep.Queries[0]); len(notes) != 1 || notes[0] != want {
		t.Errorf("undecided query's notes beyond its threshold %q, want %q", notes, want)
	}
	q := compare.QueryDiff{Fingerprint: "q2", Query: "SELECT 2", Status: compare.StatusRegressed, Regressed: compare.MetricMean,
		Effects: &compare.Effects{Mean: compare.Effect{Estimate: compare.Estimate{Ratio: 2.33, Low: 1.9, High: 2.8}}}}
	rep.Queries = append(rep.Queries, q)
	got := BrokenDetail(rep, compare.Broken{Rule: "p95>+50%", Metric: compare.MetricP95, Figure: compare.MetricMean, Fingerprint: "q2", Baseline: 1.5, Candidate: 3.5})
	if want := "mean 1.50 ms -> 3.50 ms (2.33x, interval 1.90-2.80), the figure it regressed on; its p95 could not tell alone"; got != want {
		t.Errorf("broken by the regressed figure:\n got %q\nwant %q", got, want)
	}
	// An insert queued behind a dropped index's lookups: its server time
	// told (1.13x, under the rule), its round trips' p95 regressed. The
	// words name each figure's level and say what the rule's own figure
	// said, never that it could not tell (found on bench/forecast without
	// target logs: "p95 ... its mean could not tell alone" beside a mean
	// on server time of 1.13x, 1.10-1.20).
	tail := compare.QueryDiff{Fingerprint: "q3", Query: "INSERT", Status: compare.StatusTailRegressed, Regressed: compare.MetricP95,
		Levels: &compare.QueryLevels{Judged: compare.LevelServer, Percentiles: compare.LevelApplication},
		Effects: &compare.Effects{
			Mean: compare.Effect{Estimate: compare.Estimate{Ratio: 1.13, Low: 1.10, High: 1.20, Change: compare.ChangeSlower}},
			P95:  compare.Effect{Estimate: compare.Estimate{Ratio: 13.02, Low: 10.13, High: 14.07, Change: compare.ChangeSlower}}}}
	rep.Queries = append(rep.Queries, tail)
	got = BrokenDetail(rep, compare.Broken{Rule: "mean>+50%", Metric: compare.MetricMean, Figure: compare.MetricP95, Fingerprint: "q3",
		Baseline: 0.323, Candidate: 4.21, Level: compare.LevelApplication})
	if want := "p95 of the application's round trips 0.323 ms -> 4.21 ms (13.03x, interval 10.13-14.07), the figure it regressed on; " +
		"its mean on server time (pg_stat_statements) 1.13x (1.10-1.20), did not break it alone"; got != want {
		t.Errorf("broken by a tail of another level:\n got %q\nwant %q", got, want)
	}
}

// A rule broken under the per-call floors is worded with how little the
// change adds beside the rule, in the verdict's line and in the query's
// notes: the DBA sees both (issue 58).
func TestBrokenUnderFloorsWords(t *testing.T) {
	e := compare.Effect{Estimate: compare.Estimate{Ratio: 2.47, Low: 2.10, High: 4.69, Change: compare.ChangeSlower, Beyond: true}, DeltaMS: 0.078, AddedShare: 0.0021}
	q := compare.QueryDiff{Fingerprint: "q1", Query: "SELECT 1", Status: compare.StatusRegressed, Regressed: compare.MetricMean,
		Reasons: []compare.Reason{compare.ReasonBreaksRuleUnderFloors}, Effects: &compare.Effects{Mean: e}}
	rep := &compare.Report{Queries: []compare.QueryDiff{q}, Settings: compare.Settings{MinEffectMS: 0.2, MinTimeShare: 0.01}}
	got := BrokenDetail(rep, compare.Broken{Rule: "mean>+50%", Metric: compare.MetricMean, Fingerprint: "q1", Baseline: 0.053, Candidate: 0.131,
		Level: compare.LevelServer, UnderFloors: true})
	want := "mean on server time (pg_stat_statements) 0.053 ms -> 0.131 ms (2.47x, interval 2.10-4.69; " +
		"it adds +0.078 ms a call (--min-effect-ms 0.2) and at least 0.2% of the run's time (1.0%))"
	if got != want {
		t.Errorf("broken under the floors:\n got %q\nwant %q", got, want)
	}
	notes := QueryNotes(rep, &q)
	want = "mean slower beyond a --fail-on rule's threshold over its whole interval (2.10-4.69), under the floors a regression otherwise needs: " +
		"it adds +0.078 ms a call (--min-effect-ms 0.2) and at least 0.2% of the run's time (1.0%); the rule says it matters"
	if len(notes) != 1 || notes[0] != want {
		t.Errorf("notes %q, want %q", notes, want)
	}
}

// An undecided rule whose interval lies beyond the threshold says what
// holds it: the calls' evidence, the runs' alone without histograms, or
// the control's noise floor.
func TestUndecidedWhatHolds(t *testing.T) {
	rep := &compare.Report{Queries: []compare.QueryDiff{{Fingerprint: "q1", Query: "SELECT 1"}}}
	u := compare.Undecided{Rule: "mean>+50%", Metric: compare.MetricMean, Fingerprint: "q1", Threshold: 1.5, Ratio: 2.47, Low: 2.10, High: 4.69, Level: 0.9,
		CallsLow: 1.32, CallsHigh: 7.16, Tests: 8}
	want := `mean>+50% may be broken by q1 "SELECT 1": mean 2.47x, interval 2.10-4.69 at 90%; with its calls and the rounds' noise at the level of the 8 figures judged 1.32-7.16, holds 1.50x`
	if got := UndecidedLine(rep, u); got != want {
		t.Errorf("calls hold:\n got %q\nwant %q", got, want)
	}
	u.RoundsOnly, u.CallsLow, u.CallsHigh = true, 0, math.MaxFloat64
	want = `mean>+50% may be broken by q1 "SELECT 1": mean 2.47x, interval 2.10-4.69 at 90%; over its runs alone (no histograms) at the level of the 8 figures judged 0-∞, holds 1.50x`
	if got := UndecidedLine(rep, u); got != want {
		t.Errorf("rounds hold:\n got %q\nwant %q", got, want)
	}
	u.RoundsOnly, u.CallsLow, u.CallsHigh, u.Tests, u.NoiseFloor = false, 0, 0, 0, 1.98
	want = `mean>+50% may be broken by q1 "SELECT 1": mean 2.47x, interval 2.10-4.69 at 90%; within the control's noise floor 1.98x, holds 1.50x`
	if got := UndecidedLine(rep, u); got != want {
		t.Errorf("noise floor holds:\n got %q\nwant %q", got, want)
	}
}

// A percentile rule broken by the log's figure without its per-call
// overhead, not by the log's own, shows both, the one that broke it
// named with the overhead taken out, in the verdict's line and in the
// query's notes; an undecided one names its figure so too (issue 58 item
// 3): a label never contradicts its figure.
func TestBrokenWithoutOverheadWords(t *testing.T) {
	raw := compare.Effect{Estimate: compare.Estimate{Ratio: 1.30, Low: 1.25, High: 1.36, Change: compare.ChangeSlower, Beyond: true}, DeltaMS: 0.086}
	less := compare.Effect{Estimate: compare.Estimate{Ratio: 2.0, Low: 1.85, High: 2.16, Change: compare.ChangeSlower, Beyond: true}, DeltaMS: 0.086}
	row := func(p95 float64) *compare.Query {
		return &compare.Query{Fingerprint: "q1", Calls: 2000, Latency: querystats.Latency{TimedCalls: 2000, P95MS: p95}}
	}
	q := compare.QueryDiff{Fingerprint: "q1", Query: "SELECT 1", Status: compare.StatusTailRegressed, Regressed: compare.MetricP95,
		Reasons: []compare.Reason{compare.ReasonBreaksRuleWithoutOverhead}, Effects: &compare.Effects{P95: raw},
		Levels:       &compare.QueryLevels{Judged: compare.LevelServer, Percentiles: compare.LevelLog, OverheadMS: 0.2, CandidateOverheadMS: 0.19, LogP95: &less},
		BaselineRows: []*compare.Query{row(0.286)}, CandidateRows: []*compare.Query{row(0.372)}}
	b := compare.Broken{Rule: "p95>+50%", Metric: compare.MetricP95, Fingerprint: "q1", Baseline: 0.286, Candidate: 0.372, Level: compare.LevelLog, UnderFloors: true,
		WithoutOverhead: &compare.LessOverhead{OverheadMS: 0.2, CandidateOverheadMS: 0.2, Baseline: 0.086, Candidate: 0.172}}
	rep := &compare.Report{Queries: []compare.QueryDiff{q}, Settings: compare.Settings{MinEffectMS: 0.2, MinTimeShare: 0.01}}
	rep.Verdict.Broken = []compare.Broken{b}
	want := "p95 of the server log's durations 0.286 ms -> 0.372 ms (1.30x, interval 1.25-1.36); without the log's 0.200 ms per-call overhead 0.086 ms -> 0.172 ms " +
		"(2.00x, interval 1.85-2.16; it adds +0.086 ms a call (--min-effect-ms 0.2)), which breaks it"
	if got := BrokenDetail(rep, b); got != want {
		t.Errorf("broken without the overhead:\n got %q\nwant %q", got, want)
	}
	want = "p95 without the log's 0.200 ms per-call overhead 0.086 ms -> 0.172 ms (2.00x, interval 1.85-2.16) breaks a --fail-on rule, " +
		"under the floors a regression otherwise needs: it adds +0.086 ms a call (--min-effect-ms 0.2); the rule says it matters; " +
		"the log's own p95 reads 1.30x, the overhead compressing its ratio"
	if notes := QueryNotes(rep, &rep.Queries[0]); len(notes) != 1 || notes[0] != want {
		t.Errorf("notes %q,\nwant %q", notes, want)
	}
	// The candidate's own overhead, where the larger, is named beside
	// the control's.
	b.WithoutOverhead.CandidateOverheadMS, b.UnderFloors = 0.23, false
	want = "p95 of the server log's durations 0.286 ms -> 0.372 ms (1.30x, interval 1.25-1.36); without the log's per-call overhead (0.200 ms on the control, 0.230 ms on the candidate) " +
		"0.086 ms -> 0.172 ms (2.00x, interval 1.85-2.16), which breaks it"
	if got := BrokenDetail(rep, b); got != want {
		t.Errorf("broken without each side's overhead:\n got %q\nwant %q", got, want)
	}
	u := compare.Undecided{Rule: "p95>+50%", Metric: compare.MetricP95, Fingerprint: "q1", Threshold: 1.5, Ratio: 2.0, Low: 1.2, High: 3.1, Level: 0.98, OverheadMS: 0.2}
	want = `p95>+50% may be broken by q1 "SELECT 1": p95 without the log's 0.200 ms per-call overhead 2.00x, interval 1.20-3.10 at 98%, holds 1.50x`
	if got := UndecidedLine(rep, u); got != want {
		t.Errorf("undecided without the overhead:\n got %q\nwant %q", got, want)
	}
}
