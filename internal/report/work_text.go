package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
	"github.com/pgrehearse/pgrehearse/internal/observe"
)

// workMetricNames are the work metrics' words, per call.
var workMetricNames = map[compare.Metric]string{
	compare.MetricWALBytes: "WAL bytes",
	compare.MetricWALFPI:   "WAL full-page images",
	compare.MetricDirtied:  "shared blocks dirtied",
}

// WorkMetricName words a work metric: "WAL bytes".
func WorkMetricName(m compare.Metric) string {
	if n, ok := workMetricNames[m]; ok {
		return n
	}
	return string(m)
}

// fmtWorkEffect is a work figure's change with its interval, as
// fmtEffect: "2.90x (2.70-3.10)", "~ 1.02x (0.95-1.10)"; "from none" for
// a change from nothing, which no ratio measures.
func fmtWorkEffect(e *compare.WorkEffect) string {
	if e == nil {
		return "-"
	}
	if e.FromNone {
		return "from none"
	}
	s := fmtPoint(e.Ratio) + " (" + fmtBound(e.Low) + "-" + fmtBound(e.High) + ")"
	if e.Change == compare.ChangeNone {
		return "~ " + s
	}
	return s
}

// fmtPerCall formats a work figure per call: bytes as "812 B" or
// "8.1 kB", counts with two decimals.
func fmtPerCall(m compare.Metric, v float64) string {
	if m == compare.MetricWALBytes {
		return fmtBytes(v)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func fmtBytes(v float64) string {
	a := v
	if a < 0 {
		a = -a
	}
	switch {
	case a >= 1<<30:
		return strconv.FormatFloat(v/(1<<30), 'f', 1, 64) + " GB"
	case a >= 1<<20:
		return strconv.FormatFloat(v/(1<<20), 'f', 1, 64) + " MB"
	case a >= 1<<10:
		return strconv.FormatFloat(v/(1<<10), 'f', 1, 64) + " kB"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " B"
}

func fmtSignedBytes(v float64) string {
	if v >= 0 {
		return "+" + fmtBytes(v)
	}
	return fmtBytes(v)
}

// workFigure is "B -> C" per call of m: "812 B -> 1.3 kB", "none -> 105
// B" from nothing.
func workFigure(w *compare.QueryWork, m compare.Metric) string {
	e := w.Of(m)
	if e.FromNone {
		return "none -> " + fmtPerCall(m, e.Candidate)
	}
	return fmtPerCall(m, e.Baseline) + " -> " + fmtPerCall(m, e.Candidate)
}

// workChangeText words a work figure's change in a sentence: "WAL bytes
// per call 2.90x (2.70-3.10)"; "WAL bytes none -> 105 B a call" from
// nothing.
func workChangeText(m compare.Metric, e *compare.WorkEffect) string {
	if e != nil && e.FromNone {
		return WorkMetricName(m) + " none -> " + fmtPerCall(m, e.Candidate) + " a call"
	}
	return WorkMetricName(m) + " per call " + fmtWorkEffect(e)
}

// workQueries are the queries the server-work section lists: the work
// regressions and the latency regressions that also write more, together
// by what they add per run (compare.ByWorkAdded), so that the query a
// change is about is never ranked under a few bytes from near zero.
func workQueries(rep *compare.Report) []string {
	var qs []*compare.QueryDiff
	for _, fp := range slices.Concat(rep.MoreWork, rep.RegressionsByAddedTime) {
		if q := rep.Query(fp); q != nil && q.Work != nil && q.Work.More != "" && !slices.Contains(qs, q) {
			qs = append(qs, q)
		}
	}
	slices.SortStableFunc(qs, compare.ByWorkAdded)
	fps := make([]string, len(qs))
	for i, q := range qs {
		fps[i] = q.Fingerprint
	}
	return fps
}

// WorkStatusText is a query's status in a table of server work: what its
// work did, never its latency's status ("regressed" beside "0 B -> 0 B"
// in the page's table, issue 57).
func WorkStatusText(w *compare.QueryWork) string {
	switch {
	case w == nil || !w.Judged:
		return "not judged"
	case w.More != "":
		return "writes more: " + WorkMetricName(w.More)
	case w.Below != "" && w.BelowWhy == compare.ReasonLessWork:
		return "writes less: " + WorkMetricName(w.Below)
	case w.Below != "":
		return "under a floor: " + WorkMetricName(w.Below)
	}
	return "~"
}

// workFloors words the floors of a work regression: "1.50x and +1.0 kB
// WAL or +0.5 blocks dirtied a call, or 1% of the run's WAL or blocks
// dirtied".
func workFloors(sw *compare.ServerWork) string {
	s := fmt.Sprintf("%s and +%s WAL or +%g blocks dirtied a call", fmtFactor(1+sw.MinEffect), fmtBytes(sw.MinWALBytes), sw.MinDirtied)
	if sw.MinShare > 0 {
		s += ", or " + fmtShare(sw.MinShare) + " of the run's WAL or blocks dirtied"
	}
	return s
}

// fmtShare is a share as a percentage: "2.0%", "0.04%".
func fmtShare(v float64) string {
	p := 100 * v
	a := p
	if a < 0 {
		a = -a
	}
	switch {
	case a == 0:
		return "0%"
	case a < 0.1:
		return strconv.FormatFloat(p, 'f', 2, 64) + "%"
	case a < 10:
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(p, 'f', 0, 64) + "%"
}

// WorkShareText is what a work change adds to the run, as a share of
// the baseline's WAL (or blocks dirtied) per run, with its interval:
// "+2.0% (1.9-2.1%) of the run's WAL"; "-" without totals.
func WorkShareText(m compare.Metric, e *compare.WorkEffect) string {
	if e == nil || (e.AddedShare == 0 && e.ShareLow == 0 && e.ShareHigh == 0) {
		return "-"
	}
	of := "WAL"
	if m == compare.MetricDirtied {
		of = "blocks dirtied"
	}
	sign := ""
	if e.AddedShare > 0 {
		sign = "+"
	}
	return sign + fmtShare(e.AddedShare) + " (" + strings.TrimSuffix(fmtShare(e.ShareLow), "%") + " to " + fmtShare(e.ShareHigh) + ") of the run's " + of
}

// WorkBelowText says why a work change beyond noise is not a work
// regression.
func WorkBelowText(sw *compare.ServerWork, w *compare.QueryWork) string {
	e := w.Of(w.Below)
	switch w.BelowWhy {
	case compare.ReasonLessWork:
		return "less " + WorkMetricName(w.Below) + " per call"
	case compare.ReasonUnderWorkEffectFloor:
		return fmt.Sprintf("under the %s floor (noise %s, least %s)", fmtFactor(e.Floor), fmtFactor(e.NoiseFloor), fmtFactor(1+sw.MinEffect))
	case compare.ReasonUnderWorkSizeFloors:
		per := "+" + fmtBytes(sw.MinWALBytes)
		if w.Below == compare.MetricDirtied {
			per = fmt.Sprintf("+%g blocks", sw.MinDirtied)
		}
		return fmt.Sprintf("under %s a call and under %s of the run", per, fmtShare(sw.MinShare))
	}
	return string(w.BelowWhy)
}

// writeServerWork writes the server-work section: whether it was
// compared, the queries that write more per call with every figure's
// interval, the changes beyond noise under a floor, and the tables whose
// share of HOT updates dropped.
func writeServerWork(ew *errWriter, rep *compare.Report, top int) {
	sw := rep.ServerWork
	if sw == nil || top <= 0 {
		return
	}
	if !sw.Compared {
		ew.printf("\nServer work per call (pg_stat_statements): not compared, %d %s without pg_stat_statements figures (warnings above)\n",
			len(sw.Missing), plural(len(sw.Missing), "run", "runs"))
		return
	}
	if !rep.Noise.Measured {
		ew.printf("\nServer work per call (pg_stat_statements): not judged with %s; figures in the JSON and HTML reports\n", oneRunText(rep))
		return
	}
	fps := workQueries(rep)
	title := "Server work per call (pg_stat_statements): queries that write more, by the share of the run's work they add; intervals over the runs; floors " + workFloors(sw)
	if len(fps) == 0 {
		ew.printf("\nServer work per call (pg_stat_statements): no query writes more beyond noise and the floors (%s)\n", workFloors(sw))
	} else {
		writeList(ew, rep, title, fps, top,
			[]string{"WAL added", "WAL/call B -> C", "C/B (interval)", "share of run", "FPI/call C/B", "dirtied/call B -> C", "C/B (interval)", "status", "fingerprint", "query"},
			func(q *compare.QueryDiff) []string {
				w := q.Work
				return []string{fmtSignedBytes(w.AddedWALBytes), workFigure(w, compare.MetricWALBytes), fmtWorkEffect(&w.WALBytes),
					WorkShareText(w.More, w.Of(w.More)),
					fmtWorkEffect(&w.WALFPI), workFigure(w, compare.MetricDirtied), fmtWorkEffect(&w.Dirtied), WorkStatusText(w),
					q.Fingerprint, OneLine(DisplayQuery(q.Query), comparisonQueryWidth)}
			})
	}
	writeList(ew, rep, fmt.Sprintf("Server work changed beyond noise (by %s at least), but under a floor: not work regressions", fmtFactor(compare.MinListedWorkEffect)),
		sw.BelowFloors, top,
		[]string{"figure", "per call B -> C", "C/B (interval)", "share of run", "why not a work regression", "fingerprint", "query"},
		func(q *compare.QueryDiff) []string {
			w := q.Work
			return []string{WorkMetricName(w.Below), workFigure(w, w.Below), fmtWorkEffect(w.Of(w.Below)), WorkShareText(w.Below, w.Of(w.Below)),
				WorkBelowText(sw, w), q.Fingerprint, OneLine(DisplayQuery(q.Query), comparisonQueryWidth)}
		})
	writeHOT(ew, sw, top)
}

// writeHOT writes the tables whose share of HOT updates dropped (or
// rose), each side's median with its runs' range, and the index that
// ended them when one is known.
func writeHOT(ew *errWriter, sw *compare.ServerWork, top int) {
	if len(sw.HOT) == 0 {
		return
	}
	var moved []*compare.TableHOT
	for i := range sw.HOT {
		if h := &sw.HOT[i]; h.Dropped || h.Rose {
			moved = append(moved, h)
		}
	}
	if len(moved) == 0 {
		ew.printf("\nHOT updates (pg_stat_user_tables): no table's share of HOT updates moved beyond its runs' range and %s points (%d %s compared)\n",
			strconv.FormatFloat(100*compare.MinHOTDrop, 'f', 0, 64), len(sw.HOT), plural(len(sw.HOT), "table", "tables"))
		return
	}
	ew.printf("\nHOT updates (pg_stat_user_tables): tables whose share of HOT updates moved; median over the runs (lowest-highest run)\n")
	for _, h := range moved[:min(top, len(moved))] {
		ew.printf("  %s\n", HOTLine(h))
	}
}

// HOTLine words a table's HOT share on both sides: "pgbench_tellers:
// HOT updates 98.8% (97.4-98.9%) -> 0.5% (0.0-0.6%) of 1000 updates a
// run; an index on the updated column tbalance exists only on the
// candidate: pgbench_tellers_tbalance_idx".
func HOTLine(h *compare.TableHOT) string {
	name := h.Name
	if h.Schema != "" && h.Schema != "public" {
		name = h.Schema + "." + h.Name
	}
	side := func(s compare.HOTShare) string {
		return fmtShare(s.Median) + " (" + strings.TrimSuffix(fmtShare(s.Low), "%") + "-" + fmtShare(s.High) + ")"
	}
	s := fmt.Sprintf("%s: HOT updates %s -> %s of %d -> %d updates a run", name, side(h.Baseline), side(h.Candidate), h.BaselineUpdates, h.CandidateUpdates)
	switch {
	case h.Rose:
		return s + "; more HOT on the candidate"
	case h.Cause != nil:
		cols := "column " + h.Cause.Columns[0]
		if len(h.Cause.Columns) > 1 {
			cols = "columns " + strings.Join(h.Cause.Columns, ", ")
		}
		ixs := "an index"
		if len(h.Cause.Indexes) > 1 {
			ixs = "indexes"
		}
		verb := "exists"
		if len(h.Cause.Indexes) > 1 {
			verb = "exist"
		}
		return s + "; " + ixs + " on the updated " + cols + " " + verb + " only on the candidate: " + strings.Join(h.Cause.Indexes, ", ")
	case len(h.UpdatedColumns) > 0:
		return s + "; no index on a column its statements set (" + strings.Join(h.UpdatedColumns, ", ") + ") exists only on the candidate: the cause is elsewhere (fuller pages, longer transactions)"
	}
	return s + "; the statements that update it were not read (no pg_stat_statements text): no index is named"
}

func oneRunText(rep *compare.Report) string {
	n := rep.Noise
	return fmt.Sprintf("%d and %d runs (noise not measured)", n.BaselineRuns, n.CandidateRuns)
}

// workClause words the work regressions for the verdict line: "1 writes
// more per call, worst ... (WAL bytes 2.90x (2.70-3.10), +12.3 MB WAL per
// run)", or for blocks dirtied their share of the run's; "" without any.
func workClause(rep *compare.Report) string {
	v := rep.Verdict
	if v.MoreWork == 0 {
		return ""
	}
	s := fmt.Sprintf("%d %s more per call", v.MoreWork, plural(v.MoreWork, "query writes", "queries write"))
	if len(rep.MoreWork) > 0 {
		if q := rep.Query(rep.MoreWork[0]); q != nil && q.Work != nil {
			m := q.Work.More
			// What it adds per run, in the metric judged: a change of
			// blocks dirtied beside the WAL it added (a few bytes where
			// the WAL per call did not move) read as a trifle.
			added := fmtSignedBytes(q.Work.AddedWALBytes) + " WAL per run"
			if share := WorkShareText(m, q.Work.Of(m)); m == compare.MetricDirtied && share != "-" {
				added = share
			}
			s += fmt.Sprintf(", most %s (%s, %s)", queryName(rep, q.Fingerprint), workChangeText(m, q.Work.Of(m)), added)
		}
	}
	return s
}

// WorkMissingText says why a run has no pg_stat_statements figures, from
// the extension's state on its target (empty: no server-side evidence at
// all, reason says why).
func WorkMissingText(st observe.ExtensionStatus, reason string) string {
	switch st {
	case observe.ExtNotCreated:
		return "pg_stat_statements is preloaded, but no database the observer reached has CREATE EXTENSION pg_stat_statements"
	case observe.ExtNotPreloaded:
		return "pg_stat_statements is created, but not in shared_preload_libraries"
	case observe.ExtAvailable, observe.ExtUnavailable, observe.ExtMissing:
		return "pg_stat_statements is not available on the target"
	case observe.ExtUnreadable:
		return "pg_stat_statements cannot be read: " + reason
	case "":
		if reason == "" {
			return "no server-side evidence"
		}
		return reason
	}
	return "pg_stat_statements " + string(st)
}
