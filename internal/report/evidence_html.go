package report

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/htmlreport"
	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// topChart is how many queries the planning-versus-execution chart shows.
const topChart = 12

// EvidencePage is a page of server-side evidence alone.
func EvidencePage(e *observe.Evidence) htmlreport.Page {
	return htmlreport.Page{Title: "pgrehearse observe", Subtitle: "Server-side evidence from " + e.Capabilities.Database + ", " + e.Start,
		Sections: EvidenceSections(e, "", Hints{}), Footer: "pgrehearse observe; PostgreSQL " + e.Capabilities.ServerVersion}
}

// EvidenceSections returns the parts of an HTML report that show
// server-side evidence: the server's throughput and connections over
// time, the wait-event profile over time and per query, and
// pg_stat_statements per query with planning against execution time.
// Their IDs start with "observe". On a page showing the evidence of
// several runs, label ("baseline", "candidate") tells them apart in
// titles and IDs. Without evidence there is one section saying so, with
// the hint of how to observe.
func EvidenceSections(e *observe.Evidence, label string, h Hints) []htmlreport.Section {
	id, title := "observe", "Server-side evidence"
	if label != "" {
		id += "-" + slug(label)
		title += " (" + label + ")"
	}
	if e == nil {
		return []htmlreport.Section{{ID: id, Title: title, Text: []string{"The server was not observed" + paren(h.Observe) + "."}}}
	}
	return []htmlreport.Section{overviewSection(e, id, title), waitsSection(e, id+"-waits", title), statementsSection(e, id+"-statements", title)}
}

func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return '-'
	}, s)
}

func overviewSection(e *observe.Evidence, id, title string) htmlreport.Section {
	s := htmlreport.Section{ID: id, Title: title}
	c := e.Capabilities
	s.Text = []string{fmt.Sprintf("Observed %s for %s from database %s (PostgreSQL %s) on one extra connection: pg_stat_statements %s, wait events from %s every %s.",
		e.Start, seconds(e.DurationS), c.Database, c.ServerVersion, pgssState(e), e.Waits.Source, ms(e.Waits.SampleIntervalMS))}
	if tp := e.Throughput; tp != nil {
		s.Cards = append(s.Cards, htmlreport.Card{Label: "transactions/s", Value: num(tp.MeanTPS),
			Sub: fmt.Sprintf("%d transactions, %d rollbacks", tp.TotalTransactions, tp.TotalRollbacks)})
	}
	if e.Waits.Rounds > 0 {
		s.Cards = append(s.Cards, htmlreport.Card{Label: sessionsWord(e.Waits) + " (mean)", Value: num(float64(e.Waits.Samples) / float64(e.Waits.Rounds)),
			Sub: fmt.Sprintf("%d samples from %s", e.Waits.Samples, e.Waits.Source)})
	}
	if st := e.Statements; st != nil {
		s.Cards = append(s.Cards, htmlreport.Card{Label: "queries (pg_stat_statements)", Value: strconv.Itoa(len(st.Queries) + st.OmittedQueries),
			Sub: fmt.Sprintf("%d calls, %s executing, %s planning", st.Totals.Calls, msText(st.Totals.TotalExecMS), msText(st.Totals.TotalPlanMS))})
	}
	s.Cards = append(s.Cards, htmlreport.Card{Label: "observer busy", Value: fmt.Sprintf("%.2f%%", 100*e.Sampling.BusyShare),
		Sub: fmt.Sprintf("%s over %s, samples every %s", msText(e.Sampling.BusyMS), seconds(e.DurationS), ms(e.Sampling.AchievedIntervalMS))})
	if len(e.Warnings) > 0 {
		s.Cards = append(s.Cards, htmlreport.Card{Label: "warnings", Value: strconv.Itoa(len(e.Warnings)), Status: "bad"})
	}
	for _, w := range e.Warnings {
		s.Notes = append(s.Notes, "Warning: "+w)
	}
	s.Notes = append(s.Notes, e.Notes...)
	if tp := e.Throughput; tp != nil && len(tp.TPS) > 0 {
		s.Charts = append(s.Charts, htmlreport.Chart{ID: id + "-tps", Title: "Transactions per second and connections",
			Note:   "pg_stat_database xact_commit + xact_rollback of every database, less the observer's own; connections are client backends in pg_stat_activity",
			Option: tpsOption(tp)})
	}
	return s
}

func pgssState(e *observe.Evidence) string {
	if e.Statements == nil {
		return e.Capabilities.PGSS.String()
	}
	s := fmt.Sprintf("%d snapshots", e.Statements.Snapshots)
	if !e.Statements.TrackPlanning {
		s += ", planning not tracked"
	}
	return s
}

// runLabel returns the " (candidate)" of a "Server-side evidence
// (candidate)" title, or "" when the title names no run.
func runLabel(title string) string {
	if l := strings.TrimSpace(strings.TrimPrefix(title, "Server-side evidence")); l != "" {
		return " " + l
	}
	return ""
}

func waitsSection(e *observe.Evidence, id, title string) htmlreport.Section {
	w := e.Waits
	s := htmlreport.Section{ID: id, Title: "Wait events" + runLabel(title)}
	switch w.Source {
	case observe.WaitsFromPGWaitSampling:
		cpu := "backends running on CPU are not sampled, so the profile shows waits only"
		if w.CPUSampled {
			cpu = "CPU: waiting on nothing PostgreSQL instruments"
		}
		s.Text = []string{fmt.Sprintf("Source: pg_wait_sampling. The server sampled every backend every %s (%d rounds); the observer read its profile %d times and counted the deltas: "+
			"%d samples of client backends, each what a session waited on (%s). Idle sessions and background processes are left out.",
			ms(w.SampleIntervalMS), w.Rounds, w.Snapshots, w.Samples, cpu)}
	default:
		s.Text = []string{fmt.Sprintf("Source: pg_stat_activity. Active client backends sampled %d times, every %s: each sample counts what every active session waited on (CPU: nothing PostgreSQL instruments).",
			w.Rounds, ms(w.SampleIntervalMS))}
	}
	if w.SourceReason != "" {
		s.Notes = append(s.Notes, "Why this source: "+w.SourceReason+".")
	}
	if w.OverTime != nil && len(w.OverTime.Series) > 0 {
		s.Charts = append(s.Charts, htmlreport.Chart{ID: id + "-time", Title: "Wait-event profile over time (" + string(w.Source) + ")",
			Note: "mean " + sessionsWord(w) + " in each wait event per bucket (samples / rounds)", Option: waitOption(w.OverTime, sessionsWord(w))})
	}
	t := htmlreport.Table{ID: id + "-table", Title: "Wait events per query", Sortable: true, Filter: true,
		Columns: []htmlreport.Column{{Label: "query"}, {Label: "samples", Numeric: true}, {Label: "share", Numeric: true, Tooltip: "of all samples"},
			{Label: "top wait"}, {Label: "top wait share", Numeric: true}},
		Empty: "No active session was seen (" + string(w.Source) + ")."}
	for _, q := range w.ByQuery {
		name := q.Query
		if q.Fingerprint == "" {
			name = "(query not known)"
		} else if name == "" {
			name = q.Fingerprint
		}
		top, topShare := "", 0.0
		if len(q.Events) > 0 {
			top, topShare = waitName(q.Events[0].Type, q.Events[0].Event), q.Events[0].Share
		}
		share := 0.0
		if w.Samples > 0 {
			share = float64(q.Samples) / float64(w.Samples)
		}
		d := &htmlreport.Detail{Title: q.Fingerprint, Code: DisplayQuery(q.Query), Table: waitTable(q.Events)}
		t.Rows = append(t.Rows, htmlreport.Row{Cells: []htmlreport.Cell{
			{Text: shorten(name, 90), Title: name}, htmlreport.Num(strconv.FormatInt(q.Samples, 10), float64(q.Samples)),
			htmlreport.Num(pct(share), share), htmlreport.Text(top), htmlreport.Num(pct(topShare), topShare)}, Detail: d})
	}
	s.Tables = []htmlreport.Table{t}
	return s
}

func waitTable(evs []observe.WaitCount) *htmlreport.SimpleTable {
	st := &htmlreport.SimpleTable{Head: []string{"wait type", "wait event", "samples", "share"}}
	for _, ev := range evs {
		st.Rows = append(st.Rows, []string{ev.Type, ev.Event, strconv.FormatInt(ev.Samples, 10), pct(ev.Share)})
	}
	return st
}

func statementsSection(e *observe.Evidence, id, title string) htmlreport.Section {
	s := htmlreport.Section{ID: id, Title: "pg_stat_statements" + runLabel(title)}
	st := e.Statements
	if st == nil {
		s.Text = []string{"No per-query server-side figures: pg_stat_statements is " + e.Capabilities.PGSS.String() + "."}
		return s
	}
	s.Text = []string{fmt.Sprintf("Deltas of pg_stat_statements between %d snapshots taken every %s, summed per fingerprint (top-level statements; the observer's own left out).",
		st.Snapshots, seconds(st.IntervalS))}
	if len(st.Queries) > 0 {
		note := "total planning and execution time per query, most total time first"
		if !st.TrackPlanning {
			note += "; track_planning is off: planning time is not measured"
		}
		s.Charts = append(s.Charts, htmlreport.Chart{ID: id + "-plan", Title: "Planning and execution time per top query", Note: note,
			Height: 80 + 28*min(len(st.Queries), topChart), Option: planOption(st.Queries)})
	}
	t := htmlreport.Table{ID: id + "-table", Title: "Queries", Sortable: true, Filter: true,
		Columns: []htmlreport.Column{{Label: "query"}, {Label: "calls", Numeric: true}, {Label: "exec ms", Numeric: true, Tooltip: "total execution time"},
			{Label: "mean exec ms", Numeric: true}, {Label: "plan ms", Numeric: true, Tooltip: "total planning time"}, {Label: "mean plan ms", Numeric: true},
			{Label: "rows", Numeric: true}, {Label: "hit %", Numeric: true, Tooltip: "shared blocks hit / (hit + read)"},
			{Label: "temp blks", Numeric: true, Tooltip: "written + read"}, {Label: "WAL bytes", Numeric: true}},
		Empty: "No statement ran."}
	for _, q := range st.Queries {
		hit := 1.0
		if n := q.SharedBlksHit + q.SharedBlksRead; n > 0 {
			hit = float64(q.SharedBlksHit) / float64(n)
		}
		temp := q.TempBlksRead + q.TempBlksWritten
		d := &htmlreport.Detail{Title: q.Fingerprint, Code: DisplayQuery(q.Query), Table: &htmlreport.SimpleTable{Head: []string{"figure", "value"}, Rows: [][]string{
			{"calls", strconv.FormatInt(q.Calls, 10)}, {"plans", strconv.FormatInt(q.Plans, 10)},
			{"total / mean execution", msText(q.TotalExecMS) + " / " + msText(q.MeanExecMS)},
			{"total / mean planning", msText(q.TotalPlanMS) + " / " + msText(q.MeanPlanMS)},
			{"rows", strconv.FormatInt(q.Rows, 10)},
			{"shared blocks hit / read", fmt.Sprintf("%d / %d", q.SharedBlksHit, q.SharedBlksRead)},
			{"temp blocks read / written", fmt.Sprintf("%d / %d", q.TempBlksRead, q.TempBlksWritten)},
			{"WAL bytes", strconv.FormatInt(q.WALBytes, 10)},
			{"query ids", joinIDs(q.QueryIDs)}, {"databases", strings.Join(q.Databases, ", ")},
		}}}
		if q.Restarted {
			d.Notes = append(d.Notes, "Its pg_stat_statements entry was reset or evicted during the observation: these figures may be low.")
		}
		if len(q.Waits) > 0 {
			var ws []string
			for _, w := range q.Waits {
				ws = append(ws, fmt.Sprintf("%s/%s %s", w.Type, w.Event, pct(w.Share)))
			}
			d.Notes = append(d.Notes, fmt.Sprintf("Seen active in %d samples: %s.", q.WaitSamples, strings.Join(ws, ", ")))
		}
		class := ""
		if q.Restarted {
			class = "muted"
		}
		t.Rows = append(t.Rows, htmlreport.Row{Class: class, Detail: d, Cells: []htmlreport.Cell{
			{Text: shorten(q.Query, 90), Title: q.Query},
			htmlreport.Num(strconv.FormatInt(q.Calls, 10), float64(q.Calls)),
			htmlreport.Num(num(q.TotalExecMS), q.TotalExecMS), htmlreport.Num(num(q.MeanExecMS), q.MeanExecMS),
			htmlreport.Num(num(q.TotalPlanMS), q.TotalPlanMS), htmlreport.Num(num(q.MeanPlanMS), q.MeanPlanMS),
			htmlreport.Num(strconv.FormatInt(q.Rows, 10), float64(q.Rows)), htmlreport.Num(pct(hit), hit),
			htmlreport.Num(strconv.FormatInt(temp, 10), float64(temp)), htmlreport.Num(strconv.FormatInt(q.WALBytes, 10), float64(q.WALBytes)),
		}})
	}
	s.Tables = []htmlreport.Table{t}
	if st.OmittedQueries > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d more queries with less total time are left out.", st.OmittedQueries))
	}
	return s
}

// timeAxis returns the ms timestamps of n buckets.
func timeAxis(start string, bucketMS int64, n int) []int64 {
	t0, err := time.Parse(observe.TimeLayout, start)
	if err != nil {
		return nil
	}
	out := make([]int64, n)
	for i := range out {
		// The middle of the bucket.
		out[i] = t0.UnixMilli() + int64(i)*bucketMS + bucketMS/2
	}
	return out
}

func pairs[T int64 | float64](ts []int64, v []T) [][2]float64 {
	out := make([][2]float64, 0, len(v))
	for i := range v {
		if i < len(ts) {
			out = append(out, [2]float64{float64(ts[i]), float64(v[i])})
		}
	}
	return out
}

func marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Only maps, strings and numbers go in: cannot happen.
		panic(err)
	}
	return b
}

func tpsOption(tp *observe.Throughput) json.RawMessage {
	ts := timeAxis(tp.Start, tp.BucketMS, len(tp.TPS))
	return marshal(map[string]any{
		"animation": false,
		"legend":    map[string]any{"top": 0},
		"tooltip":   map[string]any{"trigger": "axis"},
		"grid":      map[string]any{"left": 60, "right": 60, "top": 36, "bottom": 40},
		"xAxis":     map[string]any{"type": "time"},
		"yAxis": []map[string]any{
			{"type": "value", "name": "TPS", "min": 0},
			{"type": "value", "name": "connections", "min": 0, "splitLine": map[string]any{"show": false}},
		},
		"series": []map[string]any{
			{"name": "TPS", "type": "line", "showSymbol": false, "data": pairs(ts, tp.TPS)},
			{"name": "connections", "type": "line", "step": "middle", "showSymbol": false, "yAxisIndex": 1, "data": pairs(ts, tp.Connections)},
			{"name": "active", "type": "line", "step": "middle", "showSymbol": false, "yAxisIndex": 1, "data": pairs(ts, tp.Active)},
		},
	})
}

func waitOption(ws *observe.WaitSeries, axis string) json.RawMessage {
	ts := timeAxis(ws.Start, ws.BucketMS, len(ws.Rounds))
	series := make([]map[string]any, 0, len(ws.Series))
	for _, se := range ws.Series {
		mean := make([]float64, len(se.Samples))
		for i, v := range se.Samples {
			if ws.Rounds[i] > 0 {
				mean[i] = round3(float64(v) / float64(ws.Rounds[i]))
			}
		}
		name := waitName(se.Type, se.Event)
		series = append(series, map[string]any{"name": name, "type": "line", "stack": "waits", "areaStyle": map[string]any{},
			"showSymbol": false, "lineStyle": map[string]any{"width": 0.5}, "data": pairs(ts, mean)})
	}
	return marshal(map[string]any{
		"animation": false,
		"legend":    map[string]any{"top": 0, "type": "scroll"},
		"tooltip":   map[string]any{"trigger": "axis"},
		"grid":      map[string]any{"left": 60, "right": 30, "top": 40, "bottom": 40},
		"xAxis":     map[string]any{"type": "time"},
		"yAxis":     map[string]any{"type": "value", "name": axis, "min": 0},
		"series":    series,
	})
}

func planOption(qs []observe.Query) json.RawMessage {
	n := min(len(qs), topChart)
	labels := make([]string, n)
	plan, exec := make([]float64, n), make([]float64, n)
	// Bars from the top: the category axis draws its first entry at the
	// bottom, so the biggest goes last.
	for i := range n {
		q := qs[n-1-i]
		labels[i] = shorten(q.Query, 50)
		plan[i], exec[i] = q.TotalPlanMS, q.TotalExecMS
	}
	return marshal(map[string]any{
		"animation": false,
		"legend":    map[string]any{"top": 0},
		"tooltip":   map[string]any{"trigger": "axis", "axisPointer": map[string]any{"type": "shadow"}},
		"grid":      map[string]any{"left": 10, "right": 30, "top": 30, "bottom": 30, "containLabel": true},
		"xAxis":     map[string]any{"type": "value", "name": "ms", "min": 0},
		"yAxis":     map[string]any{"type": "category", "data": labels, "axisLabel": map[string]any{"width": 360, "overflow": "truncate"}},
		"series": []map[string]any{
			{"name": "planning", "type": "bar", "stack": "time", "data": plan},
			{"name": "execution", "type": "bar", "stack": "time", "data": exec},
		},
	})
}

func joinIDs(ids []int64) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, ", ")
}

func num(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

func pct(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }

func msText(v float64) string {
	if v >= 10_000 {
		return seconds(v / 1000)
	}
	return num(v) + " ms"
}

func ms(v float64) string { return num(v) + " ms" }

func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(100 * time.Millisecond).String()
}

// round3 rounds to three decimals, as observe rounds its figures.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
