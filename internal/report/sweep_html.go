package report

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/sweep"
)

// palette colours a sweep's configurations; a configuration's TPS line is solid
// and its p95 line dashed, in the same colour.
var palette = []string{"#2f6fdf", "#d9480f", "#2b8a3e", "#862e9c", "#e67700", "#0b7285"}

// SweepPage renders a sweep as a page of its own.
func SweepPage(res *sweep.Result) htmlreport.Page {
	p := htmlreport.Page{
		Title:    "pgrehearse sweep",
		Subtitle: fmt.Sprintf("%s on %s, %gs warm-up + %gs per step", workloadLine(res.Workload), res.Target, res.Plan.WarmupS, res.Plan.DurationS),
		Sections: SweepSections(res),
		Footer:   fmt.Sprintf("started %s; %d client CPUs; configurations ordered %s", res.Started.Format("2006-01-02 15:04:05 MST"), res.ClientCPUs, res.Plan.Order),
	}
	if res.Partial {
		p.Verdict = &htmlreport.Verdict{Status: "fail", Line: "Partial: the sweep stopped early; later steps are missing."}
	}
	return p
}

// SweepSections renders a sweep as sections that another report can
// append to its page: the curves of every configuration on one chart (TPS
// on the left axis, p95 latency on the right), peak and cliff cards, and a
// table of steps per configuration whose rows open the step's wait events
// and hot queries.
func SweepSections(res *sweep.Result) []htmlreport.Section {
	curves := htmlreport.Section{ID: "sweep", Title: "Throughput and latency vs clients"}
	for _, c := range res.Configs {
		curves.Cards = append(curves.Cards, peakCards(c)...)
	}
	curves.Charts = []htmlreport.Chart{{ID: "sweep-curve", Title: "TPS (solid) and p95 latency (dashed) by client count",
		Height: 380, Option: curveOption(res),
		Note: fmt.Sprintf("Medians of the repeated steps. The knee is the client count of the highest TPS over latency, past which more clients cost more in latency than they buy; "+
			"the peak is the highest median TPS, with the client counts not told from it; the cliff is the first client count after the peak below %.2f of the peak's TPS beyond the noise, "+
			"with the interval where TPS crosses it. A ratio within noise is shown as ~.", res.Plan.CliffRatio)}}
	if w := sharedDriverWarning(res); w != "" {
		curves.Text = append(curves.Text, w)
	}
	if res.NoiseUnmeasured {
		curves.Text = append(curves.Text, "No knee, cliff, ratio interval or ~ is judged: "+unmeasuredWhy+".")
	}
	if len(res.Comparison) > 0 {
		curves.Tables = append(curves.Tables, comparisonTable(res))
	}
	if res.Workload.Kind == "log" {
		curves.Text = append(curves.Text, "TPS is transactions per second: COMMIT, ROLLBACK and every statement outside a transaction block. "+
			"Latencies are per statement (query string or extended-protocol execution), as the replay timed them. "+
			"Each step replays the log again and again at speed 0, its sessions multiplied to reach the client count.")
	}
	sections := []htmlreport.Section{curves}
	for _, c := range res.Configs {
		s := htmlreport.Section{ID: "sweep-" + c.Name, Title: "Configuration " + c.Name,
			Text:   []string{settingsOr(c.Settings)},
			Tables: []htmlreport.Table{stepsTable(c)}}
		sections = append(sections, s)
	}
	return sections
}

func peakCards(c sweep.ConfigRun) []htmlreport.Card {
	if c.Peak == nil {
		return []htmlreport.Card{{Label: c.Name, Value: "no steps"}}
	}
	var cards []htmlreport.Card
	if k := c.Knee; k != nil && k.Indistinct != "" {
		cards = append(cards, htmlreport.Card{Label: c.Name + ": knee", Value: "not told apart",
			Sub: fmt.Sprintf("at %d clients on this curve alone; %s's none, and the curves are within noise at every client count", k.Clients, k.Indistinct)})
	} else if k != nil && k.Found {
		cards = append(cards, htmlreport.Card{Label: c.Name + ": knee", Value: fmt.Sprintf("%d clients", k.Clients),
			Sub: fmt.Sprintf("%s within noise; %.0f TPS; to %d clients TPS %.2fx, latency %.2fx", span(k.Lo, k.Hi), k.TPS, k.NextClients, k.TPSGrowth, k.LatencyGrowth)})
	} else if k != nil {
		cards = append(cards, htmlreport.Card{Label: c.Name + ": knee", Value: "none", Sub: fmt.Sprintf("up to %d clients, beyond the noise", k.UpTo), Status: "good"})
	}
	peakSub := fmt.Sprintf("%.0f TPS", c.Peak.TPS)
	if c.Peak.Lo != c.Peak.Hi {
		peakSub += fmt.Sprintf("; %s clients within noise of it", span(c.Peak.Lo, c.Peak.Hi))
	}
	cards = append(cards, htmlreport.Card{Label: c.Name + ": peak", Value: fmt.Sprintf("%d clients", c.Peak.Clients), Sub: peakSub})
	if cl := c.Cliff; cl != nil {
		if cl.Indistinct != "" {
			cards = append(cards, htmlreport.Card{Label: c.Name + ": cliff", Value: "not told apart",
				Sub: fmt.Sprintf("at %d clients on this curve alone; %s's none, and the curves are within noise at every client count", cl.Clients, cl.Indistinct)})
		} else if cl.Found {
			cards = append(cards, htmlreport.Card{Label: c.Name + ": cliff", Value: fmt.Sprintf("%d clients", cl.Clients),
				Sub: fmt.Sprintf("%.0f TPS, %.2f of the peak; below %.2f from %.3g clients (%.3g-%.3g)", cl.TPS, cl.RatioToPeak, cl.Ratio, cl.Estimate, cl.Lo, cl.Hi), Status: "bad"})
		} else {
			cards = append(cards, htmlreport.Card{Label: c.Name + ": cliff", Value: "none",
				Sub: fmt.Sprintf("up to %d clients, beyond the noise", cl.UpTo), Status: "good"})
		}
	}
	return cards
}

func curveOption(res *sweep.Result) json.RawMessage {
	var series []map[string]any
	var legend []string
	for i, c := range res.Configs {
		color := palette[i%len(palette)]
		var tps, p95 [][2]float64
		for _, s := range medianSteps(c.Steps) {
			tps = append(tps, [2]float64{float64(s.Clients), roundHalfUp(s.TPS, 1)})
			p95 = append(p95, [2]float64{float64(s.Clients), roundHalfUp(s.Latency.P95, 3)})
		}
		tpsName, p95Name := c.Name+" TPS", c.Name+" p95 ms"
		legend = append(legend, tpsName, p95Name)
		series = append(series,
			map[string]any{"name": tpsName, "type": "line", "data": tps, "yAxisIndex": 0, "symbolSize": 7,
				"itemStyle": map[string]any{"color": color}, "lineStyle": map[string]any{"color": color, "width": 2}},
			map[string]any{"name": p95Name, "type": "line", "data": p95, "yAxisIndex": 1, "symbol": "triangle",
				"itemStyle": map[string]any{"color": color}, "lineStyle": map[string]any{"color": color, "type": "dashed"}})
	}
	opt := map[string]any{
		"grid":    map[string]any{"left": 70, "right": 70, "top": 48, "bottom": 48},
		"legend":  map[string]any{"top": 0, "data": legend},
		"tooltip": map[string]any{"trigger": "axis"},
		// Client counts double: a base-2 log axis spaces them evenly.
		"xAxis": map[string]any{"type": "log", "logBase": 2, "name": "clients", "nameLocation": "middle", "nameGap": 28},
		"yAxis": []map[string]any{
			{"type": "value", "name": "TPS", "min": 0},
			{"type": "value", "name": "p95 ms", "min": 0, "splitLine": map[string]any{"show": false}},
		},
		"series": series,
	}
	b, err := json.Marshal(opt)
	if err != nil {
		panic(err) // maps, slices, strings and numbers only
	}
	return b
}

func roundHalfUp(v float64, digits int) float64 {
	var f float64 = 1
	for range digits {
		f *= 10
	}
	return float64(int64(v*f+0.5)) / f
}

func comparisonTable(res *sweep.Result) htmlreport.Table {
	base := res.Comparison[0].Baseline
	t := htmlreport.Table{ID: "sweep-compare", Title: "TPS relative to " + base + " (" + sameLegend(res) + ")", Sortable: true,
		Columns: []htmlreport.Column{{Label: "clients", Numeric: true}}}
	for _, c := range res.Configs {
		t.Columns = append(t.Columns, htmlreport.Column{Label: c.Name + " TPS", Numeric: true})
	}
	for _, c := range res.Configs[1:] {
		t.Columns = append(t.Columns, htmlreport.Column{Label: c.Name + " / " + base, Numeric: true})
	}
	for _, cmp := range res.Comparison {
		row := htmlreport.Row{Cells: []htmlreport.Cell{htmlreport.Num(fmt.Sprint(cmp.Clients), float64(cmp.Clients))}}
		var notes []string
		for _, c := range res.Configs {
			v := cmp.TPS[c.Name]
			row.Cells = append(row.Cells, htmlreport.Num(fmt.Sprintf("%.0f", v), v))
			notes = append(notes, fmt.Sprintf("%s: %.0f TPS, p95 %.3f ms", c.Name, v, cmp.P95[c.Name]))
		}
		for _, c := range res.Configs[1:] {
			r := cmp.Ratio[c.Name]
			cell := htmlreport.Num(ratioText(cmp, c.Name), r)
			if d, ok := cmp.Change[c.Name]; ok && !d.Same {
				switch {
				case r < 1:
					cell.Class = "bad"
				case r > 1:
					cell.Class = "good"
				}
			}
			row.Cells = append(row.Cells, cell)
		}
		row.Detail = &htmlreport.Detail{Title: fmt.Sprintf("%d clients", cmp.Clients), Notes: notes}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func stepsTable(c sweep.ConfigRun) htmlreport.Table {
	t := htmlreport.Table{ID: "sweep-steps-" + c.Name, Title: "Steps of " + c.Name, Sortable: true, Empty: "No step ran.",
		Columns: []htmlreport.Column{
			{Label: "clients", Numeric: true}, {Label: "TPS", Numeric: true},
			{Label: "p50 ms", Numeric: true}, {Label: "p95 ms", Numeric: true}, {Label: "p99 ms", Numeric: true},
			{Label: "CPU/tx ms", Numeric: true, Tooltip: "server CPU time per transaction, from /proc"},
			{Label: "top wait event"},
		}}
	isLog := len(c.Steps) > 0 && c.Steps[0].Sessions != nil
	if isLog {
		t.Columns = append(t.Columns[:2], append([]htmlreport.Column{
			{Label: "stmt/s", Numeric: true, Tooltip: "statements per second"},
			{Label: "sessions", Numeric: true, Tooltip: "connections open on average over the window (planned: log lanes x multiply)"},
		}, t.Columns[2:]...)...)
	}
	for _, s := range c.Steps {
		cpu := htmlreport.Num("unknown", -1)
		if s.CPUPerTxMS != nil {
			cpu = htmlreport.Num(fmt.Sprintf("%.4f", *s.CPUPerTxMS), *s.CPUPerTxMS)
		}
		wait := "-"
		if len(s.WaitEvents) > 0 {
			w := s.WaitEvents[0]
			wait = fmt.Sprintf("%s:%s %.0f%%", w.Type, w.Event, 100*w.Share)
		}
		row := htmlreport.Row{Cells: []htmlreport.Cell{
			htmlreport.Num(clientsText(s), float64(s.Clients)),
			htmlreport.Num(fmt.Sprintf("%.1f", s.TPS), s.TPS),
			htmlreport.Num(fmt.Sprintf("%.3f", s.Latency.P50), s.Latency.P50),
			htmlreport.Num(fmt.Sprintf("%.3f", s.Latency.P95), s.Latency.P95),
			htmlreport.Num(fmt.Sprintf("%.3f", s.Latency.P99), s.Latency.P99),
			cpu,
			htmlreport.Text(wait),
		}}
		if isLog && s.Sessions != nil {
			extra := []htmlreport.Cell{
				htmlreport.Num(fmt.Sprintf("%.1f", s.StatementsPerS), s.StatementsPerS),
				htmlreport.Num(fmt.Sprintf("%.1f of %d", s.Sessions.MeanOpen, s.Sessions.Planned), s.Sessions.MeanOpen),
			}
			row.Cells = append(row.Cells[:2], append(extra, row.Cells[2:]...)...)
		}
		if c.Peak != nil && s.Clients == c.Peak.Clients {
			row.Class = "good"
		}
		if c.Cliff != nil && c.Cliff.Found && s.Clients == c.Cliff.Clients {
			row.Class = "bad"
		}
		row.Detail = stepDetail(c.Name, s)
		t.Rows = append(t.Rows, row)
	}
	return t
}

func stepDetail(name string, s sweep.Step) *htmlreport.Detail {
	d := &htmlreport.Detail{Title: fmt.Sprintf("%s, %d clients: wait events", name, s.Clients),
		Table: &htmlreport.SimpleTable{Head: []string{"type", "event", "samples", "share"}}}
	for _, w := range s.WaitEvents {
		d.Table.Rows = append(d.Table.Rows, []string{w.Type, w.Event, fmt.Sprint(w.Samples), fmt.Sprintf("%.1f%%", 100*w.Share)})
	}
	cpu := "unknown"
	if s.ServerCPUS != nil {
		cpu = fmt.Sprintf("%.2f s", *s.ServerCPUS)
	}
	d.Notes = append(d.Notes, fmt.Sprintf("%d transactions in %.0f s, %d failed; server CPU %s; latency mean %.3f ms, max %.3f ms from %d samples (rate %.3g)",
		s.Transactions, s.WindowS, s.Failed, cpu, s.Latency.Mean, s.Latency.Max, s.LatencySamples, s.SamplingRate))
	if sl := s.Sessions; sl != nil {
		d.Notes = append(d.Notes, fmt.Sprintf("log replay: %d of the log's %d lanes x %d = %d sessions planned; open %.1f on average, %d at most; %d passes over the log; %d statements (%d executions) in the window, %s failed",
			sl.LanesUsed, sl.LogConcurrency, sl.Multiply, sl.Planned, sl.MeanOpen, sl.MaxOpen, sl.Passes, s.Statements, sl.Executions, errorsText(sl)))
	}
	var q []string
	for _, h := range s.HotQueries {
		d.Notes = append(d.Notes, fmt.Sprintf("query %d: %.0f calls/s, %.0f plans/s (%.0f%% of calls)", h.QueryID, h.CallsPerS, h.PlansPerS, 100*h.ShareCalls))
		q = append(q, fmt.Sprintf("-- %d\n%s", h.QueryID, h.Query))
	}
	d.Code = strings.Join(q, "\n\n")
	return d
}
