package report

import (
	"cmp"
	"fmt"
	"github.com/pgrehearse/pgrehearse/internal/event"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/numfmt"
	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// QueryWidth is how much of a query's text the analysis summary shows,
// on one line.
const QueryWidth = 80

// WriteAnalysis writes an analysis for a person to read: line accounting,
// statement counts, the time span, then the top queries by total time, by
// calls and by errors. It writes plain text, never terminal escapes, so
// that it can go to a file or a pipe as well.
func WriteAnalysis(w io.Writer, r *results.Result, top int) error {
	ew := &errWriter{w: w}
	if r.Partial {
		ew.printf("PARTIAL RESULT: the analysis stopped before the end of the input.\n\n")
	}
	if len(r.Files) > 0 {
		ew.printf("files       %s\n", strings.Join(r.Files, ", "))
	}
	if r.Lines != nil {
		writeLines(ew, *r.Lines)
	}
	if r.Messages != nil {
		writeMessages(ew, *r.Messages)
	}
	ew.printf("statements  %s executed, %s failed", thousands(r.Statements.Total), thousands(r.Statements.Failed))
	if r.Statements.Unparsed > 0 {
		ew.printf(", %s did not parse", thousands(r.Statements.Unparsed))
	}
	if r.Statements.Empty > 0 {
		ew.printf(", %s empty query strings", thousands(r.Statements.Empty))
	}
	ew.printf(" (%s distinct queries)\n", thousands(int64(len(r.Queries))))
	ew.printf("sessions    %s", thousands(r.Sessions.Total))
	if n := r.Events[event.Connect]; n > 0 {
		ew.printf(", %s connections", thousands(n))
	}
	if n := r.Events[event.Prepare]; n > 0 {
		ew.printf(", %s prepares", thousands(n))
	}
	ew.printf("\n")
	if f := r.Filtered; f.Events > 0 {
		ew.printf("filtered    %s events (%s statements) %s\n", thousands(f.Events), thousands(f.Statements), filteredWhy(f, "outside the time window"))
	}
	if r.FirstTime != 0 {
		span := time.Duration(r.LastTime-r.FirstTime) * time.Microsecond
		ew.printf("time span   %s .. %s (%s)\n", r.FirstTime, r.LastTime, span)
	}
	if len(r.ErrorsBySQLState) > 0 {
		codes := sortedKeys(r.ErrorsBySQLState)
		parts := make([]string, len(codes))
		var n int64
		for i, c := range codes {
			parts[i] = c + " " + thousands(r.ErrorsBySQLState[c])
			n += r.ErrorsBySQLState[c]
		}
		ew.printf("errors      %s by SQLSTATE: %s", thousands(n), strings.Join(parts, ", "))
		if m := r.ErrorsOutsideStatements; m > 0 {
			ew.printf(" (%s outside any statement: a Parse or Bind with no Execute, a FATAL)", thousands(m))
		}
		ew.printf("\n")
	}
	writeKept(ew, r)
	if top > 0 && len(r.Queries) > 0 {
		spanS := r.SpanSeconds()
		byTime := r.Queries // already by total time
		writeTop(ew, "by total time", byTime, top, spanS)
		byCalls := slices.Clone(r.Queries)
		slices.SortStableFunc(byCalls, func(a, b querystats.Row) int { return cmp.Compare(b.Calls, a.Calls) })
		writeTop(ew, "by calls", byCalls, top, spanS)
		var failing []querystats.Row
		for _, q := range r.Queries {
			if q.Errors > 0 {
				failing = append(failing, q)
			}
		}
		slices.SortStableFunc(failing, func(a, b querystats.Row) int { return cmp.Compare(b.Errors, a.Errors) })
		writeTop(ew, "by errors", failing, top, spanS)
	}
	return ew.err
}

func writeLines(ew *errWriter, l results.LineCounts) {
	skipped := l.SkippedTotal()
	ew.printf("lines       %s read, %s parsed, %s skipped\n", thousands(l.Total), thousands(l.Parsed), thousands(skipped))
	if d := l.Total - l.Parsed - skipped; d != 0 {
		// The reader promises every line is parsed or skipped; say so
		// loudly if that broke rather than print figures that lie.
		ew.printf("            WARNING: %s lines are not accounted for\n", thousands(d))
	}
	reasons := sortedKeys(l.Skipped)
	slices.SortStableFunc(reasons, func(a, b results.LineSkip) int { return cmp.Compare(l.Skipped[b], l.Skipped[a]) })
	if len(reasons) == 0 {
		return
	}
	table := make([][]string, len(reasons))
	for i, reason := range reasons {
		table[i] = []string{thousands(l.Skipped[reason]), string(reason)}
	}
	writeTable(ew, "            ", table, 1)
}

// writeMessages is writeLines for a capture: every client message
// recorded was used or skipped for a reason; what the recorder dropped
// and the sessions still open at the end are said apart.
func writeMessages(ew *errWriter, m results.MessageCounts) {
	skipped := m.SkippedTotal()
	ew.printf("messages    %s read, %s used, %s skipped", thousands(m.Total), thousands(m.Used), thousands(skipped))
	if m.Dropped > 0 {
		ew.printf("; %s dropped by the recorder (not in the capture)", thousands(m.Dropped))
	}
	if m.OpenSessions > 0 {
		ew.printf("; %s sessions still open when the capture ended", thousands(m.OpenSessions))
	}
	ew.printf("\n")
	if d := m.Total - m.Used - skipped; d != 0 {
		ew.printf("            WARNING: %s messages are not accounted for\n", thousands(d))
	}
	reasons := sortedKeys(m.Skipped)
	slices.SortStableFunc(reasons, func(a, b results.MessageSkip) int { return cmp.Compare(m.Skipped[b], m.Skipped[a]) })
	table := make([][]string, 0, len(reasons))
	for _, reason := range reasons {
		if m.Skipped[reason] > 0 {
			table = append(table, []string{thousands(m.Skipped[reason]), string(reason)})
		}
	}
	if len(table) > 0 {
		writeTable(ew, "            ", table, 1)
	}
	if m.ResumedSessions > 0 {
		ew.printf("            %s sessions recorded from the middle (open when the recording started), with %s preamble items of their state from before",
			thousands(m.ResumedSessions), thousands(m.Preamble))
		for _, k := range sortedKeys(m.BeforeRecording) {
			ew.printf("; %s messages skipped before their first idle point, %s", thousands(m.BeforeRecording[k]), k)
		}
		ew.printf("\n")
	}
}

func writeTop(ew *errWriter, title string, rows []querystats.Row, top int, spanS float64) {
	if len(rows) == 0 {
		return
	}
	n := min(top, len(rows))
	ew.printf("\nTop %d queries %s\n", n, title)
	// calls/s tells how close a query is to the rate where per-query
	// bookkeeping (pg_stat_statements' spinlock) starts to contend.
	rate := spanS >= 1
	head := []string{"total_ms", "calls"}
	if rate {
		head = append(head, "calls/s")
	}
	head = append(head, "errors", "mean_ms", "p95_ms", "fingerprint", "query")
	table := [][]string{head}
	for _, q := range rows[:n] {
		row := []string{ms3(q.TotalMS, q.TimedCalls), thousands(q.Calls)}
		if rate {
			row = append(row, strconv.FormatFloat(float64(q.Calls)/spanS, 'f', 1, 64))
		}
		row = append(row, thousands(q.Errors), ms3(q.MeanMS, q.TimedCalls), ms3(q.P95MS, q.TimedCalls),
			q.Fingerprint, OneLine(q.Query, QueryWidth))
		table = append(table, row)
	}
	// Figures right-aligned, the two text columns left-aligned.
	writeTable(ew, "  ", table, len(head)-2)
}

// ms3 formats a duration figure, or "-" for a query with no timed call,
// whose 0 would read as "instant".
func ms3(v float64, timed int64) string {
	if timed == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// thousands formats n with thousands separators, easier to read in big logs.
func thousands(n int64) string {
	return numfmt.Thousands(strconv.FormatInt(n, 10))
}

// filteredWhy says why f's events were left out: window names the run's
// filters, and pgrehearse's own statements are told apart.
func filteredWhy(f results.Filtered, window string) string {
	switch own := f.OwnStatements; {
	case own == 0:
		return window
	case own == f.Statements:
		return "from pgrehearse's own connections (application_name pgrehearse-*)"
	default:
		return fmt.Sprintf("%s, of which %s statements from pgrehearse's own connections (application_name pgrehearse-*)", window, thousands(own))
	}
}
