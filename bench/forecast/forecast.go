package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

// The forecast: what rehearse --json wrote (docs/report-json.md), read
// with the comparison's own types so that a renamed field fails to
// compile here rather than read as zero.

// reportDoc is the part of rehearse's JSON the forecast reads.
type reportDoc struct {
	Verdict struct {
		Status compare.VerdictStatus `json:"status"`
		Line   string                `json:"line"`
	} `json:"verdict"`
	Baseline  compare.RunSummary  `json:"baseline"`
	Candidate *compare.RunSummary `json:"candidate"`
	Queries   []compare.QueryDiff `json:"queries"`
	// ConnectionSetup is the replays' connection setup as a row of its
	// own; nil in reports of before it, and where a side's rounds
	// connected fewer than compare.MinConnections times.
	ConnectionSetup *compare.QueryDiff `json:"connection_setup"`
	// app is the application rehearsed, whose kinds the queries are.
	app *application
}

func readReport(path string, a *application) (*reportDoc, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d := reportDoc{app: a}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if d.Candidate == nil {
		return nil, fmt.Errorf("%s: no candidate side: not a rehearsal's comparison", path)
	}
	return &d, nil
}

// predicted is the forecast of one query at one level: its mean's ratio
// with the interval, and how the report labelled it (the query's status,
// whichever level it was judged on).
type predicted struct {
	found     bool
	ratio     float64
	low, high float64
	level     float64
	addedMS   float64 // the candidate's median less the control's, ms per call
	status    compare.Status
	// tailOf is the level of the figures a query regressed only in
	// the tail was flagged on (the report's percentiles: the
	// application's round trips without target logs); empty otherwise.
	tailOf compare.Level
	// missing says why a query found has no figure at this level ("n/a"
	// for a report without the application level); empty otherwise.
	missing string
	// nextLow and nextHigh bound the ratio of the application's next
	// run (the effect's next_run); 0 in a report without it.
	nextLow, nextHigh float64
}

// setNext keeps e's interval of the application's next run, if any.
func (p *predicted) setNext(e *compare.Effect) {
	if e.NextRun != nil {
		p.nextLow, p.nextHigh = e.NextRun.Low, e.NextRun.High
	}
}

// appOf returns the application-level forecast of the application's kinds[k]: the
// report's level of the replay's round trips (levels.application), with
// its interval, for the query forecastOf picks; never the server's
// figure: missing "n/a" for a report without it.
func (d *reportDoc) appOf(k int) predicted {
	best := d.queryOf(k)
	if best == nil {
		return predicted{}
	}
	p := predicted{found: true, status: best.Status}
	if best.Levels == nil || best.Levels.Application == nil {
		p.found, p.missing = false, "n/a"
		return p
	}
	e := best.Levels.Application.Mean
	p.ratio, p.low, p.high, p.level, p.addedMS = e.Ratio, e.Low, e.High, e.Level, e.DeltaMS
	p.setNext(&e)
	return p
}

// queryOf returns the report's query of the application's kinds[k] with the most calls on
// the control; nil for none.
func (d *reportDoc) queryOf(k int) *compare.QueryDiff {
	var best *compare.QueryDiff
	for i := range d.Queries {
		q := &d.Queries[i]
		if d.app.kindOf(q.Query) != k {
			continue
		}
		if best == nil || calls(q) > calls(best) {
			best = q
		}
	}
	return best
}

// forecastOf returns the forecast of the application's kinds[k]: the report's query of
// that kind with the most calls on the control, its mean as judged (the
// server's time where the report judged it so).
func (d *reportDoc) forecastOf(k int) predicted {
	best := d.queryOf(k)
	if best == nil {
		return predicted{}
	}
	p := predictedOf(best)
	if best.Status == compare.StatusTailRegressed && best.Levels != nil {
		p.tailOf = best.Levels.Percentiles
	}
	return p
}

// predictedOf is a report row's forecast: its mean's ratio with its
// interval, or its ratio alone where the row has no effects.
func predictedOf(q *compare.QueryDiff) predicted {
	p := predicted{found: true, status: q.Status}
	switch {
	case q.Effects != nil:
		e := q.Effects.Mean
		p.ratio, p.low, p.high, p.level, p.addedMS = e.Ratio, e.Low, e.High, e.Level, e.DeltaMS
		p.setNext(&e)
	case q.Ratio != nil:
		p.ratio = q.Ratio.Mean
	}
	return p
}

// connectionSetup returns the forecast of the connection's setup: the
// report's connection setup row (compare.RowConnectionSetup), its mean
// with its interval, at the application's level where the replayer
// measured it; not found in a report without it.
func (d *reportDoc) connectionSetup() predicted {
	q := d.ConnectionSetup
	if q == nil || q.Kind != compare.RowConnectionSetup {
		return predicted{}
	}
	return predictedOf(q)
}

func calls(q *compare.QueryDiff) int64 {
	if q.Baseline == nil {
		return 0
	}
	return q.Baseline.Calls
}

// regression says whether the report counts the query among the
// regressions (the ones a latency rule can break).
func (p predicted) regression() bool {
	return p.status == compare.StatusRegressed || p.status == compare.StatusTailRegressed
}

// throughput returns the candidate's statements per second over the
// control's (the medians over the rounds) with the range of the round
// pairs.
func (d *reportDoc) throughput() (ratio, low, high float64) {
	per := func(s *compare.RunSummary) []float64 {
		if len(s.Runs) == 0 {
			return []float64{s.StatementsPerS}
		}
		var v []float64
		for _, r := range s.Runs {
			v = append(v, r.StatementsPerS)
		}
		return v
	}
	if d.Baseline.StatementsPerS == 0 {
		return 0, 0, 0
	}
	low, high = pairRange(per(&d.Baseline), per(d.Candidate))
	return d.Candidate.StatementsPerS / d.Baseline.StatementsPerS, low, high
}

// replaySide is what a side's rounds of the replay took: the median span
// (first to last statement, s) and the median of the rounds' summed sync
// waits (s), with the sync mode; waits -1 when the rounds do not say.
func replaySide(s *compare.RunSummary) (span, waits float64, mode string) {
	runs := s.Runs
	if len(runs) == 0 {
		runs = []compare.RunSummary{*s}
	}
	var spans, w []float64
	for _, r := range runs {
		spans = append(spans, r.SpanS)
		// A replay that synchronized nothing (sync off) omits its
		// waits: none.
		switch {
		case r.SyncWait != nil:
			w = append(w, r.SyncWait.TotalMS/1000)
		case r.Sync != nil:
			w = append(w, 0)
		}
		if r.Sync != nil {
			mode = string(r.Sync.Mode)
		}
	}
	waits = -1
	if len(w) == len(runs) {
		waits = median(w)
	}
	return median(spans), waits, mode
}

// replayLine says how long each side's replay of the log took and how
// long its sessions waited for each other (sync), medians over rounds.
func (d *reportDoc) replayLine() string {
	cs, cw, mode := replaySide(&d.Baseline)
	ks, kw, _ := replaySide(d.Candidate)
	line := fmt.Sprintf("replay span (median over rounds): control %.1f s, candidate %.1f s", cs, ks)
	if cw >= 0 && kw >= 0 {
		line += fmt.Sprintf("; sync %s waits summed: control %.1f s, candidate %.1f s", orDash(mode), cw, kw)
	}
	return line
}
