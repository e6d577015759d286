package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
)

// workSection is the server work per call of every query pg_stat_statements
// counted on both sides: the work regressions first, then by WAL per run;
// false when no run had server-side evidence.
func workSection(rep *compare.Report) (htmlreport.Section, bool) {
	sw := rep.ServerWork
	if sw == nil {
		return htmlreport.Section{}, false
	}
	s := htmlreport.Section{ID: "server-work", Title: "Server work per call (pg_stat_statements)"}
	if !sw.Compared {
		s.Text = append(s.Text, "Not compared: some runs have no pg_stat_statements figures.")
		for _, m := range sw.Missing {
			s.Notes = append(s.Notes, m.Run+": "+WorkMissingText(m.PGSS, m.Reason))
		}
		return s, true
	}
	s.Text = append(s.Text, fmt.Sprintf("WAL bytes, WAL full-page images (FPI) and shared blocks dirtied per call, from each run's pg_stat_statements deltas; "+
		"each change is the candidate's median per call over the baseline's, with its interval over the runs (\"~\" when it holds 1). "+
		"A query whose latency did not regress writes more when its WAL bytes or blocks dirtied per call grew beyond the noise floor, by %s at least "+
		"and by +%s WAL or +%g blocks a call, or by %s of the run's WAL or blocks dirtied (what the change adds per run, over its whole interval, "+
		"as a share of all the baseline's runs wrote); full-page images are shown, not judged.", fmtFactor(1+sw.MinEffect), fmtBytes(sw.MinWALBytes), sw.MinDirtied, fmtShare(sw.MinShare)))
	if !rep.Noise.Measured {
		s.Text = append(s.Text, "Run-to-run noise not measured ("+oneRunText(rep)+"): nothing is judged on server work.")
	}
	pos := map[string]int{}
	for i, fp := range workQueries(rep) {
		pos[fp] = i
	}
	var qs []*compare.QueryDiff
	for i := range rep.Queries {
		if rep.Queries[i].Work != nil {
			qs = append(qs, &rep.Queries[i])
		}
	}
	slices.SortStableFunc(qs, func(a, b *compare.QueryDiff) int {
		pa, aw := pos[a.Fingerprint]
		pb, bw := pos[b.Fingerprint]
		switch {
		case aw && bw:
			return cmp.Compare(pa, pb)
		case aw:
			return -1
		case bw:
			return 1
		}
		wa := a.Work.WALBytes.Candidate * float64(a.Work.CandidateCalls)
		wb := b.Work.WALBytes.Candidate * float64(b.Work.CandidateCalls)
		return cmp.Or(cmp.Compare(wb, wa), cmp.Compare(a.Fingerprint, b.Fingerprint))
	})
	t := htmlreport.Table{ID: "server-work-table", Title: "Per call, baseline → candidate", Sortable: true, Empty: "No query on both sides.",
		Columns: []htmlreport.Column{
			{Label: "status", Tooltip: "what the query's server work did (not its latency's status): writes more, under a floor, less, or ~"},
			{Label: "WAL added", Numeric: true, Tooltip: "WAL bytes per call change × candidate calls: per run"},
			{Label: "WAL/call", Numeric: true}, {Label: "C/B", Numeric: true, Tooltip: "WAL bytes per call, candidate / baseline, with its interval"},
			{Label: "FPI/call", Numeric: true}, {Label: "C/B", Numeric: true, Tooltip: "full-page images per call: shown, not judged"},
			{Label: "dirtied/call", Numeric: true}, {Label: "C/B", Numeric: true, Tooltip: "shared blocks dirtied per call, with its interval"},
			{Label: "share of run", Numeric: true, Tooltip: "what the change of WAL per call adds per run, as a share of the baseline's WAL per run, with its interval"},
			{Label: "calls C", Numeric: true, Tooltip: "pg_stat_statements calls, median over the runs"},
			{Label: "query"}}}
	for _, q := range qs {
		w := q.Work
		row := htmlreport.Row{Detail: queryDetail(rep, q), Cells: []htmlreport.Cell{
			figureCell(htmlreport.Text(WorkStatusText(w))),
			htmlreport.Num(fmtSignedBytes(w.AddedWALBytes), w.AddedWALBytes),
			workFigureCell(w, compare.MetricWALBytes), workEffectCell(&w.WALBytes),
			workFigureCell(w, compare.MetricWALFPI), workEffectCell(&w.WALFPI),
			workFigureCell(w, compare.MetricDirtied), workEffectCell(&w.Dirtied),
			figureCell(htmlreport.Num(WorkShareText(compare.MetricWALBytes, &w.WALBytes), w.WALBytes.AddedShare)),
			htmlreport.Num(strconv.FormatInt(w.CandidateCalls, 10), float64(w.CandidateCalls)),
			queryCell(q.Fingerprint, q.Query, pageQueryWidth),
		}}
		if w.More != "" {
			row.Class = "bad"
		}
		t.Rows = append(t.Rows, row)
	}
	s.Tables = append(s.Tables, t)
	if rep.Noise.Measured {
		below := htmlreport.Table{ID: "server-work-below", Title: fmt.Sprintf("Changed beyond noise (by %s at least), but under a floor: not work regressions",
			fmtFactor(compare.MinListedWorkEffect)), Empty: "None.",
			Columns: []htmlreport.Column{{Label: "figure"}, {Label: "per call", Numeric: true}, {Label: "C/B", Numeric: true},
				{Label: "share of run", Numeric: true}, {Label: "why not a work regression"}, {Label: "query"}}}
		for _, fp := range sw.BelowFloors {
			q := rep.Query(fp)
			if q == nil || q.Work == nil {
				continue
			}
			w := q.Work
			e := w.Of(w.Below)
			below.Rows = append(below.Rows, htmlreport.Row{Detail: queryDetail(rep, q), Cells: []htmlreport.Cell{
				htmlreport.Text(WorkMetricName(w.Below)), workFigureCell(w, w.Below), workEffectCell(e),
				figureCell(htmlreport.Num(WorkShareText(w.Below, e), e.AddedShare)), figureCell(htmlreport.Text(WorkBelowText(sw, w))),
				queryCell(q.Fingerprint, q.Query, pageQueryWidth)}})
		}
		s.Tables = append(s.Tables, below)
	}
	if len(sw.HOT) > 0 {
		hot := htmlreport.Table{ID: "server-work-hot", Title: "HOT updates per table (pg_stat_user_tables): share of updates that were HOT, median over the runs (lowest-highest run)",
			Columns: []htmlreport.Column{{Label: "table"}, {Label: "HOT B", Numeric: true}, {Label: "HOT C", Numeric: true},
				{Label: "updates B -> C", Numeric: true, Tooltip: "median over the runs"}, {Label: "what"}}}
		for i := range sw.HOT {
			h := &sw.HOT[i]
			side := func(x compare.HOTShare) htmlreport.Cell {
				return htmlreport.Num(fmtShare(x.Median)+" ("+strings.TrimSuffix(fmtShare(x.Low), "%")+"-"+fmtShare(x.High)+")", x.Median)
			}
			what := "~"
			if h.Dropped || h.Rose {
				what = HOTLine(h)
			} else if !h.Judged {
				what = "not judged (too few updates, or noise not measured)"
			}
			row := htmlreport.Row{Cells: []htmlreport.Cell{htmlreport.Text(h.Schema + "." + h.Name), side(h.Baseline), side(h.Candidate),
				htmlreport.Num(fmt.Sprintf("%d -> %d", h.BaselineUpdates, h.CandidateUpdates), float64(h.CandidateUpdates)), htmlreport.Text(what)}}
			if h.Dropped {
				row.Class = "bad"
			}
			hot.Rows = append(hot.Rows, row)
		}
		s.Tables = append(s.Tables, hot)
	}
	return s, true
}

// workFigureCell is a work figure per call, baseline -> candidate,
// sorted by the candidate's; it wraps at its spaces so that the table
// keeps room for the query's text at 1,400 pixels.
func workFigureCell(w *compare.QueryWork, m compare.Metric) htmlreport.Cell {
	return figureCell(htmlreport.Num(workFigure(w, m), w.Of(m).Candidate))
}

// figureCell lets c wrap at its spaces (htmlreport.ClassFigure).
func figureCell(c htmlreport.Cell) htmlreport.Cell {
	c.Class = strings.TrimSpace(c.Class + " " + htmlreport.ClassFigure)
	return c
}

// workEffectCell is a work figure's change with its interval.
func workEffectCell(e *compare.WorkEffect) htmlreport.Cell {
	c := htmlreport.Num(fmtWorkEffect(e), e.Ratio)
	c.Class = "ci"
	if e.Beyond {
		switch e.Change {
		case compare.ChangeMore:
			c.Class += " bad"
		case compare.ChangeLess:
			c.Class += " good"
		}
	}
	return c
}
