package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

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
		"and by +%s WAL or +%g blocks a call; full-page images are shown, not judged.", fmtFactor(1+sw.MinEffect), fmtBytes(sw.MinWALBytes), sw.MinDirtied))
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
			{Label: "status"},
			{Label: "WAL added", Numeric: true, Tooltip: "WAL bytes per call change × candidate calls: per run"},
			{Label: "WAL/call", Numeric: true}, {Label: "C/B", Numeric: true, Tooltip: "WAL bytes per call, candidate / baseline, with its interval"},
			{Label: "FPI/call", Numeric: true}, {Label: "C/B", Numeric: true, Tooltip: "full-page images per call: shown, not judged"},
			{Label: "dirtied/call", Numeric: true}, {Label: "C/B", Numeric: true, Tooltip: "shared blocks dirtied per call, with its interval"},
			{Label: "calls C", Numeric: true, Tooltip: "pg_stat_statements calls, median over the runs"},
			{Label: "query"}}}
	for _, q := range qs {
		w := q.Work
		row := htmlreport.Row{Detail: queryDetail(rep, q), Cells: []htmlreport.Cell{
			htmlreport.Text(StatusText(q.Status)),
			htmlreport.Num(fmtSignedBytes(w.AddedWALBytes), w.AddedWALBytes),
			htmlreport.Num(workFigure(w, compare.MetricWALBytes), w.WALBytes.Candidate), workEffectCell(&w.WALBytes),
			htmlreport.Num(workFigure(w, compare.MetricWALFPI), w.WALFPI.Candidate), workEffectCell(&w.WALFPI),
			htmlreport.Num(workFigure(w, compare.MetricDirtied), w.Dirtied.Candidate), workEffectCell(&w.Dirtied),
			htmlreport.Num(strconv.FormatInt(w.CandidateCalls, 10), float64(w.CandidateCalls)),
			queryCell(q.Fingerprint, q.Query, pageQueryWidth),
		}}
		if w.More != "" {
			row.Class = "bad"
		}
		t.Rows = append(t.Rows, row)
	}
	s.Tables = append(s.Tables, t)
	return s, true
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
