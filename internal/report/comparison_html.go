package report

import (
	"encoding/json"
	"fmt"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/explain"
	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// Colours of the two sides, the same in every chart; a side's runs take
// shades of its colour.
const (
	baselineColor  = "#7f8c9a"
	candidateColor = "#d35400"
)

var (
	baselineShades  = []string{"#7f8c9a", "#4d5966", "#aab4bf", "#2f3a45", "#c6ced6"}
	candidateShades = []string{"#d35400", "#f39c12", "#a04000", "#e59866", "#6e2c00"}
)

// pageQueryWidth is how much of a query's text a table cell shows.
const pageQueryWidth = 70

// ComparisonOptions tune ComparisonPage.
type ComparisonOptions struct {
	// Top is how many queries get a distribution chart; 0 means 6.
	Top int
	// Footer is the page's small print; empty means the comparison's
	// settings.
	Footer string
	// Findings, when set, add their section after the comparison's.
	Findings *findings.Report
	// Evidence adds the server-side evidence of runs, last.
	Evidence []RunEvidence
	Hints    Hints
	// Plans, when the regressions' plans were explained, add the top
	// regression's cause and fix to the verdict (NewVerdictBlock).
	Plans *explain.Report
	// Fixes, when rehearse tried some, add the section "Does the fix
	// work" after the summary (FixesSection).
	Fixes []fixes.Outcome
	// Batched, when rehearse --batch-inserts measured it, adds the
	// section "Batched INSERTs" after the fixes (BatchSection).
	Batched *findings.BatchMeasure
}

// RunEvidence is the server-side evidence of one run and the label of its
// sections: "baseline", "candidate", or "" on a page about one run.
type RunEvidence struct {
	Label    string
	Evidence *observe.Evidence
}

// ComparisonPage lays a comparison (or a one-run summary) out as a page:
// the verdict first (the text's verdict block, NewVerdictBlock, with the
// top regression's cause and fix when opts has the plans), then the
// summary and the worst regressions, the fixes tried when opts has them
// (FixesSection) and what batching the INSERTs saved when opts has it
// (BatchSection), both sides' throughput and latency with their spread,
// every change with its interval (error bars), both sides over time,
// distributions of the top queries, errors and queries seen on one side
// only, a replay's client round trips when it kept them, and the table
// of all queries; then the findings and the runs' server-side evidence
// when opts has them.
func ComparisonPage(rep *compare.Report, opts ComparisonOptions) htmlreport.Page {
	if opts.Top <= 0 {
		opts.Top = 6
	}
	one := rep.Candidate == nil
	p := htmlreport.Page{Title: "pgrehearse report", Footer: opts.Footer}
	if p.Footer == "" {
		p.Footer = fmt.Sprintf("pgrehearse report; intervals at %.0f%% (alpha %g), at least %d timed calls, regressions from +%.0f%% and +%g ms, "+
			"default noise floors for one run a side: mean %s, p95 %s",
			100*(1-rep.Settings.Alpha), rep.Settings.Alpha, rep.Settings.MinCalls, rep.Settings.MinEffect*100, rep.Settings.MinEffectMS,
			fmtFactor(rep.Noise.Defaults.Mean), fmtFactor(rep.Noise.Defaults.P95))
	}
	if one {
		p.Subtitle = fmt.Sprintf("Summary of %s (%s, %s latency)", rep.Baseline.Name, rep.Baseline.Kind, rep.Baseline.LatencySource)
	} else {
		p.Subtitle = fmt.Sprintf("Baseline %s (%s) vs candidate %s (%s); latency: %s vs %s", sideName(&rep.Baseline), rep.Baseline.Kind,
			sideName(rep.Candidate), rep.Candidate.Kind, rep.Baseline.LatencySource, rep.Candidate.LatencySource)
	}
	p.Verdict = verdictBox(rep, opts.Plans, opts.Fixes)

	p.Sections = append(p.Sections, summarySection(rep))
	if len(opts.Fixes) > 0 {
		p.Sections = append(p.Sections, FixesSection(opts.Fixes))
	}
	if opts.Batched != nil {
		p.Sections = append(p.Sections, BatchSection(opts.Batched))
	}
	if !one {
		if s, ok := effectsSection(rep); ok {
			p.Sections = append(p.Sections, s)
		}
	}
	if s, ok := timelineSection(rep); ok {
		p.Sections = append(p.Sections, s)
	}
	p.Sections = append(p.Sections, distributionSection(rep, opts.Top, opts.Hints))
	if !one {
		if len(rep.Divergence) > 0 {
			p.Sections = append(p.Sections, divergenceSection(rep))
		}
		p.Sections = append(p.Sections, errorsSection(rep))
	}
	if s, ok := levelsSection(rep); ok && !one {
		p.Sections = append(p.Sections, s)
	}
	if s, ok := workSection(rep); ok {
		p.Sections = append(p.Sections, s)
	}
	if s, ok := roundTripsSection(rep, opts.Hints); ok {
		p.Sections = append(p.Sections, s)
	}
	if s, ok := connectionSetupSection(rep); ok {
		p.Sections = append(p.Sections, s)
	}
	p.Sections = append(p.Sections, queriesSection(rep))
	if opts.Findings != nil {
		p.Sections = append(p.Sections, FindingsSection(opts.Findings, opts.Hints))
	}
	for _, ev := range opts.Evidence {
		if ev.Evidence != nil {
			p.Sections = append(p.Sections, EvidenceSections(ev.Evidence, ev.Label, opts.Hints)...)
		}
	}
	return p
}

// verdictBox is the page's verdict, the box above every section: the
// verdict block the text starts with (NewVerdictBlock: the verdict line,
// the rules broken by which queries, the top regression's cause and fix),
// then the comparison's warnings.
func verdictBox(rep *compare.Report, plans *explain.Report, tried []fixes.Outcome) *htmlreport.Verdict {
	vb := NewVerdictBlock(rep, plans)
	vb.WithFixes(rep, tried)
	v := &htmlreport.Verdict{Status: string(rep.Verdict.Status), Line: vb.Line, Items: append(slices.Clone(vb.Broken), vb.Undecided...)}
	if vb.More != "" {
		v.Items = append(v.Items, vb.More)
	}
	if t := vb.Top; t != nil {
		v.Focus = "Top regression " + t.Query + ": " + t.Plan
		if t.Fix != "" {
			v.Action, v.Outcome = "Fix: "+t.Fix, t.Tried
		}
	}
	for _, w := range rep.Warnings {
		v.Notes = append(v.Notes, WarningText(w))
	}
	return v
}

// sideName is a side's file, or "3 runs: a.json, b.json, c.json".
func sideName(s *compare.RunSummary) string {
	if n := s.RunCount(); n > 1 {
		return fmt.Sprintf("%d runs: %s", n, s.Name)
	}
	return s.Name
}

func fmtRate(v float64) string {
	if v == 0 {
		return "-"
	}
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func fmtMSOf(v float64, timed int64) string {
	if timed == 0 {
		return "-"
	}
	return fmtMS(v) + " ms"
}

func runCards(label string, s *compare.RunSummary) []htmlreport.Card {
	n := s.RunCount()
	var sp compare.SummarySpread
	if s.Spread != nil {
		sp = *s.Spread
	}
	p95 := "-"
	if s.P95MS > 0 {
		p95 = fmtMS(s.P95MS) + " ms" + fmtSpread(sp.P95MS, n)
	}
	runs := ""
	if n > 1 {
		runs = fmt.Sprintf(" (median of %d runs)", n)
	}
	cards := []htmlreport.Card{
		{Label: label + ": statements/s" + runs, Value: fmtRate(s.StatementsPerS) + fmtSpread(sp.StatementsPerS, n), Sub: fmt.Sprintf("%d statements in %.1f s", s.Statements, s.SpanS)},
		{Label: label + ": mean latency" + runs, Value: fmtMSOf(s.MeanMS, s.TimedCalls) + fmtSpread(sp.MeanMS, n), Sub: "p95 " + p95},
		{Label: label + ": failed", Value: strconv.FormatInt(s.Failed, 10), Sub: fmt.Sprintf("%d distinct queries", s.Queries)},
	}
	if st := s.Sync; st != nil {
		c := htmlreport.Card{Label: label + ": sync", Value: string(st.Mode), Sub: syncLine(s)}
		if st.Mode == results.SyncOff {
			c.Status = "bad"
		}
		cards = append(cards, c)
	}
	return cards
}

// divergenceSection lists the queries that did different work in the two
// runs: a replay that ran dependent sessions out of order.
func divergenceSection(rep *compare.Report) htmlreport.Section {
	s := htmlreport.Section{ID: "divergence", Title: "Divergence",
		Text: []string{"These queries did different work than in the baseline: other rows per call, or errors of ordering " +
			"(a foreign key not there yet, a duplicate key, a serialization failure, a deadlock) that the baseline did not have. " +
			"A replay whose sessions depended on each other's commits ran them in another order; its timings measure another " +
			"workload, so they are not regressions of the candidate."}}
	t := htmlreport.Table{ID: "divergence-table", Title: "Queries that diverged", Sortable: true,
		Columns: []htmlreport.Column{{Label: "rows/call B → C", Tooltip: "rows per call, baseline → candidate"}, {Label: "ordering errors"}, {Label: "why"}, {Label: "query"}}}
	for _, d := range rep.Divergence {
		t.Rows = append(t.Rows, htmlreport.Row{Class: "bad", Cells: []htmlreport.Cell{
			htmlreport.Text(strings.ReplaceAll(rowsPerCall(d), "->", "→")), htmlreport.Text(orderingErrors(d)), htmlreport.Text(DivergenceReason(d)),
			queryCell(d.Fingerprint, d.Query, pageQueryWidth)}})
	}
	s.Tables = []htmlreport.Table{t}
	return s
}

func summarySection(rep *compare.Report) htmlreport.Section {
	s := htmlreport.Section{ID: "summary", Title: "Summary"}
	s.Cards = append(s.Cards, runCards("Baseline", &rep.Baseline)...)
	if rep.Candidate == nil {
		return s
	}
	s.Cards = append(s.Cards, runCards("Candidate", rep.Candidate)...)
	nReg := rep.Verdict.Regressions + rep.Verdict.TailRegressions
	regs := htmlreport.Card{Label: "Regressions beyond noise", Value: strconv.Itoa(nReg),
		Sub: fmt.Sprintf("%d of the tail only; %d with too few calls to judge", rep.Verdict.TailRegressions, len(rep.TooFewCalls))}
	if n := rep.Verdict.SlowerWhileBusier; n > 0 {
		regs.Sub += fmt.Sprintf("; %d more slower while the server was busier, not counted", n)
	}
	if rep.Verdict.LatencyNotJudged != nil {
		regs.Value, regs.Status = "not judged", ""
		regs.Sub = fmt.Sprintf("a replay fell behind its schedule: %d %s changed beyond the floors, not judged (lag)", rep.Verdict.NotJudgedLag,
			plural(rep.Verdict.NotJudgedLag, "query", "queries"))
	}
	if nReg > 0 {
		regs.Status = "bad"
	}
	noise := htmlreport.Card{Label: "Run-to-run noise", Value: "not measured",
		Sub: fmt.Sprintf("%d and %d runs; %d a side needed: judged against default floors", rep.Noise.BaselineRuns, rep.Noise.CandidateRuns, rep.Noise.MinRuns)}
	if rep.Noise.Measured {
		noise.Value = "measured"
		noise.Sub = fmt.Sprintf("over %d and %d runs; %.0f%% intervals", rep.Noise.BaselineRuns, rep.Noise.CandidateRuns, 100*rep.Noise.Level)
	}
	s.Cards = append(s.Cards, regs, noise)
	if sw := rep.ServerWork; sw != nil {
		work := htmlreport.Card{Label: "Writes more per call", Value: "not compared", Sub: "some runs have no pg_stat_statements figures"}
		if sw.Compared {
			work.Value, work.Sub = strconv.Itoa(rep.Verdict.MoreWork), "WAL bytes or blocks dirtied per call, beyond noise and the floors"
			if rep.Verdict.MoreWork > 0 {
				work.Status = "bad"
			}
		}
		s.Cards = append(s.Cards, work)
	}

	t := htmlreport.Table{ID: "worst", Title: "Worst regressions (by time added per run)", Empty: "No query is slower beyond noise and the floors.",
		Columns: []htmlreport.Column{{Label: "#", Numeric: true}, {Label: "figure", Tooltip: "the figure that regressed: mean, or p95 for a tail regression"},
			{Label: "C/B", Numeric: true, Tooltip: "candidate / baseline, with its interval"}, {Label: "floor", Numeric: true, Tooltip: "the factor a change had to reach: effect floor, noise floor (the baseline's own runs) or the default for one run"},
			{Label: "impact", Numeric: true, Tooltip: "time added per run: mean change × calls, or for the tail p95 change × 5% of calls" + ruledImpact(rep)},
			{Label: "calls C", Numeric: true}, {Label: "query"}}}
	// With the noise measured, the next run's interval and the smallest
	// change told beside the change's, as in the text (issue 76).
	resolved := rep.Resolution != nil
	if resolved {
		t.Columns = slices.Insert(t.Columns, 3, resolvedColumns("")...)
		s.Notes = append(ResolutionLines(rep), ResolvedLegend...)
	}
	rows := func(fps []string, class string) []htmlreport.Row {
		var out []htmlreport.Row
		for i, fp := range fps {
			if i == 5 {
				break
			}
			q := rep.Query(fp)
			e := q.Effects.Of(q.Regressed)
			what := figureName(q, q.Regressed)
			if q.Status == compare.StatusTailRegressed {
				what += " (tail)"
			}
			cells := []htmlreport.Cell{
				htmlreport.Num(strconv.Itoa(i+1), float64(i+1)), htmlreport.Text(what),
				effectCell(q, q.Regressed), htmlreport.Num(floorText(e, rep.Settings.MinEffect), e.Floor),
				htmlreport.Num(fmtSignedTotal(q.ImpactMS), q.ImpactMS),
				htmlreport.Num(strconv.FormatInt(q.Candidate.Calls, 10), float64(q.Candidate.Calls)),
				queryCell(fp, q.Query, pageQueryWidth),
			}
			if resolved {
				cells = slices.Insert(cells, 3, resolvedCells(q, q.Regressed)...)
			}
			out = append(out, htmlreport.Row{Class: class, Detail: queryDetail(rep, q), Cells: cells})
		}
		return out
	}
	t.Rows = rows(rep.RegressionsByAddedTime, "bad")
	s.Tables = append(s.Tables, t)
	if len(rep.SlowerWhileBusier) > 0 {
		b := t
		b.ID, b.Title, b.Rows = "busier", BusierTitle(rep), rows(rep.SlowerWhileBusier, "")
		s.Tables = append(s.Tables, b)
	}
	if len(rep.NotJudgedLag) > 0 {
		n := htmlreport.Table{ID: "not-judged-lag", Title: NotJudgedLagTitle,
			Columns: []htmlreport.Column{{Label: "mean C/B", Numeric: true}, {Label: "p95 C/B", Numeric: true}, {Label: "query"}}}
		for _, fp := range rep.NotJudgedLag {
			q := rep.Query(fp)
			n.Rows = append(n.Rows, htmlreport.Row{Detail: queryDetail(rep, q), Cells: []htmlreport.Cell{
				effectCell(q, compare.MetricMean), effectCell(q, compare.MetricP95), queryCell(fp, q.Query, pageQueryWidth)}})
		}
		s.Tables = append(s.Tables, n)
	}
	return s
}

// effectCell is a change with its interval; it may wrap before the
// interval. Its colour is the query's judgement of metric m, not the
// effect's own: a change beyond noise that stays under a floor (0.2 ms
// a call) is not red.
func effectCell(q *compare.QueryDiff, m compare.Metric) htmlreport.Cell {
	e := q.Effects.Of(m)
	if e == nil {
		return htmlreport.Num("-", 0)
	}
	c := htmlreport.Num(fmtEffect(e), e.Ratio)
	c.Class = "ci"
	// A query slower while the server was busier is not counted: its
	// figure is not red, or it would read as a regression (issue 44).
	switch {
	case q.Regressed == m && q.Status.Regression():
		c.Class += " bad"
	case q.Status == compare.StatusImproved && m == compare.MetricMean:
		c.Class += " good"
	}
	return c
}

// resolvedColumns are the columns "next run" and "can tell" of a
// comparison whose noise is measured, their labels after prefix ("mean "
// or ""), their tooltips the text legend's words.
func resolvedColumns(prefix string) []htmlreport.Column {
	return []htmlreport.Column{{Label: prefix + "next run", Numeric: true, Tooltip: nextRunWords + "; " + verdictIntervalWords},
		{Label: prefix + "can tell", Numeric: true, Tooltip: canTellWords}}
}

// resolvedCells are a query's next-run interval of metric m and the
// smallest change of it its rounds could tell, as the text shows them;
// "-" for none.
func resolvedCells(q *compare.QueryDiff, m compare.Metric) []htmlreport.Cell {
	var e *compare.Effect
	if q.Effects != nil {
		e = q.Effects.Of(m)
	}
	if e == nil {
		return []htmlreport.Cell{htmlreport.Num("-", 0), htmlreport.Num("-", 0)}
	}
	// Sorted by a key rounded far below what is shown, so that a last
	// bit of floating point does not move the page.
	key := func(v float64) float64 { return math.Round(v*1e4) / 1e4 }
	next := htmlreport.Num(fmtNextRun(e), 0)
	if e.NextRun != nil {
		next.Sort = key(e.NextRun.High)
	}
	next.Class = "ci"
	return []htmlreport.Cell{next, htmlreport.Num(fmtDetectable(e.MinDetectable), key(e.MinDetectable))}
}

// queryCell shows a query's text, its parameters in order, shortened,
// with its fingerprint and full text on hover.
func queryCell(fp, q string, width int) htmlreport.Cell {
	one := strings.Join(strings.Fields(DisplayQuery(q)), " ")
	c := htmlreport.Cell{Text: one, Class: "query", Title: fp}
	if r := []rune(one); len(r) > width {
		c.Text, c.Title = string(r[:width-1])+"…", fp+": "+one
	}
	return c
}

func queryDetail(rep *compare.Report, q *compare.QueryDiff) *htmlreport.Detail {
	d := &htmlreport.Detail{Title: "Query " + q.Fingerprint + " (" + StatusText(q.Status) + ")", Code: DisplayQuery(q.Query)}
	one := rep.Candidate == nil
	runs := [2]int{rep.Baseline.RunCount(), 1}
	if !one {
		runs[1] = rep.Candidate.RunCount()
	}
	t := &htmlreport.SimpleTable{Head: []string{"", "baseline", "candidate", "C/B (interval)", "floor"}}
	rowMetric := map[int]compare.Metric{} // the rows of the latency figures
	cell := func(f *compare.Figures, side int, get func(*compare.Figures) string) string {
		if f == nil {
			return "-"
		}
		return get(f)
	}
	count := func(name string, get func(*compare.Figures) int64) {
		r := []string{name, cell(q.Baseline, 0, func(f *compare.Figures) string { return strconv.FormatInt(get(f), 10) }),
			cell(q.Candidate, 1, func(f *compare.Figures) string { return strconv.FormatInt(get(f), 10) }), "", ""}
		t.Rows = append(t.Rows, r)
	}
	count("calls", func(f *compare.Figures) int64 { return f.Calls })
	count("errors", func(f *compare.Figures) int64 { return f.Errors })
	count("timed calls", func(f *compare.Figures) int64 { return f.TimedCalls })
	for _, m := range []compare.Metric{compare.MetricMean, compare.MetricP50, compare.MetricP95, compare.MetricP99} {
		get := func(side int) func(f *compare.Figures) string {
			return func(f *compare.Figures) string {
				if f.TimedCalls == 0 {
					return "-"
				}
				x := figureOf(f, m)
				return fmtMS(x.v) + " ms" + fmtSpread(x.spread, runs[side])
			}
		}
		name := string(m)
		switch {
		case m != compare.MetricMean:
		case q.JudgedOnServer():
			name = "mean (server, pg_stat_statements)"
		case q.JudgedApart():
			name = "mean (" + LevelName(q.Levels.Judged) + ")"
		}
		r := []string{name, cell(q.Baseline, 0, get(0)), cell(q.Candidate, 1, get(1)), "", ""}
		rowMetric[len(t.Rows)] = m
		if q.Effects != nil {
			e := q.Effects.Of(m)
			r[3], r[4] = fmtEffect(e), floorText(e, rep.Settings.MinEffect)
		}
		t.Rows = append(t.Rows, r)
	}
	t.Rows = append(t.Rows, []string{"max", cell(q.Baseline, 0, func(f *compare.Figures) string { return fmtMSOf(f.MaxMS, f.TimedCalls) }),
		cell(q.Candidate, 1, func(f *compare.Figures) string { return fmtMSOf(f.MaxMS, f.TimedCalls) }), "", ""})
	if one {
		t.Head = []string{"", "figure"}
		for i := range t.Rows {
			t.Rows[i] = t.Rows[i][:2]
		}
	}
	if w := q.Work; w != nil && !one {
		for _, m := range compare.WorkMetrics {
			e := w.Of(m)
			t.Rows = append(t.Rows, []string{WorkMetricName(m) + "/call", fmtPerCall(m, e.Baseline), fmtPerCall(m, e.Candidate), fmtWorkEffect(e), fmtFactor(e.Floor)})
		}
	}
	if rep.Resolution != nil && q.Effects != nil && !one {
		// The next run's interval and the smallest change told, beside
		// the change's, as in the text.
		t.Head = slices.Insert(t.Head, 4, "next run", "can tell")
		for i := range t.Rows {
			add := []string{"", ""}
			if m, ok := rowMetric[i]; ok {
				e := q.Effects.Of(m)
				add = []string{fmtNextRun(e), fmtDetectable(e.MinDetectable)}
			}
			t.Rows[i] = slices.Insert(t.Rows[i], 4, add...)
		}
	}
	d.Table = t
	d.Notes = append(d.Notes, QueryNotes(rep, q)...)
	for i, f := range []*compare.Figures{q.Baseline, q.Candidate} {
		if f == nil || len(f.Runs) == 0 {
			continue
		}
		var means []string
		for _, r := range f.Runs {
			means = append(means, fmtMS(r.MeanMS))
		}
		src := ""
		switch {
		case q.JudgedOnServer():
			src = " (server time, pg_stat_statements)"
		case q.JudgedApart():
			src = " (" + LevelName(q.Levels.Judged) + ")"
		}
		d.Notes = append(d.Notes, fmt.Sprintf("%s runs' means%s: %s ms", [2]string{"Baseline", "Candidate"}[i], src, strings.Join(means, ", ")))
	}
	if q.Effects != nil {
		if q.Effects.Mean.Interval == compare.IntervalRuns {
			d.Notes = append(d.Notes, fmt.Sprintf("Intervals over the runs at %.0f%% or more (the exact rank test's, widened on the shorter side about the ratio to the longer side's factor; Mann-Whitney p of the mean = %.3g).",
				100*q.Effects.Mean.Level, q.Effects.Mean.P))
		} else {
			d.Notes = append(d.Notes, "Too few runs of this query for an interval over them (one run a side, or runs without it): each interval is the change widened by the calls' own sampling error and by the noise floor.")
		}
	}
	if q.Effects != nil && q.Candidate != nil && q.Baseline != nil {
		d.Notes = append(d.Notes, "Time added per run: "+fmtSignedTotal(q.AddedMS)+" ((candidate mean − baseline mean) × candidate timed calls); by the slowest 5% of calls: "+
			fmtSignedTotal(q.TailAddedMS)+".")
		if m := ruledFigure(q); m != "" {
			d.Notes = append(d.Notes, "Its impact as a regression of the "+string(m)+", which a rule judges: "+fmtSignedTotal(q.ImpactMS)+" per run ("+ruledImpactOf(m)+").")
		}
	}
	if q.MixedLatency {
		d.Notes = append(d.Notes, "MIXED LATENCY SOURCES: the ratios compare different measurements.")
	}
	return d
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps, slices, strings and numbers: cannot fail
	}
	return b
}

func series(name, color, kind string, data any) map[string]any {
	return map[string]any{"name": name, "type": kind, "data": data, "itemStyle": map[string]any{"color": color},
		"lineStyle": map[string]any{"color": color}, "showSymbol": false}
}

func chartBase(yName string) map[string]any {
	return map[string]any{
		"grid":    map[string]any{"left": 60, "right": 20, "top": 48, "bottom": 48},
		"legend":  map[string]any{"top": 0},
		"tooltip": map[string]any{"trigger": "axis"},
		"yAxis":   map[string]any{"type": "value", "name": yName},
	}
}

// effectsTop is how many queries the error-bar chart shows.
const effectsTop = 15

// effectsSection draws each judged query's change of the mean and of
// the p95 with its interval (error bars), regressions first, on a
// logarithmic scale around 1.
func effectsSection(rep *compare.Report) (htmlreport.Section, bool) {
	var qs []*compare.QueryDiff
	for i := range rep.Queries {
		if q := &rep.Queries[i]; q.Effects != nil && len(qs) < effectsTop {
			qs = append(qs, q)
		}
	}
	if len(qs) == 0 {
		return htmlreport.Section{}, false
	}
	// Labels must differ (a category axis merges equal ones): two
	// fingerprints can read alike once shortened.
	var labels []string
	for _, q := range qs {
		labels = append(labels, q.Fingerprint[:min(6, len(q.Fingerprint))]+" "+OneLine(DisplayQuery(q.Query), 26))
	}
	chart := func(m compare.Metric, color string) json.RawMessage {
		var ss []any
		lo, hi := 1.0, 1.0
		var pts []any
		for i, q := range qs {
			e := q.Effects.Of(m)
			l, h := clampRatio(e.Low), clampRatio(e.High)
			lo, hi = math.Min(lo, l), math.Max(hi, h)
			c := color
			if e.Change == compare.ChangeNone {
				c = baselineColor
			}
			// An error bar is a line from the low to the high bound
			// (the page's chart build has no error-bar series, and
			// options travel as JSON, without functions).
			ss = append(ss, map[string]any{"name": "interval", "type": "line", "symbol": "none", "silent": true,
				"data": []any{[]any{l, labels[i]}, []any{h, labels[i]}}, "lineStyle": map[string]any{"color": c, "width": 4}, "itemStyle": map[string]any{"color": c}})
			pts = append(pts, map[string]any{"value": []any{clampRatio(e.Ratio), labels[i]}, "itemStyle": map[string]any{"color": c}})
		}
		ss = append(ss, map[string]any{"name": "change", "type": "scatter", "symbolSize": 9, "data": pts, "itemStyle": map[string]any{"color": color},
			"markLine": map[string]any{"silent": true, "symbol": "none", "lineStyle": map[string]any{"color": "#1d2733", "type": "dashed"},
				"label": map[string]any{"formatter": "1 = unchanged"}, "data": []any{map[string]any{"xAxis": 1}}}})
		return mustJSON(map[string]any{
			"grid":    map[string]any{"left": 220, "right": 30, "top": 30, "bottom": 40},
			"legend":  map[string]any{"top": 0, "data": []string{"change", "interval"}},
			"tooltip": map[string]any{"trigger": "item"},
			"yAxis":   map[string]any{"type": "category", "data": labels, "inverse": true, "axisLabel": map[string]any{"fontSize": 11, "width": 200, "overflow": "truncate"}},
			// Powers of ten, so that the log axis labels read 0.1, 1, 10.
			"xAxis": map[string]any{"type": "log", "name": "candidate / baseline", "nameLocation": "middle", "nameGap": 24,
				"min": math.Pow(10, math.Floor(math.Log10(lo*0.95))), "max": math.Pow(10, math.Ceil(math.Log10(hi*1.05)))},
			"series": ss,
		})
	}
	interval := "intervals over the runs at " + strconv.FormatFloat(100*rep.Noise.Level, 'f', 0, 64) + "%"
	if !rep.Noise.Measured {
		interval = "one run a side: each interval is the change widened by its calls' sampling error and the default noise floor"
	}
	height := 70 + 24*len(qs)
	s := htmlreport.Section{ID: "effects", Title: "Changes with their intervals",
		Text: []string{"Each query's change (candidate / baseline, logarithmic scale; 1 = unchanged) with its interval as an error bar (" + interval + "). " +
			"A grey bar crosses 1: no change told from noise (\"~\"). Regressions are listed first; hover a point for its figures."},
		Charts: []htmlreport.Chart{
			{ID: "effects-mean", Title: "Mean: change and interval", Width: "half", Height: height, Option: chart(compare.MetricMean, candidateColor)},
			{ID: "effects-p95", Title: "p95: change and interval", Width: "half", Height: height, Option: chart(compare.MetricP95, "#2c6fbb")},
		}}
	return s, true
}

func clampRatio(r float64) float64 {
	return math.Min(math.Max(r, 0.01), 1000)
}

// topQueries are the regressions, then the queries costing most among
// those with enough calls to show a distribution.
func topQueries(rep *compare.Report, n int) []*compare.QueryDiff {
	var out []*compare.QueryDiff
	seen := map[string]bool{}
	for _, fp := range rep.RegressionsByAddedTime {
		if len(out) < n {
			out = append(out, rep.Query(fp))
			seen[fp] = true
		}
	}
	for i := range rep.Queries {
		q := &rep.Queries[i]
		if len(out) >= n {
			break
		}
		// A distribution of a handful of calls shows nothing.
		var timed int64
		for _, f := range []*compare.Figures{q.Baseline, q.Candidate} {
			if f != nil {
				timed = max(timed, f.TimedCalls)
			}
		}
		if seen[q.Fingerprint] || timed < rep.Settings.MinCalls {
			continue
		}
		out = append(out, q)
	}
	return out
}

func distributionSection(rep *compare.Report, top int, h Hints) htmlreport.Section {
	text := "Share of each run's timed calls per latency band (logarithmic bands); without histograms" + paren(h.Histograms) + ", p50, p95 and p99 are shown instead."
	if rep.Baseline.RunCount() > 1 || (rep.Candidate != nil && rep.Candidate.RunCount() > 1) {
		text += " With several runs a side, each side's first run is shown."
	}
	s := htmlreport.Section{ID: "distributions", Title: "Latency distribution of the top queries", Text: []string{text}}
	for _, q := range topQueries(rep, top) {
		title := q.Fingerprint + ": " + strings.Join(strings.Fields(DisplayQuery(q.Query)), " ")
		if r := []rune(title); len(r) > 90 {
			title = string(r[:89]) + "…"
		}
		c := htmlreport.Chart{Title: title, Width: "half", Height: 260, Option: distributionOption(rep, q)}
		if q.Status.Regression() {
			c.Note = fmt.Sprintf("%s: mean %s, p95 %s", strings.ToUpper(StatusText(q.Status)[:1])+StatusText(q.Status)[1:],
				fmtEffect(&q.Effects.Mean), fmtEffect(&q.Effects.P95))
		}
		s.Charts = append(s.Charts, c)
	}
	if len(s.Charts) == 0 {
		s.Text = []string{"No timed query."}
	}
	return s
}

func distributionOption(rep *compare.Report, q *compare.QueryDiff) json.RawMessage {
	rows := []*compare.Query{q.BaselineRow(), q.CandidateRow()}
	names := []string{"baseline", "candidate"}
	colors := []string{baselineColor, candidateColor}
	if rep.Candidate == nil {
		rows, names, colors = rows[:1], []string{"calls"}, colors[1:]
	}
	var buckets [][]compare.Bucket
	histOK := true
	for _, r := range rows {
		if r == nil || r.TimedCalls == 0 {
			buckets = append(buckets, nil)
			continue
		}
		if r.Hist == "" {
			histOK = false
			break
		}
		b, err := compare.Buckets(r.Hist)
		if err != nil {
			histOK = false
			break
		}
		buckets = append(buckets, b)
	}
	opt := chartBase("% of calls")
	if !histOK {
		opt["yAxis"] = map[string]any{"type": "value", "name": "ms"}
		opt["xAxis"] = map[string]any{"type": "category", "data": []string{"p50", "p95", "p99"}}
		var ss []any
		for i, r := range rows {
			data := []float64{0, 0, 0}
			if r != nil {
				data = []float64{r.P50MS, r.P95MS, r.P99MS}
			}
			ss = append(ss, series(names[i], colors[i], "bar", data))
		}
		opt["series"] = ss
		return mustJSON(opt)
	}
	// Bands of 10^(1/8): eight per decade, from the smallest to the
	// largest value of either run.
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, b := range buckets {
		if len(b) > 0 {
			lo = math.Min(lo, float64(max(b[0].ValueUS, 1)))
			hi = math.Max(hi, float64(max(b[len(b)-1].ValueUS, 1)))
		}
	}
	if math.IsInf(lo, 1) {
		return mustJSON(opt)
	}
	const perDecade = 8
	first := math.Floor(math.Log10(lo) * perDecade)
	last := math.Floor(math.Log10(hi) * perDecade)
	n := int(last-first) + 1
	labels := make([]string, n)
	for i := range labels {
		labels[i] = fmtMS(math.Pow(10, (first+float64(i))/perDecade) / 1000)
	}
	var ss []any
	for k, b := range buckets {
		data := make([]float64, n)
		var total float64
		for _, x := range b {
			i := int(math.Floor(math.Log10(float64(max(x.ValueUS, 1)))*perDecade) - first)
			data[min(max(i, 0), n-1)] += float64(x.Count)
			total += float64(x.Count)
		}
		for i := range data {
			if total > 0 {
				data[i] = math.Round(1000*data[i]/total) / 10
			}
		}
		ss = append(ss, series(names[k], colors[k], "bar", data))
	}
	opt["xAxis"] = map[string]any{"type": "category", "data": labels, "name": "ms (band from)", "nameLocation": "middle", "nameGap": 28}
	opt["series"] = ss
	return mustJSON(opt)
}

// timelineSection draws every run's statements per second and p95 over
// time, each from its own start, so that two replays (which ran at
// different times) line up. A bucket without a statement is a gap, drawn
// as a gap, and shaded as idle or as a stall.
func timelineSection(rep *compare.Report) (htmlreport.Section, bool) {
	type side struct {
		label  string
		runs   []compare.RunSummary
		shades []string
	}
	sides := []side{{"baseline", runsOf(&rep.Baseline), baselineShades}}
	if rep.Candidate != nil {
		sides = append(sides, side{"candidate", runsOf(rep.Candidate), candidateShades})
	}
	var calls, p95 []any
	var missing []string
	var idle, stall [][2]float64
	for _, sd := range sides {
		for i, r := range sd.runs {
			name := sd.label
			if len(sd.runs) > 1 {
				name = fmt.Sprintf("%s %d", sd.label, i+1)
			}
			tl := r.Timeline
			if tl == nil || len(tl.Calls) == 0 {
				missing = append(missing, r.Name)
				continue
			}
			step := float64(tl.BucketMS) / 1000
			cd, pd := make([]any, 0, len(tl.Calls)), make([]any, 0, len(tl.Calls))
			for j, c := range tl.Calls {
				x := float64(j) * step
				// A bucket without a statement is a gap: null breaks
				// the line instead of drawing a fall to 0.
				if c == 0 {
					cd, pd = append(cd, []any{x, nil}), append(pd, []any{x, nil})
					continue
				}
				cd = append(cd, []any{x, float64(c) / step})
				if j < len(tl.P95MS) && tl.P95MS[j] > 0 {
					pd = append(pd, []any{x, tl.P95MS[j]})
				} else {
					pd = append(pd, []any{x, nil})
				}
			}
			color := sd.shades[i%len(sd.shades)]
			cs, ps := series(name, color, "line", cd), series(name, color, "line", pd)
			cs["connectNulls"], ps["connectNulls"] = false, false
			calls, p95 = append(calls, cs), append(p95, ps)
			for _, g := range r.Gaps {
				if g.Stall {
					stall = append(stall, [2]float64{g.FromS, g.ToS})
				} else {
					idle = append(idle, [2]float64{g.FromS, g.ToS})
				}
			}
		}
	}
	if len(calls) == 0 {
		return htmlreport.Section{}, false
	}
	// Gaps shaded on the throughput chart: grey when idle, red when a
	// statement was still running (a stall).
	var areas []any
	for _, g := range idle {
		areas = append(areas, []any{map[string]any{"xAxis": g[0], "name": "idle", "itemStyle": map[string]any{"color": "rgba(127,140,154,0.15)"}}, map[string]any{"xAxis": g[1]}})
	}
	for _, g := range stall {
		areas = append(areas, []any{map[string]any{"xAxis": g[0], "name": "stall", "itemStyle": map[string]any{"color": "rgba(192,57,43,0.2)"}}, map[string]any{"xAxis": g[1]}})
	}
	if len(areas) > 0 {
		calls = append(calls, map[string]any{"type": "line", "name": "gaps", "data": []any{}, "markArea": map[string]any{"silent": true, "data": areas,
			"label": map[string]any{"show": true, "position": "insideTop", "fontSize": 10}}})
	}
	mk := func(ss []any, y string) json.RawMessage {
		o := chartBase(y)
		o["xAxis"] = map[string]any{"type": "value", "name": "seconds from each run's start", "nameLocation": "middle", "nameGap": 28}
		o["series"] = ss
		return mustJSON(o)
	}
	s := htmlreport.Section{ID: "timeline", Title: "Over time", Text: []string{"Every run from its own start (seconds), so that runs made at different times line up; " +
		"a stretch without a statement is a gap in the line, shaded grey when idle (nothing was running) and red when a stall (a statement that started before was still running)."},
		Charts: []htmlreport.Chart{
			{ID: "timeline-rate", Title: "Statements per second", Width: "half", Option: mk(calls, "statements/s")},
			{ID: "timeline-p95", Title: "p95 latency", Width: "half", Option: mk(p95, "ms")},
		}}
	if len(missing) > 0 {
		s.Text = append(s.Text, "No timeline in "+strings.Join(missing, ", ")+" (a replay records one only from the target's own log).")
	}
	return s, true
}

// runsOf is a side's runs, or the side itself when it is one run.
func runsOf(s *compare.RunSummary) []compare.RunSummary {
	if len(s.Runs) > 0 {
		return s.Runs
	}
	return []compare.RunSummary{*s}
}

func errorsSection(rep *compare.Report) htmlreport.Section {
	s := htmlreport.Section{ID: "errors", Title: "Errors and queries on one side only"}
	if rep.UncodedErrors > 0 {
		s.Text = append(s.Text, fmt.Sprintf("%d errors logged without a SQLSTATE on one side (a log_line_prefix without %%e) were matched by count to the other side's; they are not new.", rep.UncodedErrors))
	}
	et := htmlreport.Table{ID: "new-errors", Title: "Errors that grew, by SQLSTATE (medians over the runs)", Empty: "No SQLSTATE is more frequent in the candidate.",
		Columns: []htmlreport.Column{{Label: "SQLSTATE"}, {Label: "baseline", Numeric: true}, {Label: "candidate", Numeric: true}, {Label: "new"}, {Label: "queries"}}}
	for _, e := range rep.NewErrors {
		newText := ""
		if e.New {
			newText = "new"
		}
		et.Rows = append(et.Rows, htmlreport.Row{Class: "bad", Cells: []htmlreport.Cell{htmlreport.Text(e.SQLState),
			htmlreport.Num(strconv.FormatInt(e.Baseline, 10), float64(e.Baseline)), htmlreport.Num(strconv.FormatInt(e.Candidate, 10), float64(e.Candidate)),
			htmlreport.Text(newText), htmlreport.Text(strings.Join(e.Fingerprints, ", "))}})
	}
	s.Tables = append(s.Tables, et)
	one := func(id, title string, fps []string, cand bool) htmlreport.Table {
		t := htmlreport.Table{ID: id, Title: title, Sortable: true, Empty: "None.",
			Columns: []htmlreport.Column{{Label: "calls", Numeric: true}, {Label: "total", Numeric: true}, {Label: "mean", Numeric: true}, {Label: "query"}}}
		for _, fp := range fps {
			q := rep.Query(fp)
			f := q.Baseline
			if cand {
				f = q.Candidate
			}
			t.Rows = append(t.Rows, htmlreport.Row{Detail: queryDetail(rep, q), Cells: []htmlreport.Cell{htmlreport.Num(strconv.FormatInt(f.Calls, 10), float64(f.Calls)),
				htmlreport.Num(fmtTotal(f.TotalMS), f.TotalMS), htmlreport.Num(fmtMSOf(f.MeanMS, f.TimedCalls), f.MeanMS), queryCell(fp, q.Query, pageQueryWidth)}})
		}
		return t
	}
	s.Tables = append(s.Tables, one("only-candidate", "Only in the candidate", rep.OnlyCandidate, true),
		one("only-baseline", "Only in the baseline", rep.OnlyBaseline, false))
	return s
}

// queriesLegend explains the all-queries table's columns and units.
const queriesLegend = "Units: ms = milliseconds; B = baseline, C = candidate; figures are medians over each side's runs (± the largest distance of a run from the median). " +
	"C/B is the change with its interval in brackets; \"~\" means the interval holds 1, a change not told from noise. " +
	"p95 = the time 95% of calls took at most. Impact = time a regression adds per run (mean change × calls; for a tail regression, p95 change × 5% of calls). " +
	"Click a column to sort, a row for the full query, each run's figures and every interval."

func queriesSection(rep *compare.Report) htmlreport.Section {
	s := htmlreport.Section{ID: "queries", Title: "All queries", Text: []string{queriesLegend}}
	t := htmlreport.Table{ID: "queries-table", Sortable: true, Filter: true}
	if rep.Candidate == nil {
		s.Text = []string{"Units: ms = milliseconds; p50, p95, p99 = the time 50%, 95%, 99% of calls took at most. Click a column to sort, a row for the full query."}
		t.Columns = []htmlreport.Column{{Label: "calls", Numeric: true}, {Label: "calls/s", Numeric: true},
			{Label: "errors", Numeric: true}, {Label: "total ms", Numeric: true}, {Label: "mean ms", Numeric: true},
			{Label: "p50 ms", Numeric: true}, {Label: "p95 ms", Numeric: true}, {Label: "p99 ms", Numeric: true}, {Label: "query", Tooltip: "hover for the fingerprint"}}
		for i := range rep.Queries {
			q := &rep.Queries[i]
			b := q.Baseline
			t.Rows = append(t.Rows, htmlreport.Row{Detail: queryDetail(rep, q), Cells: []htmlreport.Cell{
				htmlreport.Num(strconv.FormatInt(b.Calls, 10), float64(b.Calls)), htmlreport.Num(fmtRate(b.CallsPerS), b.CallsPerS),
				htmlreport.Num(strconv.FormatInt(b.Errors, 10), float64(b.Errors)), htmlreport.Num(fmtMS(b.TotalMS), b.TotalMS),
				msCell(b.MeanMS, b.TimedCalls), msCell(b.P50MS, b.TimedCalls), msCell(b.P95MS, b.TimedCalls), msCell(b.P99MS, b.TimedCalls),
				queryCell(q.Fingerprint, q.Query, pageQueryWidth)}})
		}
		s.Tables = []htmlreport.Table{t}
		return s
	}
	t.Columns = []htmlreport.Column{{Label: "status"}, {Label: "calls C", Numeric: true, Tooltip: "the candidate's calls (median over its runs)"},
		{Label: "mean B ms", Numeric: true}, {Label: "mean C ms", Numeric: true}, {Label: "mean C/B", Numeric: true, Tooltip: "mean C / mean B with its interval; ~ = no change told from noise"},
		{Label: "p95 B ms", Numeric: true}, {Label: "p95 C ms", Numeric: true}, {Label: "p95 C/B", Numeric: true, Tooltip: "p95 C / p95 B with its interval"},
		{Label: "impact", Numeric: true, Tooltip: "time a regression adds per run: (mean C − mean B) × calls C; for a tail regression, (p95 C − p95 B) × 5% of calls C" + ruledImpact(rep) + "; - for a query that is not a regression"},
		{Label: "errors B/C", Numeric: true, Tooltip: "errors in the baseline / in the candidate"},
		{Label: "query", Tooltip: "hover for the fingerprint"}}
	resolved := rep.Resolution != nil
	if resolved {
		// The mean's C/B followed by its next run's interval and the
		// smallest change told (issue 76), the legend's words under the
		// units; the p95's are in a row's detail, for the table to fit
		// a 1280-pixel window (TestBrowserRunsFit; its numeric headers
		// wrap for it).
		t.Columns = slices.Insert(t.Columns, 5, resolvedColumns("mean ")...)
		s.Text = append(s.Text, ResolvedLegend...)
	}
	runs := [2]int{rep.Baseline.RunCount(), rep.Candidate.RunCount()}
	for i := range rep.Queries {
		q := &rep.Queries[i]
		b, c := q.Baseline, q.Candidate
		if b == nil {
			b = &compare.Figures{}
		}
		if c == nil {
			c = &compare.Figures{}
		}
		class := ""
		switch q.Status {
		case compare.StatusRegressed, compare.StatusTailRegressed, compare.StatusMoreWork:
			class = "bad"
		case compare.StatusImproved:
			class = "good"
		case compare.StatusTooFewCalls, compare.StatusOnlyBaseline, compare.StatusOnlyCandidate:
			class = "muted"
		}
		status := StatusText(q.Status)
		if m := ruledFigure(q); m != "" {
			// Neither the mean nor the p95 shown beside it: name it.
			status += " (" + string(m) + ")"
		}
		if q.MixedLatency {
			status += " (mixed latency)"
		}
		mean, p95 := htmlreport.Num("-", 0), htmlreport.Num("-", 0)
		switch {
		case q.Effects != nil:
			mean, p95 = effectCell(q, compare.MetricMean), effectCell(q, compare.MetricP95)
		case q.Status == compare.StatusTooFewCalls && q.Factor > 0:
			// As the text's list: the ratio, with no interval.
			mean = htmlreport.Num(fmtFactor(q.Factor), q.Factor)
		}
		// What a regression adds, as the JSON's impact_ms: nothing
		// for a query that is not one.
		impact := htmlreport.Num("-", 0)
		if q.Status.Regression() || q.Status == compare.StatusSlowerWhileBusier {
			impact = htmlreport.Num(fmtSignedTotal(q.ImpactMS), q.ImpactMS)
		}
		st := htmlreport.Text(status)
		st.Title = strings.Join(QueryNotes(rep, q), "; ")
		cells := []htmlreport.Cell{
			st, htmlreport.Num(strconv.FormatInt(c.Calls, 10), float64(c.Calls)),
			spreadCell(b.MeanMS, b.TimedCalls, spreadOf(b, compare.MetricMean), runs[0]), spreadCell(c.MeanMS, c.TimedCalls, spreadOf(c, compare.MetricMean), runs[1]), mean,
			spreadCell(b.P95MS, b.TimedCalls, spreadOf(b, compare.MetricP95), runs[0]), spreadCell(c.P95MS, c.TimedCalls, spreadOf(c, compare.MetricP95), runs[1]), p95,
			impact,
			htmlreport.Num(strconv.FormatInt(b.Errors, 10)+"/"+strconv.FormatInt(c.Errors, 10), float64(c.Errors-b.Errors)),
			queryCell(q.Fingerprint, q.Query, 60)}
		if resolved {
			cells = slices.Insert(cells, 5, resolvedCells(q, compare.MetricMean)...)
		}
		t.Rows = append(t.Rows, htmlreport.Row{Class: class, Detail: queryDetail(rep, q), Cells: cells})
	}
	s.Tables = []htmlreport.Table{t}
	return s
}

func spreadOf(f *compare.Figures, m compare.Metric) float64 { return figureOf(f, m).spread }

func spreadCell(v float64, timed int64, spread float64, runs int) htmlreport.Cell {
	if timed == 0 {
		return htmlreport.Num("-", -1)
	}
	return htmlreport.Num(fmtMS(v)+fmtSpread(spread, runs), v)
}

func msCell(v float64, timed int64) htmlreport.Cell {
	if timed == 0 {
		return htmlreport.Num("-", -1)
	}
	return htmlreport.Num(fmtMS(v), v)
}
