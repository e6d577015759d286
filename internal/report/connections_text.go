package report

import (
	"strconv"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
)

// ConnectionSetupTitle heads the connection setup's row
// (compare.Report.ConnectionSetup): what it measures, that it is not a
// query, and that the verdict does not judge it.
const ConnectionSetupTitle = "Connection setup: the replays' connections to the target, from the connect call to a session ready for its first statement " +
	"(authentication and startup settings included); not a query, labelled by a query's rules, not in the verdict"

// ConnectionSetupRow is the connection setup's row for a table: its
// head and its cells (calls, mean and p95 on each side with the
// change's interval, its status); nil without the row.
func ConnectionSetupRow(rep *compare.Report) (head, row []string) {
	q := rep.ConnectionSetup
	if q == nil || q.Baseline == nil || q.Candidate == nil {
		return nil, nil
	}
	runs := [2]int{rep.Baseline.RunCount(), 1}
	if rep.Candidate != nil {
		runs[1] = rep.Candidate.RunCount()
	}
	var mean, p95 *compare.Effect
	if q.Effects != nil {
		mean, p95 = &q.Effects.Mean, &q.Effects.P95
	}
	b, c := q.Baseline, q.Candidate
	bm, cm := figureOf(b, compare.MetricMean), figureOf(c, compare.MetricMean)
	bp, cp := figureOf(b, compare.MetricP95), figureOf(c, compare.MetricP95)
	head = []string{"connections B", "connections C", "mean B ms", "mean C ms", "mean C/B (interval)", "p95 B ms", "p95 C ms", "p95 C/B (interval)", "status", "what"}
	row = []string{strconv.FormatInt(b.TimedCalls, 10) + fmtSpread(spreadCalls(b), runs[0]), strconv.FormatInt(c.TimedCalls, 10) + fmtSpread(spreadCalls(c), runs[1]),
		fmtMS(bm.v) + fmtSpread(bm.spread, runs[0]), fmtMS(cm.v) + fmtSpread(cm.spread, runs[1]), fmtEffect(mean),
		fmtMS(bp.v) + fmtSpread(bp.spread, runs[0]), fmtMS(cp.v) + fmtSpread(cp.spread, runs[1]), fmtEffect(p95),
		StatusText(q.Status), "connection setup"}
	return head, row
}

// writeConnectionSetup writes the connection setup's row, when the
// comparison has it.
func writeConnectionSetup(ew *errWriter, rep *compare.Report) {
	head, row := ConnectionSetupRow(rep)
	if row == nil {
		return
	}
	ew.printf("\n%s\n", ConnectionSetupTitle)
	writeTable(ew, "  ", [][]string{head, row}, len(head)-2)
}

// connectionSetupSection is the page's connection setup: the text's row
// (ConnectionSetupRow) under the same words; false without the row.
func connectionSetupSection(rep *compare.Report) (htmlreport.Section, bool) {
	head, row := ConnectionSetupRow(rep)
	if row == nil {
		return htmlreport.Section{}, false
	}
	t := htmlreport.Table{ID: "connection-setup-table"}
	for i, h := range head {
		t.Columns = append(t.Columns, htmlreport.Column{Label: h, Numeric: i < len(head)-2})
	}
	cells := make([]htmlreport.Cell, len(row))
	for i, c := range row {
		cells[i] = htmlreport.Text(c)
	}
	t.Rows = []htmlreport.Row{{Cells: cells}}
	return htmlreport.Section{ID: "connection-setup", Title: "Connection setup", Text: []string{ConnectionSetupTitle + "."},
		Tables: []htmlreport.Table{t}}, true
}
