package report

import (
	"fmt"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/compare"
)

// levelWords are a level's words: long in verdicts and tables
// (LevelName), short in a table's cell (levelShort).
var levelWords = map[compare.Level]struct{ long, short string }{
	compare.LevelServer:      {"server time (pg_stat_statements)", "server"},
	compare.LevelLog:         {"the server log's durations", "log"},
	compare.LevelApplication: {"the application's round trips", "application"},
}

// LevelName words a level of time per call (compare.Level): the one a
// query's mean is judged on, in verdicts and tables.
func LevelName(l compare.Level) string {
	if w, ok := levelWords[l]; ok {
		return w.long
	}
	return string(l)
}

// levelShort is a level in a table's cell.
func levelShort(l compare.Level) string {
	if w, ok := levelWords[l]; ok {
		return w.short
	}
	return string(l)
}

// figureName names figure m of q as judged: "mean on server time
// (pg_stat_statements)" for a mean judged on the server's time ("mean on
// the application's round trips" when asked); a percentile of a query
// whose mean is judged on another level names its own ("p95 of the
// application's round trips"): the inserts queued behind a dropped
// index's lookups are 1.1x at the server and 13x in the round trips'
// p95, and a bare "p95" beside "mean on server time" reads as the
// server's (found on a bench/forecast run without target logs); else m.
func figureName(q *compare.QueryDiff, m compare.Metric) string {
	switch {
	case m == compare.MetricMean && (q.JudgedOnServer() || q.JudgedApart()):
		return "mean on " + LevelName(q.Levels.Judged)
	case m != compare.MetricMean && m != compare.MetricTotal && q.JudgedApart():
		return string(m) + " of " + LevelName(q.Levels.Percentiles)
	}
	return string(m)
}

// levelsTitle heads the levels' table in the text and the page.
const levelsTitle = "Time per call at each level (server: pg_stat_statements' execution + planning per call; " +
	"log: the server's logged durations, the p95 also less the log's overhead per call measured on the control; " +
	"application: the replay's round trips, app overhead ms their time outside the server's work per call on the control, " +
	"which they carry on both sides; C/B with its interval over the runs)"

// LevelsQueries are the fingerprints of the queries, in the report's
// order (regressions first), measured at another level than their
// results' durations: those the levels' table shows.
func LevelsQueries(rep *compare.Report) []string {
	var out []string
	for i := range rep.Queries {
		q := &rep.Queries[i]
		lv := q.Levels
		if lv == nil {
			continue
		}
		if lv.Server != nil || lv.Application != nil && lv.Percentiles != compare.LevelApplication {
			out = append(out, q.Fingerprint)
		}
	}
	return out
}

// levelEffect is a level's mean change, "-" without it.
func levelEffect(t *compare.LevelTime) string {
	if t == nil {
		return "-"
	}
	return fmtEffect(&t.Mean)
}

// LevelsRow is a query's row of the levels' table: the level its mean
// is judged on, the server's means and change, the log's mean and p95
// changes, the p95's without the overhead and the overhead (the
// candidate's after it where that was the larger and came out of its
// runs), the
// application's change and its round trip's overhead on the control.
func LevelsRow(q *compare.QueryDiff) []string {
	lv := q.Levels
	server := "-"
	if lv.Server != nil {
		server = fmtMS(lv.Server.BaselineMS) + " -> " + fmtMS(lv.Server.CandidateMS)
	}
	p95, less, over := "-", "-", "-"
	if lv.Log != nil && q.Effects != nil {
		p95 = fmtEffect(&q.Effects.P95)
	}
	if lv.LogP95 != nil {
		less, over = fmtEffect(lv.LogP95), fmtMS(lv.OverheadMS)
		if k := lv.CandidateOverheadMS; fmtMS(k) != over && k > lv.OverheadMS {
			// Taken out of the candidate's runs instead of the
			// control's (compare.QueryLevels.CandidateOverheadMS).
			over += " (C " + fmtMS(k) + ")"
		}
	}
	appOver := "-"
	if lv.AppOverheadMS > 0 {
		appOver = fmtMS(lv.AppOverheadMS)
	}
	return []string{levelShort(lv.Judged), server, levelEffect(lv.Server), levelEffect(lv.Log), p95, less, over, levelEffect(lv.Application), appOver}
}

// levelsHead are LevelsRow's columns.
var levelsHead = []string{"mean judged on", "server B -> C ms", "server C/B", "log C/B", "log p95 C/B", "p95 less overhead", "overhead ms", "application C/B", "app overhead ms"}

// writeLevels writes the levels' table for the top queries.
func writeLevels(ew *errWriter, rep *compare.Report, top int) {
	head := append(append([]string{}, levelsHead...), "fingerprint", "query")
	writeList(ew, rep, levelsTitle, LevelsQueries(rep), top, head, func(q *compare.QueryDiff) []string {
		return append(LevelsRow(q), q.Fingerprint, OneLine(DisplayQuery(q.Query), comparisonQueryWidth))
	})
}

// levelsClause says, for the verdict line, how many of the queries judged
// have their mean judged on another level than their percentiles: "; the
// mean judged on server time (pg_stat_statements) for 5 of 6 queries";
// with the application's round trips asked, "; the mean judged on the
// application's round trips for 4 of 6 queries, on server time
// (pg_stat_statements) for 1"; "" for none.
func levelsClause(rep *compare.Report) string {
	apart, judged := map[compare.Level]int{}, 0
	for i := range rep.Queries {
		q := &rep.Queries[i]
		if q.Levels == nil {
			continue
		}
		judged++
		if q.JudgedOnServer() || q.JudgedApart() {
			apart[q.Levels.Judged]++
		}
	}
	var parts []string
	for _, l := range []compare.Level{compare.LevelApplication, compare.LevelServer} {
		switch n := apart[l]; {
		case n == 0:
		case len(parts) == 0:
			parts = append(parts, fmt.Sprintf("; the mean judged on %s for %d of %d %s", LevelName(l), n, judged, plural(judged, "query", "queries")))
		default:
			parts = append(parts, fmt.Sprintf(", on %s for %d", LevelName(l), n))
		}
	}
	return strings.Join(parts, "") + txClause(rep)
}

// txClause says how transaction control was judged (compare.TxControl):
// "; BEGIN not judged by the latency rules (no work on the server);
// COMMIT judged on its round trips paced by BEGIN's (pg_stat_statements'
// time leaves out the commit's WAL flush)"; "" without either.
func txClause(rep *compare.Report) string {
	begin, paced, commit := false, false, false
	for i := range rep.Queries {
		q := &rep.Queries[i]
		switch q.TxControl {
		case compare.TxBegin:
			begin = true
		case compare.TxCommit:
			commit = true
			paced = paced || q.Levels != nil && q.Levels.Pace != nil
		}
	}
	out := ""
	if begin {
		out += "; BEGIN not judged by the latency rules (no work on the server)"
	}
	switch {
	case paced:
		out += "; COMMIT judged on its round trips paced by BEGIN's (pg_stat_statements' time leaves out the commit's WAL flush)"
	case commit:
		out += "; COMMIT never judged on server time (pg_stat_statements' time leaves out the commit's WAL flush)"
	}
	return out
}
