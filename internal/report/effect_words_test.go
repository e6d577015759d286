package report

import (
	"slices"
	"strings"
	"testing"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
)

// A change's point is printed to its bounds' precision, so that it can
// never read outside its own interval ("1.00x (1.001-1.008)"), and the
// "~" goes with an interval that holds 1 as printed.
func TestEffectWords(t *testing.T) {
	for _, tc := range []struct {
		e    compare.Effect
		want string
	}{
		{compare.Effect{Estimate: compare.Estimate{Ratio: 1.004, Low: 1.001, High: 1.008, Change: compare.ChangeSlower}}, "1.004x (1.001-1.008)"},
		{compare.Effect{Estimate: compare.Estimate{Ratio: 0.9994, Low: 0.9991, High: 0.9996, Change: compare.ChangeFaster}}, "0.999x (0.999-1.000)"},
		{compare.Effect{Estimate: compare.Estimate{Ratio: 0.96, Low: 0.903, High: 1.22, Change: compare.ChangeNone}}, "~ 0.960x (0.903-1.22)"},
		{compare.Effect{Estimate: compare.Estimate{Ratio: 1.23, Low: 0.902, High: 1.32, Change: compare.ChangeNone}}, "~ 1.23x (0.902-1.32)"},
		{compare.Effect{Estimate: compare.Estimate{Ratio: 103.8, Low: 93.46, High: 130.3, Change: compare.ChangeSlower}}, "104x (93.46-130)"},
		{compare.Effect{Estimate: compare.Estimate{Ratio: 99.996, Low: 99.995, High: 130, Change: compare.ChangeSlower}}, "100x (100-130)"},
	} {
		if got := fmtEffect(&tc.e); got != tc.want {
			t.Errorf("fmtEffect(%+v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}

// An effect is red only where its query is a regression of that figure:
// a change beyond noise under the 0.2 ms floor (a small change) is not.
func TestEffectCellColour(t *testing.T) {
	slower := compare.Effect{Estimate: compare.Estimate{Ratio: 1.29, Low: 1.016, High: 1.35, Change: compare.ChangeSlower, Beyond: true}, DeltaMS: 0.05}
	faster := compare.Effect{Estimate: compare.Estimate{Ratio: 0.5, Low: 0.4, High: 0.6, Change: compare.ChangeFaster, Beyond: true}, DeltaMS: -1}
	for _, tc := range []struct {
		q    compare.QueryDiff
		m    compare.Metric
		want string
	}{
		{compare.QueryDiff{Status: compare.StatusSmallChange, Changed: compare.MetricP95, Effects: &compare.Effects{P95: slower}}, compare.MetricP95, "ci"},
		{compare.QueryDiff{Status: compare.StatusTailRegressed, Regressed: compare.MetricP95, Effects: &compare.Effects{P95: slower}}, compare.MetricP95, "ci bad"},
		{compare.QueryDiff{Status: compare.StatusTailRegressed, Regressed: compare.MetricP95, Effects: &compare.Effects{Mean: faster, P95: slower}}, compare.MetricMean, "ci"},
		{compare.QueryDiff{Status: compare.StatusImproved, Effects: &compare.Effects{Mean: faster}}, compare.MetricMean, "ci good"},
	} {
		if got := effectCell(&tc.q, tc.m).Class; got != tc.want {
			t.Errorf("%s, %s: class %q, want %q", tc.q.Status, tc.m, got, tc.want)
		}
	}
	if s := fmtEffect(&slower); strings.HasPrefix(s, "~") {
		t.Errorf("%q", s)
	}
}

// A too-few-calls query shows its mean ratio on the page as in the text's
// list (0.88x there, "-" here before), and no impact: it is not a
// regression.
func TestQueriesTableTooFewCalls(t *testing.T) {
	rep := &compare.Report{Baseline: compare.RunSummary{}, Candidate: &compare.RunSummary{},
		Queries: []compare.QueryDiff{{Fingerprint: "f", Query: "SELECT $2 || $1", Status: compare.StatusTooFewCalls, Factor: 0.88,
			Baseline:  &compare.Figures{Calls: 1, Latency: querystats.Latency{TimedCalls: 1, MeanMS: 1}},
			Candidate: &compare.Figures{Calls: 1, Latency: querystats.Latency{TimedCalls: 1, MeanMS: 0.88}}}}}
	s := queriesSection(rep)
	if len(s.Tables) != 1 || len(s.Tables[0].Rows) != 1 {
		t.Fatalf("section %+v", s)
	}
	cells := s.Tables[0].Rows[0].Cells
	if cells[4].Text != "0.88x" || cells[8].Text != "-" {
		t.Errorf("mean C/B %q, impact %q; want 0.88x and -", cells[4].Text, cells[8].Text)
	}
}

// A query that a p50 or p99 rule made a regression is red on the page
// while its mean and p95 cells, the table's, are not: its status names
// the figure, and its page gives the impact counted, which is neither
// of the two "time added" figures.
func TestQueriesTableRuledFigure(t *testing.T) {
	none := compare.Effect{Estimate: compare.Estimate{Ratio: 1.01, Low: 0.99, High: 1.03, Change: compare.ChangeNone}}
	for _, tc := range []struct {
		status    compare.Status
		m         compare.Metric
		want      string
		wantNote  string
		effects   compare.Effects
		impactWas float64
	}{
		{compare.StatusRegressed, compare.MetricP50, "regressed (p50)", "Its impact as a regression of the p50, which a rule judges: +120 ms per run (p50 change x calls).",
			compare.Effects{Mean: none, P95: none, P50: compare.Effect{Estimate: compare.Estimate{Ratio: 1.2, Low: 1.1, High: 1.3, Change: compare.ChangeSlower, Beyond: true}}}, 120},
		{compare.StatusTailRegressed, compare.MetricP99, "tail regressed (p99)", "Its impact as a regression of the p99, which a rule judges: +4.00 ms per run (p99 change x 1% of calls).",
			compare.Effects{Mean: none, P95: none, P99: compare.Effect{Estimate: compare.Estimate{Ratio: 1.5, Low: 1.2, High: 1.8, Change: compare.ChangeSlower, Beyond: true}}}, 4},
		{compare.StatusTailRegressed, compare.MetricP95, "tail regressed", "",
			compare.Effects{Mean: none, P95: compare.Effect{Estimate: compare.Estimate{Ratio: 1.5, Low: 1.2, High: 1.8, Change: compare.ChangeSlower, Beyond: true}}}, 4},
	} {
		fig := &compare.Figures{Calls: 1000, Latency: querystats.Latency{TimedCalls: 1000, MeanMS: 1, P95MS: 2}}
		rep := &compare.Report{Baseline: compare.RunSummary{}, Candidate: &compare.RunSummary{},
			Queries: []compare.QueryDiff{{Fingerprint: "f", Query: "SELECT 1", Status: tc.status, Regressed: tc.m, ImpactMS: tc.impactWas,
				Effects: &tc.effects, Baseline: fig, Candidate: fig}}}
		row := queriesSection(rep).Tables[0].Rows[0]
		if got := row.Cells[0].Text; got != tc.want {
			t.Errorf("%s of the %s: status %q, want %q", tc.status, tc.m, got, tc.want)
		}
		if row.Class != "bad" || strings.Contains(row.Cells[4].Class, "bad") || strings.Contains(row.Cells[7].Class, "bad") != (tc.m == compare.MetricP95) {
			t.Errorf("%s of the %s: row %q, mean cell %q, p95 cell %q", tc.status, tc.m, row.Class, row.Cells[4].Class, row.Cells[7].Class)
		}
		var note string
		for _, n := range row.Detail.Notes {
			if strings.HasPrefix(n, "Its impact") {
				note = n
			}
		}
		if note != tc.wantNote {
			t.Errorf("%s of the %s: note %q, want %q", tc.status, tc.m, note, tc.wantNote)
		}
	}
}

// A tail the runs called slower but its calls could not carry is worded
// with its reason: too few calls (and how many its bound needs), the
// calls' own noise with the interval that decided, or the rehearsal's
// pooled round noise with its interval and the noise.
func TestCallsReasonWords(t *testing.T) {
	rep := &compare.Report{}
	few := compare.Effect{Estimate: compare.Estimate{Ratio: 1.61, Low: 1.32, High: 2.39, Change: compare.ChangeSlower, Beyond: true}, DeltaMS: 5,
		Calls: &compare.CallsEvidence{Alpha: 0.00025, Tests: 100, TooFewCalls: true, MinCalls: 162}}
	noise := few
	noise.Calls = &compare.CallsEvidence{Low: 0.92, High: 3.1, Alpha: 0.00025, Tests: 100}
	rounds := few
	rounds.Calls = &compare.CallsEvidence{Low: 1.21, High: 2.1, Alpha: 0.00025, Tests: 100, RoundNoise: 1.052, RoundNoiseDF: 200, FamilyLow: 0.97, FamilyHigh: 2.6}
	for _, tc := range []struct {
		e      compare.Effect
		reason compare.Reason
		want   string
	}{
		{few, compare.ReasonTailTooFewCalls, "p95 slower over the runs, but the tail rests on too few calls: not judged (120 timed calls in a run; its bound at the level of the 100 figures judged needs 162)"},
		{noise, compare.ReasonWithinCallsNoise, "p95 slower over the runs, but within the sampling error of each run's calls (0.920-3.10 with each run bounded by its calls, at the level of the 100 figures judged)"},
		{rounds, compare.ReasonWithinRoundNoise, "p95 slower over the runs and beyond its calls' sampling, but within the rounds' noise of the whole rehearsal (0.970-2.60 with rounds 5.2% apart, pooled over its queries, at the level of the 100 figures judged)"},
	} {
		q := &compare.QueryDiff{Status: compare.StatusSmallChange, Changed: compare.MetricP95, Reasons: []compare.Reason{tc.reason},
			Effects: &compare.Effects{P95: tc.e}, Baseline: &compare.Figures{Latency: querystats.Latency{TimedCalls: 120}}, Candidate: &compare.Figures{Latency: querystats.Latency{TimedCalls: 130}}}
		if got := QueryNotes(rep, q); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: %q, want %q", tc.reason, got, tc.want)
		}
	}
}

// TestClearedIntervalNoted: a rule the verdict cleared on the rounds'
// Welch interval while the interval shown holds its threshold is noted
// with the interval that cleared it; none when the shown one cleared.
func TestClearedIntervalNoted(t *testing.T) {
	rep := &compare.Report{}
	shown := compare.Effect{Estimate: compare.Estimate{Ratio: 1.04, Low: 0.96, High: 1.14}}
	for _, tc := range []struct {
		cleared *compare.ClearedInterval
		want    []string
	}{
		{nil, nil},
		{&compare.ClearedInterval{Low: 0.99, High: 1.08, Level: 0.9}, []string{"the mean's rules cleared on the rounds' 90% interval 0.990-1.080, not the one shown"}},
		{&compare.ClearedInterval{Low: 0.99, High: 1.08, Level: 0.9, Dropped: 1}, []string{"the mean's rules cleared on the rounds' 90% interval 0.990-1.080, not the one shown (1 outlying round left out)"}},
		{&compare.ClearedInterval{Interval: compare.ClearedPaired, Low: 0.97, High: 1.09, Level: 0.98}, []string{"the mean's rules cleared on the rounds' paired 98% interval 0.970-1.090 (each candidate round against the control round beside it), not the one shown"}},
	} {
		e := shown
		e.Cleared = tc.cleared
		q := &compare.QueryDiff{Status: compare.StatusUnchanged, Effects: &compare.Effects{Mean: e}}
		if got := QueryNotes(rep, q); !slices.Equal(got, tc.want) {
			t.Errorf("cleared %+v: %q, want %q", tc.cleared, got, tc.want)
		}
	}
}
