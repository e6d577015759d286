package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	capfile "github.com/pgrehearse/pgrehearse/internal/capture"
	"github.com/pgrehearse/pgrehearse/internal/catalog"
	"github.com/pgrehearse/pgrehearse/internal/numfmt"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
)

// WriteStartCheck says how the target compares with the starting point
// the capture recorded: a warning naming the tables that differ, or a
// line saying they match. Nothing for logs, nor for a capture that
// recorded no starting point.
func WriteStartCheck(w io.Writer, pf *replayrun.Preflight) {
	if pf.StartState == nil {
		return
	}
	if pf.StartErr != nil {
		fmt.Fprintf(w, "pre-flight: WARNING: the target could not be compared with the starting point %s: %v\n", startPoint(pf), pf.StartErr)
		return
	}
	c := pf.StartCheck
	if c == nil {
		return
	}
	if c.Differs() {
		fmt.Fprintf(w, "pre-flight: WARNING: the target is not the starting point %s; a replay onto it shows errors and divergences that are not the target's fault:\n%s",
			startPoint(pf), startDiffLines(c))
		fmt.Fprintf(w, "pre-flight: (%s; --require-start-state makes this an error; docs/start-state.md)\n", startTolerances(c))
	} else {
		n := 0
		for _, d := range c.Databases {
			n += d.Compared
		}
		fmt.Fprintf(w, "pre-flight: the target's tables match the starting point %s: %d tables (%s)\n",
			startPoint(pf), n, startTolerances(c))
	}
	if u := startUnchecked(c); u != "" {
		fmt.Fprintf(w, "pre-flight: %s\n", u)
	}
	if u := startUncounted(c); u != "" {
		fmt.Fprintf(w, "pre-flight: %s\n", u)
	}
	writeDigestCheck(w, pf)
}

// writeDigestCheck says how the target's table digests compare with the
// start's: how many tables were compared and matched, or why they could
// not be read (the answers are then judged by recurrence alone).
func writeDigestCheck(w io.Writer, pf *replayrun.Preflight) {
	rec := pf.StartState.Digests
	if rec == nil {
		return
	}
	if pf.DigestErr != nil {
		fmt.Fprintf(w, "pre-flight: WARNING: the table digests could not be read on the target: %v; differing answers are judged by recurrence alone\n", pf.DigestErr)
		return
	}
	n := 0
	for _, t := range rec.Tables {
		if t.NotDigested == "" {
			n++
		}
	}
	fmt.Fprintf(w, "pre-flight: table digests: %d of %d tables compared with the start's, %d match", n, len(rec.Tables), n-len(pf.DigestDiffs))
	if len(pf.DigestDiffs) > 0 && len(catalog.ProvenDiffs(pf.DigestDiffs)) == 0 {
		// Every difference is on a table written around the start's
		// digest: a copy at the start's position may differ so.
		var ds []string
		for _, d := range pf.DigestDiffs {
			ds = append(ds, d.String())
		}
		fmt.Fprintf(w, "; %d %s, not proven: %s", len(ds), plural(len(ds), "differs", "differ"), strings.Join(ds, "; "))
	}
	fmt.Fprintln(w)
}

// StartStateFailed is the error of a pre-flight that --require-start-state
// failed: what differs, and that nothing ran.
func StartStateFailed(w io.Writer, e *replayrun.StartStateError) error {
	pf := e.Preflight
	switch {
	case pf.StartState == nil:
		return fmt.Errorf("PRE-FLIGHT FAILED: --require-start-state: the input records no starting point (a capture taken with --monitor-dsn does; logs never do); nothing was replayed")
	case pf.StartErr != nil:
		return fmt.Errorf("PRE-FLIGHT FAILED: --require-start-state: the target could not be compared with the starting point %s: %v; nothing was replayed", startPoint(pf), pf.StartErr)
	}
	if u := startUnchecked(pf.StartCheck); u != "" {
		fmt.Fprintf(w, "pre-flight: %s\n", u)
	}
	if u := startUncounted(pf.StartCheck); u != "" {
		fmt.Fprintf(w, "pre-flight: %s\n", u)
	}
	return fmt.Errorf("PRE-FLIGHT FAILED: --require-start-state: the target is not the starting point %s (%s); nothing was replayed:\n%s",
		startPoint(pf), startTolerances(pf.StartCheck), strings.TrimSuffix(startDiffLines(pf.StartCheck), "\n"))
}

// startPoint names the starting point: the capture, its WAL position and
// time.
func startPoint(pf *replayrun.Preflight) string {
	st := pf.StartState
	return fmt.Sprintf("the capture %s recorded (WAL %s at %s)", pf.StartFrom, st.LSN, st.Time.UTC().Format(time.RFC3339))
}

// startDiffLines is one line per table that differs or is missing, and
// per database that could not be read, each indented.
func startDiffLines(c *catalog.StartCheck) string {
	var b strings.Builder
	many := len(c.Databases) > 1
	for _, d := range c.Databases {
		if d.Error != "" {
			fmt.Fprintf(&b, "  database %s: cannot be read on the target (as %s): %s\n", d.Name, d.Target, d.Error)
			continue
		}
		for _, t := range d.Differ {
			name := tableName(d, t, many)
			if t.Missing {
				fmt.Fprintf(&b, "  %s: missing on the target, %s rows at the start\n", name, rowCount(t.Start))
				continue
			}
			fmt.Fprintf(&b, "  %s: %s rows on the target, %s at the start (%s)\n", name, rowCount(t.Target), rowCount(t.Start), rowsHow(t))
		}
	}
	return b.String()
}

// startUnchecked says which tables were not compared, because their rows
// are unknown on one side; "" when every table was.
func startUnchecked(c *catalog.StartCheck) string {
	var names []string
	many := len(c.Databases) > 1
	for _, d := range c.Databases {
		for _, t := range d.Unchecked {
			names = append(names, tableName(d, t, many))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%d tables not compared with the starting point, their rows unknown (never analyzed on the target and larger than %s, or at the start): %s",
		len(names), numfmt.Bytes(catalog.CountBelow), someNames(names))
}

// someNames are the first five of names, then how many more there are.
func someNames(names []string) string {
	const show = 5
	list := strings.Join(names[:min(len(names), show)], ", ")
	if len(names) > show {
		list += fmt.Sprintf(" and %d more", len(names)-show)
	}
	return list
}

// tableName is the table as a reader knows it: without the public
// schema, with its database when several were compared.
func tableName(d catalog.StartDatabaseCheck, t catalog.TableDiff, withDB bool) string {
	name := t.Name
	if t.Schema != "public" {
		name = t.Schema + "." + t.Name
	}
	if withDB {
		name = d.Name + ": " + name
	}
	return name
}

// rowCount is a row count read at a glance: exact below 10,000, then in
// thousands (k), millions (M) or billions (B).
func rowCount(n int64) string {
	switch {
	case n < 0:
		return "unknown"
	case n < 10_000:
		return numfmt.Thousands(fmt.Sprint(n))
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	case n < 1_000_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2fB", float64(n)/1e9)
}

// rowsHow says how both sides' rows were read: counted, or estimated on
// one side or both.
func rowsHow(t catalog.TableDiff) string {
	switch c := capfile.RowsCounted; {
	case t.StartFrom == c && t.TargetFrom == c && t.Drift > 0:
		return fmt.Sprintf("both counted; %s rows written while the start counted", numfmt.Thousands(fmt.Sprint(t.Drift)))
	case t.StartFrom == c && t.TargetFrom == c:
		return "both counted"
	case t.StartFrom == c:
		return "counted at the start, estimated on the target"
	case t.TargetFrom == c:
		return "estimated at the start, counted on the target"
	}
	return "both estimated"
}

// startTolerances says how far apart a table's rows may be: counts, and
// estimates.
func startTolerances(c *catalog.StartCheck) string {
	est := fmt.Sprintf("estimated rows (pg_class.reltuples) within %s or %s rows", tolShare(c.Tolerance), numfmt.Thousands(fmt.Sprint(c.Tolerance.Rows)))
	if c.CountBelow <= 0 {
		return est
	}
	return fmt.Sprintf("rows counted on both sides for the tables up to %s, within %s or %s rows; elsewhere %s",
		numfmt.Bytes(c.CountBelow), tolShare(c.Counted), numfmt.Thousands(fmt.Sprint(c.Counted.Rows)), est)
}

// startUncounted names the tables the start counted but the target did
// not, and why: their estimates were compared instead.
func startUncounted(c *catalog.StartCheck) string {
	var names []string
	many := len(c.Databases) > 1
	for _, d := range c.Databases {
		for _, t := range d.Uncounted {
			names = append(names, tableName(d, t, many)+" ("+t.CountError+")")
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("%d tables counted at the start not counted on the target, their estimates compared: %s", len(names), someNames(names))
}

func tolShare(t catalog.StartTolerance) string {
	return numfmt.Figure(t.Share*100) + "%"
}
