package source

import (
	"fmt"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/logread"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// Dropped counts the statements (execution events) each selection left
// out.
type Dropped struct {
	// Window: outside the time window; Timeless of those (and of the
	// others) had no time at all, their log's prefix having none.
	Window, Timeless int64
	// Own: of pgrehearse's own sessions.
	Own int64
	// Filters: of sessions the database, user or application filters
	// left out.
	Filters int64
}

func (d *Dropped) add(c *Counts) {
	d.Window += c.Dropped.Window
	d.Timeless += c.Dropped.Timeless
	d.Own += c.Dropped.Own
	d.Filters += c.Dropped.Filters
}

// Reason is why a run measured nothing: the cause that actually dropped
// the lines or statements, each with its own remedy.
type Reason int

// Reasons a run measured nothing.
const (
	// NothingEmpty: the log (Path) is empty.
	NothingEmpty Reason = iota + 1
	// NothingAllRepeated: every log given is empty or repeats another.
	NothingAllRepeated
	// NothingNoLines: the logs hold no line at all.
	NothingNoLines
	// NothingNoStatement: the logs were read but hold no statement:
	// the server did not log them.
	NothingNoStatement
	// NothingUnreadable: more lines than allowed could not be read (a
	// wrong prefix or format); Top says which reason most.
	NothingUnreadable
	// NothingOutsideWindow: every statement was outside the time window.
	NothingOutsideWindow
	// NothingTimeless: every statement was left out by the time window
	// because the log's lines have no time (a prefix without %m, %t or
	// %n).
	NothingTimeless
	// NothingFiltered: the database, user or application filters left
	// every statement out.
	NothingFiltered
	// NothingOwn: every statement was of pgrehearse's own sessions.
	NothingOwn
	// NothingOtherShards: every statement belongs to other shards.
	NothingOtherShards
	// NothingNoQuery: the input is captures of the proxy, and they
	// hold no statement: no application sent one through the proxy.
	NothingNoQuery
	// NothingOnlyErrors: every statement the log shows failed (Failed
	// of them): the server logs the statements that fail
	// (log_min_error_statement, on by default) and none that succeed.
	NothingOnlyErrors
)

// Nothing is the error of a run whose input yielded nothing to measure,
// with the facts that say why. Its message names no flag; a command
// renders Reason with its own words.
type Nothing struct {
	Reason Reason
	// Path is the empty log (NothingEmpty).
	Path string
	// Lines are the lines read; Messages the captures' messages read
	// (nil when no capture was); Statements the statements the run
	// measured.
	Lines      results.LineCounts
	Messages   *results.MessageCounts
	Statements int64
	// Failed are the statements that failed in the log
	// (NothingOnlyErrors: all of them).
	Failed int64
	// Unreadable counts the lines the reader failed to read, MaxSkipped
	// the share (0.1 is 10%) allowed.
	Unreadable int64
	MaxSkipped float64
	// Top is the reason most unreadable lines were skipped for, TopN
	// their count and Sample the first of them; empty when none was.
	Top    string
	TopN   int64
	Sample *logread.Sample
	// Aside is, when no line was unreadable and no statement was read,
	// what the log held instead of statements, of insteadOfStatements
	// (plans without their statement, durations alone, the server's
	// unprefixed output), and AsideN its lines.
	Aside  string
	AsideN int64
	// Dropped and Other are what the selection left out.
	Dropped Dropped
	Other   *results.OtherShards
}

// Error says why, and what to do in the server's terms: it names no
// flag (a command renders Reason with its own words).
func (n *Nothing) Error() string {
	return n.What() + n.Skipped() + n.Remedy()
}

// What is the first clause: what the input yielded.
func (n *Nothing) What() string {
	switch n.Reason {
	case NothingEmpty:
		return fmt.Sprintf("the logs are empty (%s)", n.Path)
	case NothingAllRepeated:
		return "every log given is empty or repeats another"
	case NothingNoLines:
		return "the logs are empty"
	case NothingUnreadable:
		return fmt.Sprintf("%d of %d lines (%.1f%%) could not be read, more than the %.1f%% allowed",
			n.Unreadable, n.Lines.Total, 100*float64(n.Unreadable)/float64(n.Lines.Total), 100*n.MaxSkipped)
	case NothingOutsideWindow:
		return fmt.Sprintf("all %d statements read were outside the time window", n.Dropped.Window)
	case NothingTimeless:
		return fmt.Sprintf("all %d statements read were left out by the time window: the log's lines have no time", n.Dropped.Window)
	case NothingFiltered:
		return fmt.Sprintf("the filters left out all %d statements read", n.Dropped.Filters)
	case NothingOwn:
		return fmt.Sprintf("all %d statements read were pgrehearse's own (application_name pgrehearse-...)", n.Dropped.Own)
	case NothingOtherShards:
		return fmt.Sprintf("all %d statements read belong to other shards' sessions", n.Other.Statements)
	case NothingNoQuery:
		return fmt.Sprintf("the capture holds no statement (%d messages read)", n.Messages.Total)
	case NothingOnlyErrors:
		if n.Failed == 1 {
			return "the one statement the log shows failed: the server logs no successful statement"
		}
		return fmt.Sprintf("all %d statements the log shows failed: the server logs no successful statement", n.Failed)
	default:
		return fmt.Sprintf("the logs yielded no statement (%d lines read, %d parsed)", n.Lines.Total, n.Lines.Parsed)
	}
}

// Skipped is the clause on the lines skipped most, with the first of
// them, or "".
func (n *Nothing) Skipped() string {
	if n.TopN == 0 {
		if n.AsideN > 0 {
			return fmt.Sprintf("; %d lines were set aside as %q", n.AsideN, n.Aside)
		}
		return ""
	}
	s := fmt.Sprintf("; most skipped lines: %q (%d)", n.Top, n.TopN)
	if n.Sample != nil {
		s += fmt.Sprintf(", the first at line %d:\n  %s\n", n.Sample.Line, strings.TrimRight(n.Sample.Text, "\n"))
	}
	return s
}

// Remedy is what to do, in the server's terms, as a clause after "; ".
func (n *Nothing) Remedy() string {
	switch n.Reason {
	case NothingEmpty, NothingAllRepeated:
		return ""
	case NothingOutsideWindow:
		return "; choose a time window within the logs' times"
	case NothingTimeless:
		return "; no time window can select lines without a time: capture the log with %m in log_line_prefix, or read it without a window"
	case NothingFiltered:
		return "; no session has the databases, users or applications listed"
	case NothingOwn:
		return "; the log holds only pgrehearse's own connections (pre-flight, observer, marker): give the workload's log"
	case NothingOtherShards:
		return "; this shard has no session of the log: split it into fewer shards"
	case NothingNoQuery:
		return "; no application sent a query through the proxy while it recorded: point the applications at the proxy's address, not the server's"
	case NothingOnlyErrors:
		return "; at its default settings a server logs only the statements that fail (log_min_error_statement), which have no duration to measure: log every statement, " + logStatements
	}
	switch {
	case n.TopIs(logread.SkipNoPrefix):
		return "; give the server's log_line_prefix (SHOW log_line_prefix), or check the log's format"
	case n.TopIs(logread.SkipMalformed):
		return "; check the log's format: the records do not parse as the format given or detected"
	case n.TopN == 0 && n.Statements == 0:
		return asideRemedy(n.Aside)
	case n.TopN > 0:
		return "; see docs/logs.md for the formats pgrehearse reads"
	}
	return ""
}

// insteadOfStatements are the skip reasons of lines a log holds in place
// of the statements it should have logged, each with its own remedy
// (asideRemedy).
var insteadOfStatements = []string{logread.SkipPlanAlone, logread.SkipDurationAlone, logread.SkipUnprefixed}

// logStatements is the setting that makes a server log its statements.
const logStatements = "log_min_duration_statement = 0 (or log_statement = 'all')"

// asideRemedy is the remedy for a log that held no statement, by what it
// held instead.
func asideRemedy(aside string) string {
	const logThem = logStatements
	switch aside {
	case logread.SkipPlanAlone:
		return "; auto_explain logged plans but the server did not log their statements: log them too, " + logThem + ", and each plan goes with its statement"
	case logread.SkipDurationAlone:
		return "; log_duration writes durations without their statements: log statements with their durations instead, log_min_duration_statement = 0"
	case logread.SkipUnprefixed:
		return "; those are the server's own output without its prefix (a memory-context dump, a backtrace), not statements: the server must log statements, " + logThem
	}
	return "; the server must log statements: " + logThem
}

// Measured returns a *Nothing when the run's input yielded nothing to
// measure: no statement measured (statements), or more than maxSkipped
// (a share) of its lines unreadable. The reason is the one that dropped
// the statements: the time window, the filters, pgrehearse's own sessions,
// other shards; or, when none did, the log or the capture itself.
func (s *Set) Measured(statements int64, maxSkipped float64) *Nothing {
	sc := s.Counts()
	return Check(s.Lines(), sc.Messages, statements, maxSkipped, s.Dropped(), sc.OtherShards)
}

// Check is Measured on counts already added up: the lines read (nil:
// none), the captures' messages read (nil: no capture), the statements
// measured, and what the selection dropped.
func Check(c *logread.Counters, m *results.MessageCounts, statements int64, maxSkipped float64, d Dropped, other *results.OtherShards) *Nothing {
	if c == nil {
		c = &logread.Counters{Skipped: map[string]int64{}}
	}
	n := &Nothing{Statements: statements, MaxSkipped: maxSkipped, Dropped: d, Other: other, Unreadable: c.Unparseable(),
		Lines: results.LineCounts{Total: c.Total, Parsed: c.Parsed}, Messages: m}
	switch {
	case statements == 0 && c.Total == 0 && m == nil:
		n.Reason = NothingNoLines
	case statements == 0 && d.Timeless > 0 && d.Timeless >= d.Window && d.Window > 0:
		n.Reason = NothingTimeless
	case statements == 0 && d.Window > 0 && d.Window >= d.Filters && d.Window >= d.Own:
		n.Reason = NothingOutsideWindow
	case statements == 0 && d.Filters > 0 && d.Filters >= d.Own:
		n.Reason = NothingFiltered
	case statements == 0 && d.Own > 0:
		n.Reason = NothingOwn
	case statements == 0 && other != nil && other.Statements > 0:
		n.Reason = NothingOtherShards
	case statements == 0 && c.Total == 0:
		// Captures alone were read (m != nil): a capture has no line
		// to blame, its proxy relayed no query.
		n.Reason = NothingNoQuery
	case statements == 0:
		n.Reason = NothingNoStatement
	case c.Total > 0 && float64(n.Unreadable) > maxSkipped*float64(c.Total):
		n.Reason = NothingUnreadable
	default:
		return nil
	}
	if n.Reason == NothingNoStatement || n.Reason == NothingUnreadable || n.Reason == NothingNoLines {
		for _, r := range c.Reasons() {
			if logread.Unparseable(r) && c.Skipped[r] > n.TopN {
				n.Top, n.TopN = r, c.Skipped[r]
			}
		}
		if smp, ok := c.Samples[n.Top]; ok && n.TopN > 0 {
			n.Sample = &smp
		}
		if n.TopN == 0 && n.Reason == NothingNoStatement {
			for _, r := range insteadOfStatements {
				if c.Skipped[r] > n.AsideN {
					n.Aside, n.AsideN = r, c.Skipped[r]
				}
			}
		}
	}
	return n
}

// OnlyErrors returns a *Nothing when the logs' statements ran (ran of
// them, not skipped) and every one failed in the log (failed): a server
// that logs only its errors, whose log has nothing to time. A capture of
// the proxy records every statement, failed or not: its input is never
// taken for such a log. Call it when Measured found something to measure.
func (s *Set) OnlyErrors(ran, failed int64) *Nothing {
	sc := s.Counts()
	if ran == 0 || failed < ran || sc.Messages != nil {
		return nil
	}
	c := s.Lines()
	return &Nothing{Reason: NothingOnlyErrors, Statements: ran, Failed: failed,
		Lines: results.LineCounts{Total: c.Total, Parsed: c.Parsed}, Dropped: s.Dropped(), Other: sc.OtherShards}
}

// TopIs reports whether the most skipped unreadable lines were skipped for
// reason (one of logread's Skip reasons).
func (n *Nothing) TopIs(reason string) bool { return n.TopN > 0 && n.Top == reason }
