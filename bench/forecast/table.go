package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

// The table: per change, each query's true ratio at two levels (the
// server's time per call; what the application waited) beside the
// forecast with its interval, and the throughput.

// caughtAt is the true ratio from which a change must be caught: the
// rehearsal exits non-zero.
const caughtAt = 1.5

// outcome is what one change's experiment kept (result.json in its
// directory, beside the rehearsal's report.json).
type outcome struct {
	// App is the application's name (application.name); empty in runs
	// kept before the zoo: the shop.
	App      string   `json:"app,omitempty"`
	Change   string   `json:"change"`
	About    string   `json:"about"`
	Clients  int      `json:"clients"`
	Threads  int      `json:"threads,omitempty"` // pgbench -j; 0 in runs before it was kept (2)
	Rate     float64  `json:"rate"`
	Duration string   `json:"duration"`
	Rounds   []round  `json:"rounds"`
	Rehearse []string `json:"rehearse_command"`
	ExitCode int      `json:"rehearse_exit_code"`
	// TruthBefore is how many of Rounds ran before the rehearsal (the
	// rest after it); 0 in runs kept before it was recorded, all of
	// them before.
	TruthBefore int `json:"truth_rounds_before_rehearsal,omitempty"`
	// Capacity is the capacity's search and headroom's (-capacity);
	// nil without.
	Capacity *capacityResult `json:"capacity,omitempty"`
}

// row is one line of a change's table.
type row struct {
	level, kind        string
	truth, tLow, tHigh float64
	trueAdded          float64 // ms per call, the candidate's median less the control's
	fc                 predicted
	inside             bool
	insideNext         bool    // the truth inside the next run's interval (fc.nextHigh > 0)
	truthSD            float64 // of the log of truth's ratio, from its rounds (truthSD); 0 when unknown
	within, withinOK   bool    // withinNoise, and whether it could be told
	agreement          string
	counted, wasCaught bool
	undecided          bool // counted, not caught: the report said undecided and exited non-zero
	busier             bool // counted, not caught: slower while the server was busier, the exit non-zero
}

// tally adds up rows across changes for the summary line.
type tally struct {
	rows, inside map[string]int // by level
	// nextRows and insideNext count, by level, the rows whose forecast
	// has an interval of the application's next run, and those whose
	// truth lies inside it.
	nextRows, insideNext map[string]int
	mustCatch, caught    int
	undecided            int                  // of mustCatch, not caught but undecided with a non-zero exit
	busier               int                  // of mustCatch, not caught but slower while busier with a non-zero exit
	ratios               map[string][]float64 // by level, forecast/true of every row with both
	caughtRatios         []float64            // of the server rows with a true ratio of caughtAt or more
	passes, passOK       int                  // changes with no true regression, and those that exited 0
	// perfect sums, by level, perfectInside over the rows with an
	// interval and a truth's noise; perfectRows counts them.
	perfect     map[string]float64
	perfectRows map[string]int
	// within counts, by level, the rows withinNoise (of perfectRows).
	within map[string]int
	// tpChanges counts the changes with both throughputs; tpWithin those
	// whose forecast is within throughputWithin of the truth, tpInRange
	// those whose forecast lies within the truth's round pairs.
	tpChanges, tpWithin, tpInRange int
}

// throughputWithin is the acceptance's 15% on the throughput: the
// forecast over the truth within 1/1.15-1.15.
const throughputWithin = 1.15

// median returns the median of v (0 for none).
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// pairRange returns the lowest and highest ratio cand[i]/ctl[j] over
// every pair of rounds: what one round a side could have said.
func pairRange(ctl, cand []float64) (low, high float64) {
	low, high = math.Inf(1), math.Inf(-1)
	for _, a := range ctl {
		for _, b := range cand {
			if a <= 0 {
				continue
			}
			low, high = math.Min(low, b/a), math.Max(high, b/a)
		}
	}
	if math.IsInf(low, 1) {
		return 0, 0
	}
	return low, high
}

// trueRatio is the candidate's median over the control's, per round
// figure get, with the range of the round pairs.
func (o *outcome) trueRatio(get func(round) (float64, bool)) (ratio, low, high float64, ok bool) {
	ctl, cand, ok := o.sides(get)
	if !ok || median(ctl) == 0 {
		return 0, 0, 0, false
	}
	low, high = pairRange(ctl, cand)
	return median(cand) / median(ctl), low, high, true
}

// sides are the round figures get of the control's rounds and the
// candidate's; false when a round lacks it or a side has none.
func (o *outcome) sides(get func(round) (float64, bool)) (ctl, cand []float64, ok bool) {
	for _, r := range o.Rounds {
		v, have := get(r)
		if !have {
			return nil, nil, false
		}
		if r.Side == sideControl {
			ctl = append(ctl, v)
		} else {
			cand = append(cand, v)
		}
	}
	return ctl, cand, len(ctl) > 0 && len(cand) > 0
}

// rows returns the table's rows: per kind, the server's and the
// application's.
func (o *outcome) rows(d *reportDoc) []row {
	var rows []row
	for k, kd := range d.app.kinds {
		for _, level := range []string{levelServer, levelApp} {
			fc := d.forecastOf(k)
			if level == levelApp {
				fc = d.appOf(k)
			}
			get := func(r round) (float64, bool) {
				m := r.Server
				if level == levelApp {
					m = r.App
				}
				v, ok := m[kd.name]
				return v, ok
			}
			t, lo, hi, ok := o.trueRatio(get)
			if !ok {
				continue
			}
			ctl, cand, _ := o.sides(get)
			rw := row{level: level, kind: kd.name, truth: t, tLow: lo, tHigh: hi, trueAdded: median(cand) - median(ctl), fc: fc}
			rw.truthSD, _ = truthSD(ctl, cand)
			if fc.found {
				rw.within, rw.withinOK = withinNoise(fc.ratio, fc.low, fc.high, fc.level, t, rw.truthSD)
			}
			rw.judge(o.ExitCode)
			rows = append(rows, rw)
		}
	}
	if d.app.perConnection {
		// What each transaction of an application that connects per
		// transaction also waited: the connection's setup (pgbench's
		// average), beside the report's row of its replays' connection
		// setup (none in reports of before it).
		get := func(r round) (float64, bool) { return r.ConnectMS, r.ConnectMS > 0 }
		if t, lo, hi, ok := o.trueRatio(get); ok {
			ctl, cand, _ := o.sides(get)
			rw := row{level: levelApp, kind: connectionRow, truth: t, tLow: lo, tHigh: hi, trueAdded: median(cand) - median(ctl), fc: d.connectionSetup()}
			rw.truthSD, _ = truthSD(ctl, cand)
			if rw.fc.found {
				rw.within, rw.withinOK = withinNoise(rw.fc.ratio, rw.fc.low, rw.fc.high, rw.fc.level, t, rw.truthSD)
			}
			rw.judge(o.ExitCode)
			rows = append(rows, rw)
		}
	}
	return rows
}

// connectionRow is the application level's row of the connection's
// setup, for an application that connects per transaction.
const connectionRow = "connection setup"

const (
	levelServer = "server"
	levelApp    = "app"
	sideControl = "control"
	sideCand    = "candidate"
)

// judge sets whether the truth lies inside the forecast's interval and
// whether the verdict agrees with it. A query whose true server ratio is
// caughtAt or more must be caught: the rehearsal exits non-zero and the
// query is among its regressions. A smaller one flagged a regression is
// said so. The application's rows say whether the report flagged the
// query, and are not counted: what a transaction waited includes its
// queue behind other slow queries, which the report shows at its
// application level but judges on the server's time.
func (rw *row) judge(exitCode int) {
	rw.inside = rw.fc.found && rw.fc.high > 0 && rw.fc.low <= rw.truth && rw.truth <= rw.fc.high
	rw.insideNext = rw.fc.found && rw.fc.nextHigh > 0 && rw.fc.nextLow <= rw.truth && rw.truth <= rw.fc.nextHigh
	flagged := exitCode != 0 && rw.fc.regression()
	switch {
	case rw.level == levelApp && flagged:
		rw.agreement = "flagged"
	case rw.level == levelApp:
		rw.agreement = "not flagged"
	case rw.truth >= caughtAt:
		rw.counted = true
		rw.wasCaught = flagged
		switch {
		case flagged:
			rw.agreement = "caught"
		case exitCode != 0 && rw.fc.status == compare.StatusUndecided:
			// Not caught, but not "no change" either: the report
			// said its interval holds the rule's threshold and
			// exited non-zero; what a busy machine may answer, not
			// what a quiet one should.
			rw.undecided = true
			rw.agreement = "undecided (exit non-zero)"
		case exitCode != 0 && rw.fc.status == compare.StatusSlowerWhileBusier:
			// Not caught either: the report found it slower, and
			// took it for contention with a dominant regression that
			// failed the run (a short query beside a busier
			// candidate's slower report, on a busy host); judged
			// again once that one is fixed.
			rw.busier = true
			rw.agreement = "slower while busier (exit non-zero)"
		case rw.tLow <= 1:
			// Counted all the same; said, as the truth's own
			// rounds do not tell it from noise.
			rw.agreement = "MISSED (true range holds 1)"
		default:
			rw.agreement = "MISSED"
		}
	case rw.fc.regression() && rw.fc.tailOf == compare.LevelApplication:
		// Its server time did not regress, its round trips' tail did:
		// queued behind slower queries, as the application's own
		// calls are (its app row says how much).
		rw.agreement = fmt.Sprintf("tail flagged at the app level, true < %gx", caughtAt)
	case rw.fc.regression():
		rw.agreement = fmt.Sprintf("flagged, true < %gx", caughtAt)
	default:
		rw.agreement = "ok"
	}
}

func fx(v float64) string {
	switch {
	case v == 0:
		return "-"
	case v >= 10:
		return fmt.Sprintf("%.1fx", v)
	default:
		return fmt.Sprintf("%.2fx", v)
	}
}

// render writes the change's table and adds its rows to t.
func (o *outcome) render(w io.Writer, d *reportDoc, t *tally) {
	fmt.Fprintf(w, "\n## %s: %s\n\n", o.Change, o.About)
	fmt.Fprintf(w, "rehearse exit %d, verdict %s: %s\n\n", o.ExitCode, d.Verdict.Status, d.Verdict.Line)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	rows := o.rows(d)
	interval := "interval"
	for _, rw := range rows {
		if rw.fc.level > 0 {
			interval = fmt.Sprintf("%.0f%% interval", 100*rw.fc.level)
			break
		}
	}
	// The next run's interval only where the report has it (reports
	// of before it keep their table).
	next := slices.ContainsFunc(rows, func(rw row) bool { return rw.fc.nextHigh > 0 })
	nextHead := ""
	if next {
		nextHead = "next run\tinside next\t"
	}
	fmt.Fprintf(tw, "level\tquery / transaction\ttrue (round pairs)\tforecast (%s)\tinside\t%swithin noise\tforecast/true\tadded ms/call true / forecast\tstatus\tagreement\n", interval, nextHead)
	mustCatch := false
	for _, rw := range rows {
		fcText, ratioText, added := cmp.Or(rw.fc.missing, "not in the report"), "-", fmt.Sprintf("%.3f / -", rw.trueAdded)
		if rw.fc.found {
			fcText = fx(rw.fc.ratio)
			if rw.fc.high > 0 {
				fcText += fmt.Sprintf(" (%s-%s)", fx(rw.fc.low), fx(rw.fc.high))
			}
			ratioText = fmt.Sprintf("%.2f", rw.fc.ratio/rw.truth)
			added = fmt.Sprintf("%.3f / %.3f", rw.trueAdded, rw.fc.addedMS)
			t.ratios[rw.level] = append(t.ratios[rw.level], rw.fc.ratio/rw.truth)
			if rw.counted {
				t.caughtRatios = append(t.caughtRatios, rw.fc.ratio/rw.truth)
			}
		}
		within := "-"
		if rw.withinOK {
			within = yesNo(rw.within)
		}
		nextText := ""
		if next {
			nextText = "-\t-\t"
			if rw.fc.nextHigh > 0 {
				nextText = fmt.Sprintf("%s-%s\t%s\t", fx(rw.fc.nextLow), fx(rw.fc.nextHigh), yesNo(rw.insideNext))
				t.nextRows[rw.level]++
				if rw.insideNext {
					t.insideNext[rw.level]++
				}
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s (%s-%s)\t%s\t%s\t%s%s\t%s\t%s\t%s\t%s\n", rw.level, rw.kind, fx(rw.truth), fx(rw.tLow), fx(rw.tHigh),
			fcText, yesNo(rw.inside), nextText, within, ratioText, added, orDash(string(rw.fc.status)), rw.agreement)
		t.rows[rw.level]++
		if p, ok := perfectInside(rw.fc.low, rw.fc.high, rw.fc.level, rw.truthSD); ok && rw.fc.found && rw.truthSD > 0 {
			t.perfect[rw.level] += p
			t.perfectRows[rw.level]++
			if rw.within {
				t.within[rw.level]++
			}
		}
		if rw.inside {
			t.inside[rw.level]++
		}
		if rw.counted {
			t.mustCatch++
			mustCatch = true
			if rw.wasCaught {
				t.caught++
			}
			if rw.undecided {
				t.undecided++
			}
			if rw.busier {
				t.busier++
			}
		}
	}
	tw.Flush()
	if !mustCatch {
		t.passes++
		if o.ExitCode == 0 {
			t.passOK++
		}
	}
	tr, tlo, thi, _ := o.trueRatio(func(r round) (float64, bool) { return r.TPS, r.TPS > 0 })
	fr, flo, fhi := d.throughput()
	fmt.Fprintf(w, "\nthroughput (candidate/control): true %.2f (%.2f-%.2f), forecast %.2f (%.2f-%.2f) statements/s\n",
		tr, tlo, thi, fr, flo, fhi)
	if tr > 0 && fr > 0 {
		t.tpChanges++
		if x := fr / tr; x >= 1/throughputWithin && x <= throughputWithin {
			t.tpWithin++
		}
		if fr >= tlo && fr <= thi {
			t.tpInRange++
		}
	}
	fmt.Fprintf(w, "%s; the application ran %s a round\n", d.replayLine(), o.Duration)
	fmt.Fprintf(w, "%s\n", o.overheadLine(d))
	if o.Capacity != nil {
		for _, l := range o.Capacity.lines() {
			fmt.Fprintln(w, l)
		}
	}
	if line := o.inFlightLine(d); line != "" {
		fmt.Fprintf(w, "%s\n", line)
	}
}

// inFlightLine says how many of the application's clients had a
// statement in flight on average, per side, in the application's rounds
// (its transactions' latency less lag over the round's duration) and in
// the replay's (its round trips over each round's span), medians over
// the rounds. Below the server's capacity it restates the times per
// call (Little's law: the same arrivals, longer calls, more in flight).
// At capacity it is a cause: every client of the application stays busy
// to the end of its round, while a replay of a finite log has fewer
// sessions left as their statements run out, and a query's time per
// call falls with the number it shares the server with
// (bench/results/2026-11-28-forecast-runs.md, "Servers and clients on
// cores of their own").
// Empty when the rounds do not say.
func (o *outcome) inFlightLine(d *reportDoc) string {
	dur, err := time.ParseDuration(o.Duration)
	if err != nil || dur <= 0 {
		return ""
	}
	truth := func(side string) float64 {
		var v []float64
		for _, r := range o.Rounds {
			if r.Side != side {
				continue
			}
			busy := 0.0
			for name, n := range r.Txs {
				busy += float64(n) * r.App[name]
			}
			v = append(v, busy/float64(dur.Milliseconds()))
		}
		return median(v)
	}
	replay := func(sum *compare.RunSummary, figs func(q *compare.QueryDiff) *compare.Figures) float64 {
		var v []float64
		for i, run := range sum.Runs {
			if run.SpanS <= 0 {
				continue
			}
			busy := 0.0
			for j := range d.Queries {
				q := &d.Queries[j]
				if f := figs(q); d.app.kindOf(q.Query) >= 0 && f != nil && i < len(f.Runs) {
					busy += float64(f.Runs[i].Calls) * f.Runs[i].MeanMS
				}
			}
			v = append(v, busy/(run.SpanS*1000))
		}
		return median(v)
	}
	ctl := replay(&d.Baseline, func(q *compare.QueryDiff) *compare.Figures { return q.Baseline })
	cand := replay(d.Candidate, func(q *compare.QueryDiff) *compare.Figures { return q.Candidate })
	if ctl == 0 || cand == 0 {
		return ""
	}
	return fmt.Sprintf("clients with a statement in flight on average (the application's / the replay's, medians over rounds): control %.1f / %.1f, candidate %.1f / %.1f, of %d",
		truth(sideControl), ctl, truth(sideCand), cand, o.Clients)
}

// overheadLine says, per kind, how much of a call's time on the control
// was spent outside the server's work, in the rehearsal's round trips
// (the report's levels.application_overhead_ms) and in the
// application's (its latency less pg_stat_statements' time, the
// medians over the control's rounds): what compresses a short query's
// app ratio when the replay's is the larger.
func (o *outcome) overheadLine(d *reportDoc) string {
	var parts []string
	for k, kd := range d.app.kinds {
		var over []float64
		for _, r := range o.Rounds {
			a, okA := r.App[kd.name]
			s, okS := r.Server[kd.name]
			if r.Side == sideControl && okA && okS {
				over = append(over, a-s)
			}
		}
		app := "-"
		if len(over) > 0 {
			app = fmt.Sprintf("%.3f", median(over))
		}
		replay := "n/a"
		if q := d.queryOf(k); q != nil && q.Levels != nil && q.Levels.AppOverheadMS > 0 {
			replay = fmt.Sprintf("%.3f", q.Levels.AppOverheadMS)
		}
		parts = append(parts, fmt.Sprintf("%s %s / %s", kd.name, replay, app))
	}
	return "time per call outside the server's work on the control, ms (the replay's round trip / the application's): " + strings.Join(parts, ", ")
}

// summary writes the line that sums the tables up.
func (t *tally) summary(w io.Writer) {
	var notCaught []string
	if t.undecided > 0 {
		notCaught = append(notCaught, fmt.Sprintf("%d more undecided", t.undecided))
	}
	if t.busier > 0 {
		notCaught = append(notCaught, fmt.Sprintf("%d more slower while busier", t.busier))
	}
	undecided := ""
	if len(notCaught) > 0 {
		undecided = " (" + strings.Join(notCaught, ", ") + ", exit non-zero)"
	}
	fmt.Fprintf(w, "\nsummary: rows inside the interval %d of %d (server %d of %d, app %d of %d), caught %d of %d%s (server rows, true >= %gx), "+
		"passed %d of %d changes without a true regression, median forecast/true %s (server rows), %s (those true >= %gx), %s (app rows)\n",
		t.inside[levelServer]+t.inside[levelApp], t.rows[levelServer]+t.rows[levelApp], t.inside[levelServer], t.rows[levelServer],
		t.inside[levelApp], t.rows[levelApp], t.caught, t.mustCatch, undecided, caughtAt, t.passOK, t.passes, medianText(t.ratios[levelServer]), medianText(t.caughtRatios), caughtAt, medianText(t.ratios[levelApp]))
	if n := t.nextRows[levelServer] + t.nextRows[levelApp]; n > 0 {
		fmt.Fprintf(w, "rows inside the interval of the application's next run (never judged) %d of %d (server %d of %d, app %d of %d)\n",
			t.insideNext[levelServer]+t.insideNext[levelApp], n, t.insideNext[levelServer], t.nextRows[levelServer], t.insideNext[levelApp], t.nextRows[levelApp])
	}
	if t.tpChanges > 0 {
		// At a saturated candidate the truth's own rounds range wider
		// than 15% (bench/results/2026-11-29-pool.md).
		fmt.Fprintf(w, "throughput forecast within 15%% of the truth in %d of %d changes, inside the truth's round pairs in %d of %d\n",
			t.tpWithin, t.tpChanges, t.tpInRange, t.tpChanges)
	}
	if n := t.perfectRows[levelServer] + t.perfectRows[levelApp]; n > 0 {
		fmt.Fprintf(w, "the truth's own noise: a forecast exactly as good as its intervals claim would hold the measured truth in about %.1f of %d rows "+
			"(server %.1f of %d, app %.1f of %d; each truth's noise from its rounds); within both noises at the interval's level: %d of %d (server %d, app %d)\n",
			t.perfect[levelServer]+t.perfect[levelApp], n, t.perfect[levelServer], t.perfectRows[levelServer], t.perfect[levelApp], t.perfectRows[levelApp],
			t.within[levelServer]+t.within[levelApp], n, t.within[levelServer], t.within[levelApp])
	}
}

// medianText is median(v) in a summary, "-" for none.
func medianText(v []float64) string {
	if len(v) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", median(v))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

// bracketText says where the truth's rounds ran beside the rehearsal.
func (o *outcome) bracketText() string {
	if o.TruthBefore == 0 || o.TruthBefore >= len(o.Rounds) {
		return ", all before the rehearsal"
	}
	return fmt.Sprintf(", %d before the rehearsal and %d after", o.TruthBefore, len(o.Rounds)-o.TruthBefore)
}
