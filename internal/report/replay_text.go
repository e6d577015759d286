package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/pgrehearse/pgrehearse/internal/querystats"
	"github.com/pgrehearse/pgrehearse/internal/replayrun"
	"github.com/pgrehearse/pgrehearse/internal/results"
)

// WriteReplay writes a replay's result for a person at a terminal: what was
// run, skipped and lost and why, sessions, schedule lag, errors against
// the original's, where latencies were measured, and what the replayer
// itself cost. A replay without the target's log is told, with the hint,
// how to get server-side durations.
func WriteReplay(w io.Writer, res *results.Result, h Hints) error {
	var b strings.Builder
	title := "Replay"
	if res.DryRun {
		title = "Replay (dry run: nothing was sent)"
	}
	if res.Partial {
		title += " (PARTIAL: interrupted)"
	} else if len(res.Incomplete) > 0 {
		title += " (INCOMPLETE)"
	} else if len(res.Degraded) > 0 {
		title += " (DEGRADED)"
	}
	fmt.Fprintf(&b, "%s at speed %g, %.1f s\n", title, res.Speed, res.WallSeconds)
	if res.FirstTime != 0 {
		fmt.Fprintf(&b, "  log time:   %s .. %s\n", res.FirstTime, res.LastTime)
	}
	if res.DryRun {
		// Only what a dry run measures: what would be sent, what would
		// be skipped, the sessions, the schedule's lag when paced, and
		// the replayer's own cost. Nothing ran: no errors, latencies or
		// waits to show.
		writeDryRun(&b, res)
		_, err := io.WriteString(w, b.String())
		return err
	}
	s := res.Statements
	fmt.Fprintf(&b, "  statements: %d total, %d executed, %d failed, %d skipped", s.Total, s.Executed, s.Failed, s.SkippedTotal())
	if s.Empty > 0 {
		fmt.Fprintf(&b, " (%d empty strings not sent)", s.Empty)
	}
	b.WriteString("\n")
	for _, k := range sortedKeys(s.Skipped) {
		fmt.Fprintf(&b, "    skipped, %s: %d\n", k, s.Skipped[k])
	}
	writeReplayMessages(&b, res.Messages)
	if p := res.Preamble; p != nil {
		fmt.Fprintf(&b, "  preamble:   %d statements run to recreate %d sessions recorded from the middle (settings, prepared statements), untimed, not compared", p.Statements, p.Sessions)
		if p.Failed > 0 {
			fmt.Fprintf(&b, "; %d refused by the target", p.Failed)
		}
		b.WriteString("\n")
	}
	writeBatchInserts(&b, res.BatchInserts)
	if res.Lost > 0 && s.Total > 0 {
		fmt.Fprintf(&b, "  lost:       %d statements (%.2f%%) not replayed because of faults\n", res.Lost, 100*float64(res.Lost)/float64(s.Total))
	}
	for _, why := range res.Incomplete {
		fmt.Fprintf(&b, "  INCOMPLETE: %s\n", why)
	}
	for _, why := range res.Degraded {
		fmt.Fprintf(&b, "  DEGRADED:   %s\n", why)
	}
	if res.ReplayerDelayed > 0 {
		fmt.Fprintf(&b, "  delayed:    %d statements waited on the target for a lock held by a session in a sync wait: "+
			"their time is the replayer's doing, so they count as calls without a latency\n", res.ReplayerDelayed)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "  WARNING: %s\n", w)
	}
	if len(res.Destructive) > 0 {
		fmt.Fprintf(&b, "  destructive statements read (DROP, TRUNCATE, DELETE or UPDATE without WHERE, ALTER): %s\n", CountList(res.Destructive))
	}
	if f := res.Filtered; f.Events > 0 {
		fmt.Fprintf(&b, "  filtered:   %d events (%d statements, %d sessions) %s\n", f.Events, f.Statements, f.Sessions, filteredWhy(f, "outside the filters"))
	}
	ss := res.Sessions
	fmt.Fprintf(&b, "  sessions:   %d, %d reconnects, %d could not connect", ss.Total, ss.Reconnects, ss.ConnectFailed)
	if ss.ConnectRetries > 0 {
		fmt.Fprintf(&b, " (%d connection attempts retried: listen queue full)", ss.ConnectRetries)
	}
	if ss.CreatedElsewhereRetries > 0 {
		fmt.Fprintf(&b, " (%d statements run again: a relation another shard creates did not exist yet)", ss.CreatedElsewhereRetries)
	}
	b.WriteString("\n")
	if c := res.Connections; c != nil && c.Count > 0 {
		fmt.Fprintf(&b, "  connecting: %d connections, setup mean %s ms, p95 %s ms (from the connect call to a session ready for its first statement)", c.Count, fmtMS(c.MeanMS), fmtMS(c.P95MS))
		if c.Failed > 0 {
			fmt.Fprintf(&b, "; %d attempts failed", c.Failed)
		}
		b.WriteString("\n")
	}
	if res.Lag != nil {
		fmt.Fprintf(&b, "  lag:        p50 %.2f ms, p99 %.2f ms, max %.2f ms", res.Lag.P50, res.Lag.P99, res.Lag.Max)
		if f := FinishText(res.Finish); f != "" {
			b.WriteString("; " + f)
		}
		b.WriteString("\n")
	}
	o := res.Outcomes
	writeReplayErrors(&b, res)
	if st := res.StartupSettings; st != nil && st.Suspect {
		fmt.Fprintf(&b, "  settings:   the sessions may have run with other connection settings than the original's, which change results silently: %s\n", st.Note)
	}
	if o.Answered > 0 {
		writeAnswers(&b, o, res.Queries)
	}
	writeReplayCost(&b, res, h)
	writeSyncSummary(&b, res.Sync, res.SyncWait)
	writeLeftovers(&b, res.Leftovers)
	if line := ReadAheadHeld(res.Reader); line != "" {
		fmt.Fprintf(&b, "  reader:     %s\n", line)
	}
	if rd := res.Reader; rd.OverBudget > 0 {
		fmt.Fprintf(&b, "  reader:     read %d events past the memory budget while no statement completed\n", rd.OverBudget)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ReadAheadHeld says that the reader stopped at its memory budget (the
// cap on the statements read ahead of their sessions) and how long it
// waited there for the target, or "" when it never reached it.
func ReadAheadHeld(rd results.ReaderCounts) string {
	if rd.BudgetWaits == 0 || rd.BudgetBytes <= 0 {
		return ""
	}
	return fmt.Sprintf("read-ahead held at %s: the dispatcher waited %.1f s for the target", mib(rd.BudgetBytes), rd.BudgetWaitMS/1000)
}

// mib writes n bytes in MiB, whole when it is (in KiB below one).
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// writeReplayErrors writes the replay's errors against the original's,
// by SQLSTATE, and those only on the target that are explained.
func writeReplayErrors(b *strings.Builder, res *results.Result) {
	o := res.Outcomes
	fmt.Fprintf(b, "  errors:     target %.2f%%, original %.2f%% (%d failed in both, %d only on the target, %d only in the original)\n",
		o.TargetErrorRate, o.OriginalErrorRate, o.BothFailed, o.FailedOnlyOnTarget, o.FailedOnlyInOriginal)
	for _, k := range sortedKeys(res.ErrorsBySQLState) {
		fmt.Fprintf(b, "    SQLSTATE %s: %d\n", k, res.ErrorsBySQLState[k])
	}
	if o.OnlyOnTargetBakedIDs > 0 {
		fmt.Fprintf(b, "    %d of those only on the target named an id the original's server assigned (a large object's, a transaction's), which the target assigned otherwise, or followed one in its transaction\n",
			o.OnlyOnTargetBakedIDs)
	}
	if o.OnlyOnTargetAfterFastPath > 0 {
		fmt.Fprintf(b, "    %d of those only on the target followed, in their session, a fast-path call the replay skipped (libpq's large-object functions: lo_unlink...), whose effect the target never saw\n",
			o.OnlyOnTargetAfterFastPath)
	}
	if o.OnlyOnTargetSessionState > 0 {
		fmt.Fprintf(b, "    %d of those only on the target were in sessions recorded from the middle, with an error that session state from before the recording explains (a temporary table, a cursor WITH HOLD, a prepared statement the capture does not hold)\n",
			o.OnlyOnTargetSessionState)
	}
	if n := o.ExplainedOnlyOnTarget(); n > 0 && res.Replay != nil {
		fmt.Fprintf(b, "    --max-error-rate discounts those %d explained failures: the target's error rate %.2f%% without them\n",
			n, o.GateErrorRate())
	}
}

// writeReplayCost writes where the latencies come from and what the
// replayer's own CPU cost.
func writeReplayCost(b *strings.Builder, res *results.Result, h Hints) {
	if tl := res.TargetLog; tl != nil {
		fmt.Fprintf(b, "  latency:    server-side, from the target's log: %d executions on %d of %d connections, %d matching what was sent in order",
			tl.Executions, tl.ConnectionsFound, tl.Connections, tl.ExecutionsMatched)
		if len(tl.Mismatched) > 0 {
			fmt.Fprintf(b, " (%d connections differ, e.g. pid %d: %d sent, %d logged)", len(tl.Mismatched), tl.Mismatched[0].PID, tl.Mismatched[0].Sent, tl.Mismatched[0].Logged)
		}
		b.WriteString("; client round trips are under client_queries\n")
	} else if !res.DryRun {
		b.WriteString("  latency:    client round trips (network and client time included)")
		if h.TargetLog != "" {
			b.WriteString("; " + h.TargetLog + " gives server-side durations")
		}
		b.WriteString("\n")
	}
	if res.ClientCPUSeconds > 0 && res.WallSeconds > 0 {
		prec := 1
		if res.ClientCPUSeconds < 1 {
			prec = 2 // "0.0" would read as none
		}
		fmt.Fprintf(b, "  client:     the replayer used %.*f CPU-seconds (%.2f cores on average)", prec, res.ClientCPUSeconds, res.ClientCPUSeconds/res.WallSeconds)
		if res.TargetLocal && res.Unpaced() {
			b.WriteString("; the target is on this machine, so that CPU was taken from the server and the rate is a lower bound of the target's own (replay from another machine to measure the target alone)")
		}
		b.WriteString("\n")
	}
}

// writeReplayMessages writes how a capture's records were read (nil: the
// input was a log): each used or skipped for a reason, as analyze says
// it, so that every message kind the replay did not send is counted
// with its reason.
func writeReplayMessages(b *strings.Builder, m *results.MessageCounts) {
	if m == nil {
		return
	}
	fmt.Fprintf(b, "  messages:   %d read, %d used, %d skipped", m.Total, m.Used, m.SkippedTotal())
	if m.Dropped > 0 {
		fmt.Fprintf(b, "; %d dropped by the recorder (not in the capture)", m.Dropped)
	}
	if m.OpenSessions > 0 {
		fmt.Fprintf(b, "; %d sessions still open when the capture ended", m.OpenSessions)
	}
	b.WriteString("\n")
	for _, k := range sortedKeys(m.Skipped) {
		if m.Skipped[k] > 0 {
			fmt.Fprintf(b, "    skipped, %s: %d\n", k, m.Skipped[k])
		}
	}
	writeResumed(b, m)
}

// writeDryRun writes what a dry run measured.
func writeDryRun(b *strings.Builder, res *results.Result) {
	s := res.Statements
	fmt.Fprintf(b, "  statements: %d read, %d would be sent, %d would be skipped", s.Total, s.Executed, s.SkippedTotal())
	if s.Empty > 0 {
		fmt.Fprintf(b, " (%d empty strings)", s.Empty)
	}
	b.WriteString("\n")
	for _, k := range sortedKeys(s.Skipped) {
		fmt.Fprintf(b, "    skipped, %s: %d\n", k, s.Skipped[k])
	}
	writeReplayMessages(b, res.Messages)
	for _, w := range res.Warnings {
		fmt.Fprintf(b, "  WARNING: %s\n", w)
	}
	if len(res.Destructive) > 0 {
		fmt.Fprintf(b, "  destructive statements read (DROP, TRUNCATE, DELETE or UPDATE without WHERE, ALTER): %s\n", CountList(res.Destructive))
	}
	if f := res.Filtered; f.Events > 0 {
		fmt.Fprintf(b, "  filtered:   %d events (%d statements, %d sessions) %s\n", f.Events, f.Statements, f.Sessions, filteredWhy(f, "outside the filters"))
	}
	fmt.Fprintf(b, "  sessions:   %d\n", res.Sessions.Total)
	if res.Lag != nil && !res.Unpaced() {
		fmt.Fprintf(b, "  lag:        p50 %.2f ms, p99 %.2f ms, max %.2f ms (the schedule alone, without a server)\n", res.Lag.P50, res.Lag.P99, res.Lag.Max)
	}
	if res.ClientCPUSeconds > 0 && res.WallSeconds > 0 {
		fmt.Fprintf(b, "  client:     the replayer used %.2f CPU-seconds to read and schedule\n", res.ClientCPUSeconds)
	}
	if res.Sync != nil && len(res.Sync.Notes) > 0 {
		fmt.Fprintf(b, "  sync:       not exercised: %s\n", strings.Join(res.Sync.Notes, "; "))
	}
}

// writeSyncSummary says what synchronizing the sessions cost: how many
// statements waited for other sessions' commits and how long, and the
// waits given up.
func writeSyncSummary(b *strings.Builder, st *results.Sync, wait *results.Distribution) {
	if st == nil {
		return
	}
	if wait == nil {
		wait = &results.Distribution{}
	}
	if st.Mode == results.SyncOff {
		fmt.Fprintf(b, "  sync:       off: sessions ran without waiting for each other's commits, so statements that depend on another session's writes may have run before them\n")
	} else {
		fmt.Fprintf(b, "  sync:       %s; %d statements waited for other sessions' commits, %.1f ms in all (p50 %.2f ms, p99 %.2f ms, max %.2f ms); %d gave up after %gs without progress, %d to end a deadlock with a row lock\n",
			st.Mode, st.Waited, wait.TotalMS, wait.P50, wait.P99, wait.Max, st.Timeouts, st.TimeoutSeconds, st.Deadlocks)
		if st.ByRow > 0 || st.KeyNotLogged > 0 {
			fmt.Fprintf(b, "    %d statements were ordered by the row their primary key names", st.ByRow)
			if st.KeyNotLogged > 0 {
				fmt.Fprintf(b, ", %d of the same forms by their whole table (the log did not give the key's value)", st.KeyNotLogged)
			}
			b.WriteString("\n")
		}
		if len(st.TimeoutsByCause) > 0 {
			fmt.Fprintf(b, "    timeouts by cause: %s\n", CountList(st.TimeoutsByCause))
		}
		if st.LostTransactions > 0 {
			fmt.Fprintf(b, "    %d logged transactions did not commit on the target because of a fault; statements that were waiting for one were skipped (%q)\n",
				st.LostTransactions, "dependency lost")
		}
	}
	for _, n := range st.Notes {
		fmt.Fprintf(b, "    %s\n", n)
	}
}

// CountList is "A 3, B 1": most first, then by name.
func CountList(counts map[string]int64) string {
	kinds := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(kinds, func(a, b string) int { return cmp.Compare(counts[b], counts[a]) })
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// answersShown is how many queries whose answers differ are listed.
const answersShown = 5

// writeAnswers writes how the replay's answers compare with those the
// capture recorded: the total, then the queries that differ most, each
// with how (rows, an error on one side only, another SQLSTATE). The
// total counts executions, as Outcomes does: a query string of several
// statements is one, failed or not.
func writeAnswers(b *strings.Builder, o results.Outcomes, queries []querystats.Row) {
	fmt.Fprintf(b, "  answers:    %d executions compared with the answers the capture recorded: %d differ", o.Answered, o.AnswerDiffers)
	if len(o.AnswerDiffersExplained) > 0 {
		// Those the statements' text explains stay apart from the
		// others, the ones to look at; a race is not the text's.
		by := "explained by the statement"
		if o.AnswerDiffersExplained[string(querystats.CauseRaced)] > 0 || o.AnswerDiffersExplained[string(querystats.CauseRacedRelation)] > 0 {
			by = "explained by the statement or a race in the original"
		}
		if o.AnswerDiffersExplained[string(querystats.CauseSessionState)] > 0 {
			by += ", or session state from before the recording"
		}
		if o.AnswerDiffersExplained[string(querystats.CauseAfterDivergence)] > 0 || o.AnswerDiffersExplained[string(querystats.CauseAfterDivergenceRelation)] > 0 {
			by += ", or an earlier divergence of the replay on what they read"
		}
		fmt.Fprintf(b, " (%d unexplained; %s: %s)", o.AnswerDiffersUnexplained, by, CountList(o.AnswerDiffersExplained))
	}
	b.WriteString("\n")
	if o.AnswerTaintByRelation {
		b.WriteString("    (the rows earlier divergences wrote outgrew what the replay follows by key: later ones counted by table)\n")
	}
	if o.AnswerDiffersTargetData > 0 {
		// Rows no concurrent transaction touched: the copy is not the
		// start. Not an explanation, a finding.
		fmt.Fprintf(b, "    THE TARGET'S DATA DIFFERS FROM THE START: %d of them read rows no concurrent transaction touched, read differently more than once; by table: %s\n",
			o.AnswerDiffersTargetData, CountList(o.AnswerDiffersTargetDataByTable))
	}
	if o.AnswerDiffersSuspect > 0 {
		// Read differently once: a race the capture could not see
		// explains it as well as the data. Counted, not a failure.
		fmt.Fprintf(b, "    suspect: %d %s on rows no concurrent transaction touched, each read differently once (by table %s)\n",
			o.AnswerDiffersSuspect, plural(int(o.AnswerDiffersSuspect), "answer", "answers"), CountList(o.AnswerDiffersSuspectByTable))
	}
	type differ struct {
		q querystats.Row
		n int64
	}
	var ds, explained []differ
	for _, q := range queries {
		var n int64
		for _, c := range q.AnswerDiffers {
			n += c
		}
		switch {
		case n == 0:
		case q.AnswerExplained >= n:
			explained = append(explained, differ{q, n})
		default:
			ds = append(ds, differ{q, n})
		}
	}
	list := func(ds []differ) {
		slices.SortStableFunc(ds, func(x, y differ) int { return cmp.Compare(y.n, x.n) })
		for i, d := range ds {
			if i == answersShown {
				fmt.Fprintf(b, "    ... and %d more queries\n", len(ds)-answersShown)
				break
			}
			kinds := sortedKeys(d.q.AnswerDiffers)
			parts := make([]string, len(kinds))
			for j, k := range kinds {
				parts[j] = fmt.Sprintf("%s %d", k, d.q.AnswerDiffers[k])
			}
			fmt.Fprintf(b, "    %d of %d calls differ (%s): %s\n", d.n, d.q.Answered, strings.Join(parts, ", "), OneLine(DisplayQuery(d.q.Query), QueryWidth))
			if d.q.AnswerExplained > 0 {
				fmt.Fprintf(b, "      explained: %s\n", d.q.AnswerCause)
			}
		}
	}
	list(ds)
	if len(explained) > 0 {
		// A sequence's value is named only where one explains a
		// query listed, so that the other replays' text stays as it was.
		what := "a volatile function, what a server assigns"
		if slices.ContainsFunc(explained, func(d differ) bool {
			return strings.HasPrefix(d.q.AnswerCause, string(querystats.CauseSequence)+":")
		}) {
			what += ", a sequence's value an INSERT returns"
		}
		fmt.Fprintf(b, "    explained by the statement's text (%s):\n", what)
		list(explained)
	}
}

// writeResumed says, for a capture that took sessions up from the
// middle, how many, their preambles, and what they did before their
// first idle point that is not in the capture; nothing otherwise.
func writeResumed(b *strings.Builder, m *results.MessageCounts) {
	if m.ResumedSessions == 0 {
		return
	}
	fmt.Fprintf(b, "    %d sessions recorded from the middle: %d preamble items (settings, prepared statements) recreated before their first statement, not counted as statements\n",
		m.ResumedSessions, m.Preamble)
	for _, k := range sortedKeys(m.BeforeRecording) {
		if m.BeforeRecording[k] > 0 {
			fmt.Fprintf(b, "    skipped before recording, %s: %d messages\n", k, m.BeforeRecording[k])
		}
	}
}

// writeBatchInserts says what --batch-inserts did: the single-row INSERTs
// merged, the INSERTs sent for them, and what they cost per row.
func writeBatchInserts(b *strings.Builder, c *results.BatchInserts) {
	if c == nil {
		return
	}
	if c.Max <= 1 {
		fmt.Fprintf(b, "  inserts:    %d single-row INSERTs that could be batched, sent one by one (--batch-inserts 1 measures, merges nothing)", c.Statements)
	} else {
		fmt.Fprintf(b, "  batched:    %d single-row INSERTs sent as %d INSERTs of up to %d rows (only a session's consecutive INSERTs into one table with the same columns, within one transaction or autocommit run)",
			c.Statements, c.Batches, c.Max)
	}
	b.WriteString("\n")
	if c.Rows > 0 {
		fmt.Fprintf(b, "    per row:  %.3f ms of the target's time for those INSERTs", c.InsertMS/float64(c.Rows))
		if c.WALBytes >= 0 {
			fmt.Fprintf(b, ", %.0f bytes of WAL (all the target wrote during the replay, over these rows)", float64(c.WALBytes)/float64(c.Rows))
		} else {
			b.WriteString(", WAL not measured")
		}
		b.WriteString("\n")
	}
	for _, k := range sortedKeys(c.NotBatched) {
		fmt.Fprintf(b, "    not batched, %s: %d\n", k, c.NotBatched[k])
	}
}

// FinishText says how far behind its schedule a paced replay finished
// (results.Finish), which its lag alone does not: "finished 26.6 s behind
// its 60.0 s schedule". "" when there is no schedule.
func FinishText(f *results.Finish) string {
	switch {
	case f == nil:
		return ""
	case f.BehindSeconds < 0.05:
		return fmt.Sprintf("finished on its %.1f s schedule", f.ScheduleSeconds)
	}
	return fmt.Sprintf("finished %.1f s behind its %.1f s schedule", f.BehindSeconds, f.ScheduleSeconds)
}

// OnlyOnTargetNote says how many of a round's failures succeeded in the
// original, by their cause's SQLSTATE, as its file counts them
// (failed_only_on_target, only_on_target_by_sqlstate): the rest of the
// round's failed column failed in the original too. Errors of ordering
// are said to be when they made the round diverge. Empty when none.
func OnlyOnTargetNote(o results.Outcomes, diverged bool) string {
	if o.FailedOnlyOnTarget == 0 {
		return ""
	}
	codes := slices.Sorted(maps.Keys(o.OnlyOnTargetBySQLState))
	by := make([]string, 0, len(codes))
	for _, c := range codes {
		by = append(by, fmt.Sprintf("%s %d", c, o.OnlyOnTargetBySQLState[c]))
	}
	s := fmt.Sprintf("%d statements that succeeded in the original failed only on the target", o.FailedOnlyOnTarget)
	if len(by) > 0 {
		s += " (SQLSTATE " + strings.Join(by, ", ") + ")"
	}
	if diverged {
		s += ", some with errors of ordering (see docs/sync.md)"
	}
	return s
}

// IncompleteText is the text of res's incomplete entry of reason.
func IncompleteText(res *results.Result, reason results.IncompleteReason) string {
	for i, r := range res.IncompleteReasons {
		if r == reason && i < len(res.Incomplete) {
			return res.Incomplete[i]
		}
	}
	return string(reason)
}

// ReplayIncompleteText is why a replay whose result is marked incomplete
// fails.
func ReplayIncompleteText(res *results.Result) string {
	why := strings.Join(res.Incomplete, "; ")
	if len(res.Degraded) > 0 {
		why += "; and degraded: " + strings.Join(res.Degraded, "; ")
	}
	return fmt.Sprintf("REPLAY INCOMPLETE: %s; the result is marked incomplete and report will not judge it", why)
}

// ConnectFailedText is why a replay fails whose sessions could not connect (the
// wrong target, a missing database or role).
func ConnectFailedText(res *results.Result, h LoginHints) string {
	var b strings.Builder
	fmt.Fprintf(&b, "REPLAY FAILED: %d of %d sessions could not connect to the target; their statements were skipped:",
		res.Sessions.ConnectFailed, res.Sessions.Total)
	for _, cf := range res.Sessions.ConnectFailures {
		fmt.Fprintf(&b, "\n  user %q, database %q (%d sessions): %s", cf.User, cf.Database, cf.Sessions, cf.Message)
		if cf.SQLState != "" {
			fmt.Fprintf(&b, " (SQLSTATE %s)", cf.SQLState)
		}
		p := replayrun.ProblemUnreachable // no SQLSTATE: the network's failure
		if cf.SQLState != "" {
			p = replayrun.ProblemOf(cf.SQLState, cf.Message)
		}
		fmt.Fprintf(&b, ";\n    %s", h.Advice(p, cf.User, cf.Database))
	}
	return b.String()
}

// ErrorRateText is why a replay fails whose error rate exceeds the
// original's by more than maxErrorRate percentage points.
func ErrorRateText(out results.Outcomes, maxErrorRate float64) string {
	discounted := ""
	if n := out.ExplainedOnlyOnTarget(); n > 0 {
		discounted = fmt.Sprintf(", %d of them explained and not counted: %.2f%% with them", n, out.TargetErrorRate)
	}
	return fmt.Sprintf(
		"REPLAY FAILED: the target's error rate %.2f%% exceeds the original's %.2f%% by more than %.2f percentage points (%d statements failed only on the target%s; see errors_by_sqlstate)",
		out.GateErrorRate(), out.OriginalErrorRate, maxErrorRate, out.FailedOnlyOnTarget, discounted)
}

// TargetDataText is why a replay fails whose answers show that the
// target's data differs from the start.
func TargetDataText(out results.Outcomes) string {
	return fmt.Sprintf(
		"REPLAY FAILED: the target's data differs from the start: %d differing answers of statements that read rows no concurrent transaction touched, the same rows read differently more than once (by table: %s; see answer_differs_target_data_by_table)",
		out.AnswerDiffersTargetData, CountList(out.AnswerDiffersTargetDataByTable))
}
