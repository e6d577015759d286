package report

import (
	"fmt"
	"strconv"

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
// fmtEffect: "2.90x (2.70-3.10)", "~ 1.02x (0.95-1.10)".
func fmtWorkEffect(e *compare.WorkEffect) string {
	if e == nil {
		return "-"
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

// workFigure is "B -> C" per call of m.
func workFigure(w *compare.QueryWork, m compare.Metric) string {
	e := w.Of(m)
	return fmtPerCall(m, e.Baseline) + " -> " + fmtPerCall(m, e.Candidate)
}

// workQueries are the queries the server-work section lists: the work
// regressions, then the latency regressions that also write more.
func workQueries(rep *compare.Report) []string {
	fps := append([]string{}, rep.MoreWork...)
	for _, fp := range rep.RegressionsByAddedTime {
		if q := rep.Query(fp); q != nil && q.Work != nil && q.Work.More != "" {
			fps = append(fps, fp)
		}
	}
	return fps
}

// writeServerWork writes the server-work section: whether it was
// compared, and the queries that write more per call with every figure's
// interval.
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
	title := fmt.Sprintf("Server work per call (pg_stat_statements): queries that write more, by WAL added per run; intervals over the runs; "+
		"floors %s and +%s WAL or +%g blocks dirtied a call", fmtFactor(1+sw.MinEffect), fmtBytes(sw.MinWALBytes), sw.MinDirtied)
	if len(fps) == 0 {
		ew.printf("\nServer work per call (pg_stat_statements): no query writes more beyond noise and the floors (%s and +%s WAL or +%g blocks dirtied a call)\n",
			fmtFactor(1+sw.MinEffect), fmtBytes(sw.MinWALBytes), sw.MinDirtied)
		return
	}
	writeList(ew, rep, title, fps, top,
		[]string{"WAL added", "WAL/call B -> C", "C/B (interval)", "FPI/call C/B", "dirtied/call B -> C", "C/B (interval)", "status", "fingerprint", "query"},
		func(q *compare.QueryDiff) []string {
			w := q.Work
			return []string{fmtSignedBytes(w.AddedWALBytes), workFigure(w, compare.MetricWALBytes), fmtWorkEffect(&w.WALBytes),
				fmtWorkEffect(&w.WALFPI), workFigure(w, compare.MetricDirtied), fmtWorkEffect(&w.Dirtied), StatusText(q.Status),
				q.Fingerprint, OneLine(DisplayQuery(q.Query), comparisonQueryWidth)}
		})
}

func oneRunText(rep *compare.Report) string {
	n := rep.Noise
	return fmt.Sprintf("%d and %d runs (noise not measured)", n.BaselineRuns, n.CandidateRuns)
}

// workClause words the work regressions for the verdict line: "1 writes
// more per call, worst ... (WAL bytes 2.90x (2.70-3.10), +12.3 MB per
// run)"; "" without any.
func workClause(rep *compare.Report) string {
	v := rep.Verdict
	if v.MoreWork == 0 {
		return ""
	}
	s := fmt.Sprintf("%d %s more per call", v.MoreWork, plural(v.MoreWork, "query writes", "queries write"))
	if len(rep.MoreWork) > 0 {
		if q := rep.Query(rep.MoreWork[0]); q != nil && q.Work != nil {
			m := q.Work.More
			s += fmt.Sprintf(", most %s (%s per call %s, %s WAL per run)", queryName(rep, q.Fingerprint), WorkMetricName(m),
				fmtWorkEffect(q.Work.Of(m)), fmtSignedBytes(q.Work.AddedWALBytes))
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
