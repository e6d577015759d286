package report

import (
	"encoding/json"
	"fmt"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"math"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/findings"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// Colours of the two runs, the same in every chart.
const (
	baselineColor  = "#7f8c9a"
	candidateColor = "#d35400"
)

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
}

// RunEvidence is the server-side evidence of one run and the label of its
// sections: "baseline", "candidate", or "" on a page about one run.
type RunEvidence struct {
	Label    string
	Evidence *observe.Evidence
}

// ComparisonPage lays a comparison (or a one-run summary) out as a page:
// the verdict and the worst regressions, both runs' throughput and
// latency, distributions of the top queries, the timeline when the results
// carry one, errors and queries seen in one run only, a replay's client
// round trips when it kept them, and the table of all queries; then the
// findings and the runs' server-side evidence when opts has them.
func ComparisonPage(rep *compare.Report, opts ComparisonOptions) htmlreport.Page {
	if opts.Top <= 0 {
		opts.Top = 6
	}
	one := rep.Candidate == nil
	p := htmlreport.Page{Title: "pgrehearse report", Footer: opts.Footer}
	if p.Footer == "" {
		p.Footer = fmt.Sprintf("pgrehearse report; significance level %g, at least %d timed calls, regressions from +%.0f%%",
			rep.Settings.Alpha, rep.Settings.MinCalls, rep.Settings.MinEffect*100)
	}
	if one {
		p.Subtitle = fmt.Sprintf("Summary of %s (%s, %s latency)", rep.Baseline.Name, rep.Baseline.Kind, rep.Baseline.LatencySource)
	} else {
		p.Subtitle = fmt.Sprintf("Baseline %s (%s) vs candidate %s (%s); latency: %s vs %s", rep.Baseline.Name, rep.Baseline.Kind,
			rep.Candidate.Name, rep.Candidate.Kind, rep.Baseline.LatencySource, rep.Candidate.LatencySource)
	}
	v := &htmlreport.Verdict{Status: string(rep.Verdict.Status), Line: rep.Verdict.Line}
	for _, b := range rep.Verdict.Broken {
		v.Items = append(v.Items, fmt.Sprintf("%s broken by %s: %s", b.Rule, b.Fingerprint, b.Detail))
	}
	v.Items = append(v.Items, rep.Warnings...)
	p.Verdict = v

	p.Sections = append(p.Sections, summarySection(rep))
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
	if s, ok := roundTripsSection(rep, opts.Hints); ok {
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

func fmtRate(v float64) string {
	if v == 0 {
		return "-"
	}
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func fmtMS(v float64, timed int64) string {
	if timed == 0 {
		return "-"
	}
	return compare.FormatMS(v) + " ms"
}

func runCards(label string, s *compare.RunSummary) []htmlreport.Card {
	p95 := "-"
	if s.P95MS > 0 {
		p95 = compare.FormatMS(s.P95MS) + " ms"
	}
	cards := []htmlreport.Card{
		{Label: label + ": statements/s", Value: fmtRate(s.StatementsPerS), Sub: fmt.Sprintf("%d statements in %.1f s", s.Statements, s.SpanS)},
		{Label: label + ": mean latency", Value: fmtMS(s.MeanMS, s.TimedCalls), Sub: "p95 " + p95},
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
		Columns: []htmlreport.Column{{Label: "rows/call B → C"}, {Label: "ordering errors"}, {Label: "why"}, {Label: "fingerprint"}, {Label: "query"}}}
	for _, d := range rep.Divergence {
		t.Rows = append(t.Rows, htmlreport.Row{Class: "bad", Cells: []htmlreport.Cell{
			htmlreport.Text(strings.ReplaceAll(rowsPerCall(d), "->", "→")), htmlreport.Text(orderingErrors(d)), htmlreport.Text(d.Reason),
			htmlreport.Text(d.Fingerprint), queryCell(d.Query, 100)}})
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
	regs := htmlreport.Card{Label: "Significant regressions", Value: strconv.Itoa(len(rep.RegressionsByAddedTime)),
		Sub: fmt.Sprintf("%d too few calls to judge", len(rep.TooFewCalls))}
	if len(rep.RegressionsByAddedTime) > 0 {
		regs.Status = "bad"
	}
	s.Cards = append(s.Cards, regs)

	t := htmlreport.Table{ID: "worst", Title: "Worst regressions (by time added)", Empty: "No query is slower beyond noise.",
		Columns: []htmlreport.Column{{Label: "#", Numeric: true}, {Label: "factor (mean)", Numeric: true}, {Label: "p95", Numeric: true},
			{Label: "added", Numeric: true}, {Label: "calls", Numeric: true}, {Label: "fingerprint"}, {Label: "query"}}}
	for i, fp := range rep.RegressionsByAddedTime {
		if i == 5 {
			break
		}
		q := rep.Query(fp)
		t.Rows = append(t.Rows, htmlreport.Row{Class: "bad", Detail: queryDetail(rep, q), Cells: []htmlreport.Cell{
			htmlreport.Num(strconv.Itoa(i+1), float64(i+1)),
			{Text: compare.FormatFactor(q.Factor), Sort: q.Factor, Class: "bad"},
			htmlreport.Num(compare.FormatMS(q.Baseline.P95MS)+" → "+compare.FormatMS(q.Candidate.P95MS)+" ms", q.Ratio.P95),
			htmlreport.Num(fmtAdded(q.AddedMS), q.AddedMS),
			htmlreport.Num(strconv.FormatInt(q.Candidate.Calls, 10), float64(q.Candidate.Calls)),
			htmlreport.Text(fp), queryCell(q.Query, 90),
		}})
	}
	s.Tables = append(s.Tables, t)
	return s
}

func fmtAdded(ms float64) string {
	sign := "+"
	if ms < 0 {
		sign = "-"
	}
	a := math.Abs(ms)
	if a >= 1000 {
		return sign + strconv.FormatFloat(a/1000, 'f', 2, 64) + " s"
	}
	return sign + compare.FormatMS(a) + " ms"
}

func queryCell(q string, width int) htmlreport.Cell {
	one := strings.Join(strings.Fields(q), " ")
	c := htmlreport.Cell{Text: one, Class: "query"}
	if r := []rune(one); len(r) > width {
		c.Text, c.Title = string(r[:width-1])+"…", one
	}
	return c
}

func queryDetail(rep *compare.Report, q *compare.QueryDiff) *htmlreport.Detail {
	d := &htmlreport.Detail{Title: "Query " + q.Fingerprint + " (" + string(q.Status) + ")", Code: q.Query}
	row := func(name string, f func(*compare.Figures) string) []string {
		r := []string{name}
		for _, x := range []*compare.Figures{q.Baseline, q.Candidate} {
			if x == nil {
				r = append(r, "-")
			} else {
				r = append(r, f(x))
			}
		}
		return r
	}
	ms := func(get func(*compare.Figures) float64) func(*compare.Figures) string {
		return func(f *compare.Figures) string { return fmtMS(get(f), f.TimedCalls) }
	}
	t := &htmlreport.SimpleTable{Head: []string{"", "baseline", "candidate", "ratio"}}
	add := func(r []string, ratio float64) {
		if rep.Candidate == nil {
			r = r[:2]
		} else {
			r = append(r, compare.FormatFactor(ratio))
		}
		t.Rows = append(t.Rows, r)
	}
	var rt compare.Ratios
	if q.Ratio != nil {
		rt = *q.Ratio
	}
	add(row("calls", func(f *compare.Figures) string { return strconv.FormatInt(f.Calls, 10) }), 0)
	add(row("errors", func(f *compare.Figures) string {
		return fmt.Sprintf("%d (%.2f%%)", f.Errors, f.ErrorRatePct)
	}), 0)
	add(row("timed calls", func(f *compare.Figures) string { return strconv.FormatInt(f.TimedCalls, 10) }), 0)
	add(row("calls/s", func(f *compare.Figures) string { return fmtRate(f.CallsPerS) }), 0)
	add(row("total", func(f *compare.Figures) string { return fmtAdded(f.TotalMS)[1:] }), 0)
	add(row("mean", ms(func(f *compare.Figures) float64 { return f.MeanMS })), rt.Mean)
	add(row("p50", ms(func(f *compare.Figures) float64 { return f.P50MS })), rt.P50)
	add(row("p95", ms(func(f *compare.Figures) float64 { return f.P95MS })), rt.P95)
	add(row("p99", ms(func(f *compare.Figures) float64 { return f.P99MS })), rt.P99)
	add(row("max", ms(func(f *compare.Figures) float64 { return f.MaxMS })), 0)
	if rep.Candidate == nil {
		t.Head = t.Head[:2]
		t.Head[1] = "figure"
	}
	d.Table = t
	if q.Note != "" {
		d.Notes = append(d.Notes, q.Note)
	}
	if s := q.Significance; s != nil && s.Method == "histogram" {
		d.Notes = append(d.Notes, fmt.Sprintf("Mann-Whitney p = %.3g, Kolmogorov-Smirnov p = %.3g, P(candidate call slower) = %.2f",
			s.PMannWhitney, s.PKS, s.ProbSlower))
	} else if s != nil && s.Method == "summary" {
		d.Notes = append(d.Notes, "No histograms: judged by the conservative quantile rule (candidate p50 beyond baseline p95, or p95 beyond p99).")
	}
	if q.Candidate != nil && q.Baseline != nil {
		d.Notes = append(d.Notes, "Time added: "+fmtAdded(q.AddedMS)+" ((candidate mean - baseline mean) x candidate timed calls).")
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
		"grid":    map[string]any{"left": 60, "right": 20, "top": 36, "bottom": 48},
		"legend":  map[string]any{"top": 0},
		"tooltip": map[string]any{"trigger": "axis"},
		"yAxis":   map[string]any{"type": "value", "name": yName},
	}
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
	s := htmlreport.Section{ID: "distributions", Title: "Latency distribution of the top queries",
		Text: []string{"Share of each run's timed calls per latency band (logarithmic bands); without histograms" + paren(h.Histograms) + ", p50, p95 and p99 are shown instead."}}
	for _, q := range topQueries(rep, top) {
		title := q.Fingerprint + ": " + strings.Join(strings.Fields(q.Query), " ")
		if r := []rune(title); len(r) > 90 {
			title = string(r[:89]) + "…"
		}
		c := htmlreport.Chart{Title: title, Width: "half", Height: 260, Option: distributionOption(rep, q)}
		if q.Status == compare.StatusRegressed {
			c.Note = fmt.Sprintf("Regressed: mean %s, p95 %s", compare.FormatFactor(q.Factor), compare.FormatFactor(q.Ratio.P95))
		}
		s.Charts = append(s.Charts, c)
	}
	if len(s.Charts) == 0 {
		s.Text = []string{"No timed query."}
	}
	return s
}

func distributionOption(rep *compare.Report, q *compare.QueryDiff) json.RawMessage {
	rows := []*compare.Query{q.BaselineRow, q.CandidateRow}
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
		labels[i] = compare.FormatMS(math.Pow(10, (first+float64(i))/perDecade) / 1000)
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

func timelineSection(rep *compare.Report) (htmlreport.Section, bool) {
	runs := []*compare.RunSummary{&rep.Baseline, rep.Candidate}
	names := []string{"baseline", "candidate"}
	colors := []string{baselineColor, candidateColor}
	var calls, p95 []any
	for i, r := range runs {
		if r == nil || r.Timeline == nil || len(r.Timeline.Calls) == 0 {
			continue
		}
		tl := r.Timeline
		step := float64(tl.BucketMS) / 1000
		var cd, pd [][2]float64
		for j, c := range tl.Calls {
			x := float64(j) * step
			cd = append(cd, [2]float64{x, float64(c) / step})
			if j < len(tl.P95MS) && tl.P95MS[j] > 0 {
				pd = append(pd, [2]float64{x, tl.P95MS[j]})
			}
		}
		calls = append(calls, series(names[i], colors[i], "line", cd))
		p95 = append(p95, series(names[i], colors[i], "line", pd))
	}
	if len(calls) == 0 {
		return htmlreport.Section{}, false
	}
	mk := func(ss []any, y string) json.RawMessage {
		o := chartBase(y)
		o["xAxis"] = map[string]any{"type": "value", "name": "seconds from start", "nameLocation": "middle", "nameGap": 28}
		o["series"] = ss
		return mustJSON(o)
	}
	return htmlreport.Section{ID: "timeline", Title: "Over time", Charts: []htmlreport.Chart{
		{Title: "Statements per second", Width: "half", Option: mk(calls, "statements/s")},
		{Title: "p95 latency", Width: "half", Option: mk(p95, "ms")},
	}}, true
}

func errorsSection(rep *compare.Report) htmlreport.Section {
	s := htmlreport.Section{ID: "errors", Title: "Errors and queries in one run only"}
	et := htmlreport.Table{ID: "new-errors", Title: "Errors that grew, by SQLSTATE", Empty: "No SQLSTATE is more frequent in the candidate.",
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
			Columns: []htmlreport.Column{{Label: "calls", Numeric: true}, {Label: "total", Numeric: true}, {Label: "mean", Numeric: true}, {Label: "fingerprint"}, {Label: "query"}}}
		for _, fp := range fps {
			q := rep.Query(fp)
			f := q.Baseline
			if cand {
				f = q.Candidate
			}
			t.Rows = append(t.Rows, htmlreport.Row{Detail: queryDetail(rep, q), Cells: []htmlreport.Cell{htmlreport.Num(strconv.FormatInt(f.Calls, 10), float64(f.Calls)),
				htmlreport.Num(fmtAdded(f.TotalMS)[1:], f.TotalMS), htmlreport.Num(fmtMS(f.MeanMS, f.TimedCalls), f.MeanMS), htmlreport.Text(fp), queryCell(q.Query, 100)}})
		}
		return t
	}
	s.Tables = append(s.Tables, one("only-candidate", "Only in the candidate", rep.OnlyCandidate, true),
		one("only-baseline", "Only in the baseline", rep.OnlyBaseline, false))
	return s
}

func queriesSection(rep *compare.Report) htmlreport.Section {
	s := htmlreport.Section{ID: "queries", Title: "All queries",
		Text: []string{"Click a column to sort, a row for the full query and both runs' figures."}}
	t := htmlreport.Table{ID: "queries-table", Sortable: true, Filter: true}
	if rep.Candidate == nil {
		t.Columns = []htmlreport.Column{{Label: "fingerprint"}, {Label: "calls", Numeric: true}, {Label: "calls/s", Numeric: true},
			{Label: "errors", Numeric: true}, {Label: "total ms", Numeric: true}, {Label: "mean", Numeric: true},
			{Label: "p50", Numeric: true}, {Label: "p95", Numeric: true}, {Label: "p99", Numeric: true}, {Label: "query"}}
		for i := range rep.Queries {
			q := &rep.Queries[i]
			b := q.Baseline
			t.Rows = append(t.Rows, htmlreport.Row{Detail: queryDetail(rep, q), Cells: []htmlreport.Cell{htmlreport.Text(q.Fingerprint),
				htmlreport.Num(strconv.FormatInt(b.Calls, 10), float64(b.Calls)), htmlreport.Num(fmtRate(b.CallsPerS), b.CallsPerS),
				htmlreport.Num(strconv.FormatInt(b.Errors, 10), float64(b.Errors)), htmlreport.Num(compare.FormatMS(b.TotalMS), b.TotalMS),
				msCell(b.MeanMS, b.TimedCalls), msCell(b.P50MS, b.TimedCalls), msCell(b.P95MS, b.TimedCalls), msCell(b.P99MS, b.TimedCalls),
				queryCell(q.Query, 100)}})
		}
		s.Tables = []htmlreport.Table{t}
		return s
	}
	t.Columns = []htmlreport.Column{{Label: "status"}, {Label: "fingerprint"},
		{Label: "calls B", Numeric: true}, {Label: "calls C", Numeric: true},
		{Label: "mean B", Numeric: true}, {Label: "mean C", Numeric: true}, {Label: "factor", Numeric: true, Tooltip: "mean C / mean B"},
		{Label: "p95 B", Numeric: true}, {Label: "p95 C", Numeric: true}, {Label: "p95 ratio", Numeric: true},
		{Label: "added", Numeric: true, Tooltip: "(mean C - mean B) x timed calls C"},
		{Label: "errors B", Numeric: true}, {Label: "errors C", Numeric: true},
		{Label: "p", Numeric: true, Tooltip: "smallest p-value of the distribution tests; 1 when not tested"},
		{Label: "query"}}
	for i := range rep.Queries {
		q := &rep.Queries[i]
		b, c := q.Baseline, q.Candidate
		if b == nil {
			b = &compare.Figures{}
		}
		if c == nil {
			c = &compare.Figures{}
		}
		var rt compare.Ratios
		if q.Ratio != nil {
			rt = *q.Ratio
		}
		pv, pText := 1.0, "-"
		if s := q.Significance; s != nil && s.Method == "histogram" {
			pv = min(s.PMannWhitney, s.PKS)
			pText = strconv.FormatFloat(pv, 'g', 2, 64)
		}
		class := ""
		switch q.Status {
		case compare.StatusRegressed:
			class = "bad"
		case compare.StatusImproved:
			class = "good"
		case compare.StatusTooFewCalls, compare.StatusOnlyBaseline, compare.StatusOnlyCandidate:
			class = "muted"
		}
		status := strings.ReplaceAll(string(q.Status), "_", " ")
		if q.MixedLatency {
			status += " (mixed latency)"
		}
		t.Rows = append(t.Rows, htmlreport.Row{Class: class, Detail: queryDetail(rep, q), Cells: []htmlreport.Cell{
			htmlreport.Text(status), htmlreport.Text(q.Fingerprint),
			htmlreport.Num(strconv.FormatInt(b.Calls, 10), float64(b.Calls)), htmlreport.Num(strconv.FormatInt(c.Calls, 10), float64(c.Calls)),
			msCell(b.MeanMS, b.TimedCalls), msCell(c.MeanMS, c.TimedCalls), htmlreport.Num(compare.FormatFactor(rt.Mean), rt.Mean),
			msCell(b.P95MS, b.TimedCalls), msCell(c.P95MS, c.TimedCalls), htmlreport.Num(compare.FormatFactor(rt.P95), rt.P95),
			htmlreport.Num(fmtAdded(q.AddedMS), q.AddedMS),
			htmlreport.Num(strconv.FormatInt(b.Errors, 10), float64(b.Errors)), htmlreport.Num(strconv.FormatInt(c.Errors, 10), float64(c.Errors)),
			htmlreport.Num(pText, pv), queryCell(q.Query, 80)}})
	}
	s.Tables = []htmlreport.Table{t}
	return s
}

func msCell(v float64, timed int64) htmlreport.Cell {
	if timed == 0 {
		return htmlreport.Num("-", -1)
	}
	return htmlreport.Num(compare.FormatMS(v), v)
}
