package report

import (
	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
)

// levelsTop is how many queries the page's levels' table shows.
const levelsTop = 20

// levelsSection sets each query's time per call at every level it was
// measured at side by side, the top queries in the report's order
// (regressions first); false when no query was measured at another
// level than its results' durations.
func levelsSection(rep *compare.Report) (htmlreport.Section, bool) {
	fps := LevelsQueries(rep)
	if len(fps) == 0 {
		return htmlreport.Section{}, false
	}
	s := htmlreport.Section{ID: "levels", Title: "Time per call at each level"}
	s.Text = []string{"Server: pg_stat_statements' execution + planning time per call (planning only with pg_stat_statements.track_planning on), " +
		"each run's delta. Log: the durations the server logged, each call with the protocol's overhead around its execution, which compresses " +
		"the ratio of a short query; its p95 is also shown less that overhead, measured per call on the control (its log's mean less " +
		"pg_stat_statements'; out of the candidate's runs its own where that is the larger, shown after C), and a p50, p95 or p99 " +
		"--fail-on rule reads the percentile less the overhead too. Application: the replay's round trip per call; app overhead is its time outside the server's work per call, " +
		"measured on the control (its round trip's mean less pg_stat_statements'): the protocol, the network and the replayer's own client work, " +
		"carried on both sides and not taken out, so it compresses a short query's ratio as the log's overhead does (the application's own client " +
		"may take more or less). Each C/B is the candidate's median over the baseline's with its " +
		"interval over the runs (\"~\" when it holds 1). A query's mean is judged on the level named: the server's time where every run has it " +
		"and the noise is measured; the percentiles on the log's distribution."}
	cols := []htmlreport.Column{{Label: "status"}}
	for _, h := range levelsHead {
		cols = append(cols, htmlreport.Column{Label: h, Numeric: h != levelsHead[0]})
	}
	t := htmlreport.Table{ID: "levels-table", Columns: append(cols, htmlreport.Column{Label: "query"})}
	for _, fp := range fps[:min(len(fps), levelsTop)] {
		q := rep.Query(fp)
		row := htmlreport.Row{Detail: queryDetail(rep, q), Cells: []htmlreport.Cell{htmlreport.Text(StatusText(q.Status))}}
		for _, c := range LevelsRow(q) {
			// A figure with its interval wraps at its spaces, for the
			// table to fit a 1280-pixel window (TestReportIdenticalReplays).
			cell := htmlreport.Text(c)
			cell.Class = htmlreport.ClassFigure
			row.Cells = append(row.Cells, cell)
		}
		row.Cells = append(row.Cells, queryCell(q.Fingerprint, q.Query, pageQueryWidth))
		if q.Status.Regression() {
			row.Class = "bad"
		}
		t.Rows = append(t.Rows, row)
	}
	s.Tables = append(s.Tables, t)
	return s, true
}
