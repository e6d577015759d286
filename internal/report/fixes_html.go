package report

import (
	"fmt"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/fixes"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
)

// fixesIntro says how the page's fixes were tried and judged, as
// rehearse's text does before its fixes.
const fixesIntro = "Each fix was tried on the candidate in rounds of its own from the reset state, the whole traffic replayed, " +
	"in turn with rounds of the control run beside them. " +
	"Each regression it is for is compared with the control with the fix (those rounds) and without it: the candidate's figure over the control's, " +
	"with its interval (\"~\" when the interval holds 1, no change told from noise). " +
	"Verified: with the fix, the regression is within the control's noise; partial: still one, but less of one beyond noise " +
	"(faster beyond noise than on the candidate without the fix, or its interval below the one without; another cause remains); no effect: not less of one. Click a fix for its SQL and every figure."

// FixesSection is the page's "Does the fix work": the fixes rehearse
// tried on the candidate with what WriteFixes says of them, from the same
// typed outcomes (rehearse --json's "fixes"): each fix's verdict and the
// SQL applied (or refused, with the server's error), each regression it
// is for against the control with the fix and without it, and the other
// queries that regressed (slower, or writing more) with the fix only.
func FixesSection(tried []fixes.Outcome) htmlreport.Section {
	s := htmlreport.Section{ID: "fixes", Title: "Does the fix work", Text: []string{fixesIntro}}
	verdicts := htmlreport.Table{ID: "fixes-table", Title: "Fixes tried and their verdicts",
		Columns: []htmlreport.Column{{Label: "fix"}, {Label: "verdict"}, {Label: "SQL", Tooltip: "the SQL applied to the candidate before its rounds; a fix not tried was not applied"},
			{Label: "other queries regressed", Numeric: true, Tooltip: "queries slower or writing more against the control with the fix and not without it"}}}
	queries := htmlreport.Table{ID: "fix-queries", Title: "The regressions, with the fix and without it, against the control", Empty: "No fix was tried.",
		Columns: []htmlreport.Column{{Label: "fix"}, {Label: "figure"},
			{Label: "with the fix", Numeric: true, Tooltip: "the candidate with the fix / the control, with its interval"},
			{Label: "without", Numeric: true, Tooltip: "the candidate without the fix / the control, with its interval"},
			{Label: "added per run with", Numeric: true, Tooltip: "time the regression adds per run against the control, with the fix"},
			{Label: "without", Numeric: true, Tooltip: "time the regression adds per run against the control, without the fix"},
			{Label: "query"}}}
	costs := htmlreport.Table{ID: "fix-costs", Title: "Other queries that regressed with the fix only", Empty: "No other query regressed (slower or writing more) with a fix tried.",
		Columns: []htmlreport.Column{{Label: "fix"}, {Label: "how"}, {Label: "factor", Numeric: true, Tooltip: "the candidate with the fix / the control, with its interval"},
			{Label: "added per run", Numeric: true}, {Label: "query"}}}
	for _, f := range tried {
		verdict := htmlreport.Cell{Text: fixVerdictWords(f), Class: "wrap"}
		row := htmlreport.Row{Detail: fixDetail(f)}
		switch f.Status {
		case fixes.Verified:
			row.Class = "good"
		case fixes.NoEffect:
			row.Class = "bad"
		case fixes.NotTried:
			row.Class = "muted"
		}
		sql := htmlreport.Cell{Text: oneLine(f.SQL), Class: "query"}
		others := htmlreport.Num("-", 0)
		if f.Status == fixes.NotTried {
			if f.SQL != "" {
				sql.Text = "not applied: " + sql.Text
			}
		} else {
			others = htmlreport.Num("none", 0)
			if n := len(f.Costs); n > 0 {
				others = htmlreport.Num(fmt.Sprint(n), float64(n))
				others.Class = "bad"
			}
		}
		row.Cells = []htmlreport.Cell{htmlreport.Text(f.Name), verdict, sql, others}
		verdicts.Rows = append(verdicts.Rows, row)
		if f.Status == fixes.NotTried {
			continue
		}
		for _, q := range f.Queries {
			metric, with, before := htmlreport.Text(string(q.Metric)), fixEffectCell(q.With), fixEffectCell(q.Before)
			if q.WorkMetric != "" {
				// A work regression: its work per call, not its time.
				metric = htmlreport.Text(WorkMetricName(q.WorkMetric) + " per call")
				with, before = fixWorkCell(q.WorkWith), fixWorkCell(q.WorkBefore)
			}
			switch q.Status {
			case fixes.Verified:
				with.Class += " good"
			case fixes.NoEffect:
				with.Class += " bad"
			}
			added := htmlreport.Num(fmtSignedTotal(q.AddedMSWith), q.AddedMSWith)
			if q.NoneAdded() {
				// None by the verdict's reckoning, not a measured +0:
				// as addedWith says.
				added = htmlreport.Num("within noise", 0)
			}
			queries.Rows = append(queries.Rows, htmlreport.Row{Cells: []htmlreport.Cell{htmlreport.Text(f.Name), metric,
				with, before,
				added, htmlreport.Num(fmtSignedTotal(q.AddedMSBefore), q.AddedMSBefore),
				queryCell(q.Fingerprint, q.Query, pageQueryWidth)}})
		}
		for _, c := range f.Costs {
			factor := htmlreport.Num(fmtFactor(c.Factor), c.Factor)
			if c.Effect != nil {
				factor = fixEffectCell(c.Effect)
			}
			how := fixCostWords(c)
			if c.Elsewhere {
				how += "; " + elsewhereCostWords(f.Relation)
			}
			costs.Rows = append(costs.Rows, htmlreport.Row{Class: "bad", Cells: []htmlreport.Cell{htmlreport.Text(f.Name), {Text: how, Class: "wrap"},
				factor, htmlreport.Num(fmtSignedTotal(c.AddedMS), c.AddedMS),
				queryCell(c.Fingerprint, c.Query, pageQueryWidth)}})
		}
		for _, line := range fixWithinNoiseLines(f) {
			s.Notes = append(s.Notes, f.Name+": "+line)
		}
		if f.JudgedByChanges() {
			for _, line := range fixChangeLines(f.Changes) {
				s.Notes = append(s.Notes, f.Name+": "+line)
			}
		}
		for _, line := range fixWritesLines(f) {
			s.Notes = append(s.Notes, f.Name+": "+line)
		}
	}
	s.Tables = []htmlreport.Table{verdicts, queries, costs}
	return s
}

// fixEffectCell is a fix's effect against the control with its interval.
func fixEffectCell(e *compare.Effect) htmlreport.Cell {
	if e == nil {
		return htmlreport.Num("-", 0)
	}
	return ciCell(fmtEffect(e), e.Ratio)
}

// fixWorkCell is a fix's work figure against the control with its
// interval.
func fixWorkCell(e *compare.WorkEffect) htmlreport.Cell {
	if e == nil {
		return htmlreport.Num("-", 0)
	}
	return ciCell(fmtWorkEffect(e), e.Ratio)
}

// ciCell is a number cell of ratio shown as text, a figure with its
// interval.
func ciCell(text string, ratio float64) htmlreport.Cell {
	c := htmlreport.Num(text, ratio)
	c.Class = "ci"
	return c
}

// fixDetail is what a fix's row shows when clicked: its SQL whole, and
// its figures in WriteFixes's words.
func fixDetail(f fixes.Outcome) *htmlreport.Detail {
	d := &htmlreport.Detail{Title: "Fix " + f.Name + ": " + fixVerdictWords(f), Code: f.SQL}
	if f.Status != fixes.NotTried {
		d.Notes = fixFigureLines(f)
	}
	return d
}
