package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/pgrehearse/pgrehearse/internal/headroom"
	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/judge"
)

// WriteHeadroomHTML writes a headroom run as one self-contained page:
// throughput and the worst query's p95 against k for every target, the
// SLO's line, each side's interval and its first break marked, and each
// side's steps.
func WriteHeadroomHTML(w io.Writer, out *headroom.Outcome) error {
	return htmlreport.Write(w, HeadroomPage(out))
}

// HeadroomPage is the page of WriteHeadroomHTML.
func HeadroomPage(out *headroom.Outcome) htmlreport.Page {
	p := htmlreport.Page{
		Title:    "pgrehearse headroom",
		Subtitle: fmt.Sprintf("by %s, SLO %s relative to each target at 1x, lag p99 below %v", out.By, out.SLO.String(), out.SLO.MaxLag),
		Verdict:  &htmlreport.Verdict{Status: "info", Line: HeadroomLine(out)},
		Footer:   fmt.Sprintf("started %s; %s", out.StartedAt.Format("2006-01-02 15:04:05 MST"), searchLine(out)),
	}
	if line := ThinkLine(out); line != "" {
		p.Verdict.Items = append(p.Verdict.Items, line)
	}
	for _, so := range out.Sides {
		p.Verdict.Items = append(p.Verdict.Items, sideNotes(out, so)...)
	}
	for _, to := range out.Tries {
		p.Verdict.Items = append(p.Verdict.Items, TryLine(to))
	}
	if line := TriesNotRunLine(out); line != "" {
		p.Verdict.Items = append(p.Verdict.Items, line)
	}
	if out.Partial {
		p.Verdict.Status = "incomplete"
		p.Verdict.Items = append([]string{"Partial: " + out.Stopped}, p.Verdict.Items...)
	}
	curves := htmlreport.Section{ID: "headroom", Title: "Throughput and latency against the load factor"}
	for _, so := range out.Sides {
		curves.Cards = append(curves.Cards, headroomCard(so))
	}
	curves.Charts = []htmlreport.Chart{
		{ID: "headroom-throughput", Title: "Statements per second against k achieved", Height: 340, Width: "half", Option: throughputOption(out),
			Note: "Each point is a step; the shaded band is the side's interval; the dashed line the USL model fitted to the steps."},
		{ID: "headroom-p95", Title: "Worst judged query's latency over 1x against k achieved", Height: 340, Width: "half", Option: ratioOption(out),
			Note: "The horizontal line is the SLO's limit; a step above it broke the SLO."},
	}
	sections := []htmlreport.Section{curves}
	for _, so := range out.Sides {
		sections = append(sections, htmlreport.Section{ID: "headroom-" + string(so.Side), Title: "Steps of the " + string(so.Side),
			Tables: []htmlreport.Table{headroomHTMLSteps(so, out.SLO)}})
	}
	for _, to := range out.Tries {
		if to.With == nil || len(to.With.Steps) == 0 || to.NotTried != "" {
			continue
		}
		sections = append(sections, htmlreport.Section{ID: "headroom-" + string(to.Side) + "-try-" + to.Name,
			Title: "Steps of the " + string(to.Side) + " with " + to.Name, Tables: []htmlreport.Table{headroomHTMLSteps(to.With, out.SLO)}})
	}
	p.Sections = sections
	return p
}

func headroomCard(so *headroom.SideOutcome) htmlreport.Card {
	c := htmlreport.Card{Label: string(so.Side), Value: holdsPhrase(so)}
	if fb := so.FirstBreak; fb != nil {
		c.Sub = "first to break: " + breakText(fb.Break, fb.K)
	}
	return c
}

// worstRatio is a step's worst latency rule as a ratio over 1x, 0 when
// none was judged.
func worstRatio(v *judge.StepVerdict) float64 {
	var bs []judge.Break
	bs = append(bs, v.Broken...)
	if v.Closest != nil {
		bs = append(bs, *v.Closest)
	}
	worst := 0.0
	for _, b := range bs {
		switch b.Metric {
		case judge.SLOMetricP50, judge.SLOMetricP95, judge.SLOMetricP99, judge.SLOMetricMean:
			if b.Base > 0 {
				worst = max(worst, b.Value/b.Base)
			}
		}
	}
	return worst
}

func throughputOption(out *headroom.Outcome) json.RawMessage {
	var series []map[string]any
	for i, so := range out.Sides {
		color := palette[i%len(palette)]
		var pts [][2]float64
		for _, st := range so.Steps {
			if st.Measurement == nil {
				continue
			}
			k := 1.0
			if st.Verdict != nil {
				k = st.Verdict.AchievedK
			}
			pts = append(pts, [2]float64{roundHalfUp(k, 2), roundHalfUp(st.Measurement.StatementsPerS, 1)})
		}
		slices.SortFunc(pts, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
		s := map[string]any{"name": string(so.Side), "type": "scatter", "data": pts, "symbolSize": 8, "itemStyle": map[string]any{"color": color}}
		if a := so.Answer; a != nil {
			hi := a.Hi
			if a.AtLeast {
				hi = a.Lo
			}
			s["markArea"] = map[string]any{"silent": true, "itemStyle": map[string]any{"color": color, "opacity": 0.12},
				"data": [][]map[string]any{{{"xAxis": roundHalfUp(a.Lo, 2)}, {"xAxis": roundHalfUp(hi, 2)}}}}
		}
		series = append(series, s)
		if u := so.USL; u != nil && len(pts) > 0 {
			var model [][2]float64
			top := pts[len(pts)-1][0] * 1.5
			for k := 1.0; k <= top; k += (top - 1) / 40 {
				model = append(model, [2]float64{roundHalfUp(k, 2), roundHalfUp(u.Predict(k), 1)})
			}
			series = append(series, map[string]any{"name": string(so.Side) + " USL", "type": "line", "data": model, "showSymbol": false,
				"lineStyle": map[string]any{"color": color, "type": "dashed", "width": 1}})
		}
	}
	return kChart(series, "item", "statements/s")
}

func ratioOption(out *headroom.Outcome) json.RawMessage {
	limit := 0.0
	for _, r := range out.SLO.Rules {
		if r.Ratio > 0 && (limit == 0 || r.Ratio < limit) {
			limit = r.Ratio
		}
	}
	var series []map[string]any
	for i, so := range out.Sides {
		color := palette[i%len(palette)]
		pts := [][2]float64{{1, 1}}
		for _, st := range so.Steps {
			if st.Verdict == nil {
				continue
			}
			if r := worstRatio(st.Verdict); r > 0 {
				pts = append(pts, [2]float64{roundHalfUp(st.Verdict.AchievedK, 2), roundHalfUp(r, 3)})
			}
		}
		slices.SortFunc(pts, func(a, b [2]float64) int { return cmp.Compare(a[0], b[0]) })
		s := map[string]any{"name": string(so.Side), "type": "line", "data": pts, "symbolSize": 7,
			"itemStyle": map[string]any{"color": color}, "lineStyle": map[string]any{"color": color, "width": 2}}
		if fb := so.FirstBreak; fb != nil && fb.Base > 0 {
			s["markPoint"] = map[string]any{"symbol": "pin", "data": []map[string]any{{"name": "first break",
				"coord": []float64{roundHalfUp(fb.K, 2), roundHalfUp(fb.Value/fb.Base, 3)}, "value": "break"}}}
		}
		if i == 0 && limit > 0 {
			s["markLine"] = map[string]any{"silent": true, "symbol": "none", "lineStyle": map[string]any{"color": "#c92a2a", "type": "dashed"},
				"data": []map[string]any{{"yAxis": limit, "name": "SLO"}}}
		}
		series = append(series, s)
	}
	return kChart(series, "axis", "latency / 1x")
}

// kChart is the option of a chart of series over the k achieved, its y
// axis named yName, its tooltip on trigger ("item", "axis").
func kChart(series []map[string]any, trigger, yName string) json.RawMessage {
	return mustJSON(map[string]any{
		"grid":    map[string]any{"left": 70, "right": 30, "top": 48, "bottom": 48},
		"legend":  map[string]any{"top": 0},
		"tooltip": map[string]any{"trigger": trigger},
		"xAxis":   map[string]any{"type": "value", "name": "k achieved", "nameLocation": "middle", "nameGap": 28, "min": 0},
		"yAxis":   map[string]any{"type": "value", "name": yName, "min": 0},
		"series":  series,
	})
}

func headroomHTMLSteps(so *headroom.SideOutcome, slo judge.SLO) htmlreport.Table {
	t := htmlreport.Table{ID: "headroom-steps-" + string(so.Side), Sortable: true, Empty: "No step ran.",
		Columns: []htmlreport.Column{{Label: "step", Numeric: true}, {Label: "k asked", Numeric: true}, {Label: "k achieved", Numeric: true},
			{Label: "statements/s", Numeric: true}, {Label: "errors %", Numeric: true}, {Label: "lag p99 ms", Numeric: true},
			{Label: "replayer CPU", Numeric: true, Tooltip: "the replayer's CPU time over the step's wall time, in cores"},
			{Label: "server CPU", Numeric: true, Tooltip: "the target server's CPU time over the step's replay, in cores, when it runs on this machine"},
			{Label: "verdict"}, {Label: "worst rule"}, {Label: "top wait"}}}
	for _, st := range so.Steps {
		row := htmlreport.Row{Cells: []htmlreport.Cell{htmlreport.Num(fmt.Sprint(st.Seq), float64(st.Seq)), htmlreport.Num(fmtKBare(st.K), st.K)}}
		m := st.Measurement
		if m == nil {
			row.Class = "muted"
			row.Cells = append(row.Cells, htmlreport.Text("-"), htmlreport.Text("-"), htmlreport.Text("-"), htmlreport.Text("-"), htmlreport.Text("-"), htmlreport.Text("-"),
				htmlreport.Text(string(st.Status)), htmlreport.Text(firstLine(st.Error)), htmlreport.Text(""))
			t.Rows = append(t.Rows, row)
			continue
		}
		achieved, verdict, worst := 1.0, "baseline", ""
		if v := st.Verdict; v != nil {
			achieved, verdict = v.AchievedK, "held"
			if !v.Held {
				verdict, row.Class = "broke", "bad"
			}
			if v.Bound != judge.BoundTarget {
				verdict += " (" + string(v.Bound) + ")"
			}
			worst = worstShort(v, slo)
		}
		wait := ""
		var notes []string
		for _, w := range m.Waits {
			notes = append(notes, fmt.Sprintf("%s: %.0f%% of the active sessions' samples", w.Event, 100*w.Share))
		}
		if len(m.Waits) > 0 {
			wait = fmt.Sprintf("%s %.0f%%", m.Waits[0].Event, 100*m.Waits[0].Share)
		}
		row.Cells = append(row.Cells, htmlreport.Num(fmt.Sprintf("%.2f", achieved), achieved),
			htmlreport.Num(fmt.Sprintf("%.0f", m.StatementsPerS), m.StatementsPerS),
			htmlreport.Num(fmt.Sprintf("%.2f", m.ErrorRate), m.ErrorRate),
			htmlreport.Num(fmt.Sprintf("%.1f", m.LagP99MS), m.LagP99MS),
			htmlreport.Num(fmt.Sprintf("%.2f", m.ReplayerCPU), m.ReplayerCPU),
			serverCPUCell(m),
			htmlreport.Text(verdict), htmlreport.Cell{Text: worst, Class: "wrap"}, htmlreport.Text(wait))
		qt := &htmlreport.SimpleTable{Head: []string{"query", "calls", "p95 ms", "mean ms"}}
		for _, q := range m.Queries {
			qt.Rows = append(qt.Rows, []string{shorten(q.Query, 80), fmt.Sprint(q.Calls), fmt.Sprintf("%.3f", q.P95MS), fmt.Sprintf("%.3f", q.MeanMS)})
		}
		row.Detail = &htmlreport.Detail{Title: fmt.Sprintf("step %d: %s at %gx", st.Seq, so.Side, st.K), Table: qt, Notes: notes}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func serverCPUCell(m *judge.Measurement) htmlreport.Cell {
	if m.ServerCPUSeconds == nil {
		return htmlreport.Num("-", -1)
	}
	return htmlreport.Num(fmt.Sprintf("%.2f", m.ServerCPU), m.ServerCPU)
}
