// Package rehearsal renders what only a rehearsal has: its rounds, the
// load each side was given, and the pre-flight checklist of its two
// targets. It is report's, apart so that package rehearse's own tests
// may render with report.
package rehearsal

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pgrehearse/pgrehearse/internal/judge"
	"github.com/pgrehearse/pgrehearse/internal/rehearse"
	"github.com/pgrehearse/pgrehearse/internal/results"
	"github.com/pgrehearse/pgrehearse/internal/rounds"
)

// WriteRounds lists the rounds: how each ended, what its replay did, and
// what the rehearsal's resets took.
func WriteRounds(w io.Writer, out *rehearse.Outcome, notes map[int][]string) {
	fmt.Fprintf(w, "REHEARSAL: %d rounds per side%s, reset %s / %s%s\n", out.Rounds, addedText(out), out.ResetModes[rehearse.Control], out.ResetModes[rehearse.Candidate], syncModeText(out.Sync))
	fmt.Fprintf(w, "  %-5s %-14s %-11s %9s %9s %7s %11s %8s %10s %9s %s\n", "round", "target", "status", "replay s", "reset s", "stretch", "statements", "failed", "lag p99", "behind s", "sync waits/give-ups, waited")
	results := map[rehearse.Side][]*results.Result{rehearse.Control: out.Control, rehearse.Candidate: out.Candidate}
	done := map[rehearse.Side]int{}
	for _, rec := range out.Records {
		line := fmt.Sprintf("  %-5d %-14s %-11s %9.1f %9.1f", rec.Seq, fmt.Sprintf("%s %d", rec.Side, rec.N), rec.Status, rec.ReplaySeconds, rec.Reset.Seconds+rec.ReleaseSeconds)
		if rec.Status == rehearse.StatusDone && done[rec.Side] < len(results[rec.Side]) {
			res := results[rec.Side][done[rec.Side]]
			done[rec.Side]++
			line += fmt.Sprintf(" %7s %11d %8d %10s %9s %s", stretchText(rehearse.Stretch(res)), res.Statements.Executed+res.Statements.Failed, res.Statements.Failed, lagText(res), behindText(res), syncText(res))
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
		if rec.Error != "" {
			fmt.Fprintf(w, "        %s\n", firstLine(rec.Error))
		}
		for _, n := range notes[rec.Seq] {
			fmt.Fprintf(w, "        note: %s\n", n)
		}
	}
	// The parts, so that the total is checked against the column.
	sec := func(s float64) time.Duration {
		return time.Duration(s * float64(time.Second)).Round(100 * time.Millisecond)
	}
	fmt.Fprintf(w, "  the resets took %v of %v (%s): preparing %v, the resets column %v, releasing %v, closing %v\n", out.ResetOverhead().Round(100*time.Millisecond),
		out.EndedAt.Sub(out.StartedAt).Round(100*time.Millisecond), resetShare(out),
		sec(out.PrepareSeconds), sec(out.ResetSeconds), sec(out.ReleaseSeconds), sec(out.CloseSeconds))
	writeLoadGiven(w, out.Throttle)
	if out.Unmet == rehearse.NeedWidth {
		fmt.Fprintf(w, "  WIDE: %s with a regression's mean still wider than --max-width: its size is as wide as its interval says\n", BudgetText(out.BudgetEnded))
	}
	if out.Drifted {
		fmt.Fprintln(w, "  DRIFTED: rounds started from what earlier rounds left (no reset): their timings are of another starting state")
	}
	if out.Stopped != "" {
		fmt.Fprintf(w, "  STOPPED: %s\n", out.Stopped)
	}
	fmt.Fprintln(w)
}

func resetShare(out *rehearse.Outcome) string {
	total := out.EndedAt.Sub(out.StartedAt)
	if total <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*out.ResetOverhead().Seconds()/total.Seconds())
}

func lagText(res *results.Result) string {
	if res.Replay == nil || res.Replay.Lag == nil || res.Replay.Lag.Count == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", res.Replay.Lag.P99)
}

// behindText is how far behind its schedule a round finished (the lag
// leaves out what sync waits and late sessions add up to), "-" without a
// schedule.
func behindText(res *results.Result) string {
	if res.Replay == nil || res.Replay.Finish == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", res.Replay.Finish.BehindSeconds)
}

func syncText(res *results.Result) string {
	if res.Replay == nil || res.Replay.Sync == nil {
		return "-"
	}
	s := res.Replay.Sync
	if s.Mode == results.SyncOff {
		return "off"
	}
	var waited float64
	if res.SyncWait != nil {
		waited = res.SyncWait.TotalMS / 1000
	}
	return fmt.Sprintf("%d/%d, %.1f s", s.Waited, s.Timeouts, waited)
}

// syncModeText says how the rounds synchronized their sessions, for the
// rounds' heading; empty when no round said.
func syncModeText(m results.SyncMode) string {
	switch m {
	case "":
		return ""
	case results.SyncLoad:
		return ", sessions synchronized for load (--sync load: only writes and locks waited for the commits they depended on; reads, only for changes of the schema)"
	case results.SyncOff:
		return ", sessions not synchronized (--sync off)"
	}
	return fmt.Sprintf(", sessions synchronized by %s (--sync %s: statements waited for the commits they saw in the log, reads too; exact answers, not the application's load)", m, m)
}

// stretchText is a round's stretch (rehearse.Stretch): "-" when not
// known.
func stretchText(x float64) string {
	if x <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

// writeLoadGiven says, under the rounds, each side's median stretch and
// sync waits.
func writeLoadGiven(w io.Writer, t *rehearse.Throttle) {
	if t == nil {
		return
	}
	side := func(s rehearse.SideThrottle) string {
		return fmt.Sprintf("stretched %s, sync waits %.1f s a round", stretchText(s.StretchMedian), s.SyncWaitMedian)
	}
	fmt.Fprintf(w, "  load given (medians; stretch: replay wall time over the log's span at its speed): control %s; candidate %s\n", side(t.Control), side(t.Candidate))
}

// WriteThrottled says, with the verdict, that the candidate's rounds
// were throttled by the replay itself (rehearse.Throttle): it got less
// load than the application gave, and its regressions are under-stated.
func WriteThrottled(w io.Writer, out *rehearse.Outcome) {
	t := out.Throttle
	if t != nil && t.Stretched && t.Candidate.Pooled && !t.WaitsDominate {
		// Not throttled: a pool's transactions wait for a connection
		// as the application's would have (rehearse.Throttling).
		fmt.Fprintf(w, "BEHIND: the candidate could not keep up with the log's pace: its rounds stretched %s against the control's %s (medians), each transaction waiting for a free connection of its application's pool, as the application's would have\n\n",
			stretchText(t.Candidate.StretchMedian), stretchText(t.Control.StretchMedian))
		return
	}
	if t == nil || !t.Throttled {
		return
	}
	var what []string
	if t.Stretched {
		what = append(what, fmt.Sprintf("stretched %s against the control's %s", stretchText(t.Candidate.StretchMedian), stretchText(t.Control.StretchMedian)))
	}
	if t.WaitsDominate || t.Candidate.SyncWaitMedian > 0 {
		what = append(what, fmt.Sprintf("sync waits %.1f s a round against %.1f s", t.Candidate.SyncWaitMedian, t.Control.SyncWaitMedian))
	}
	fmt.Fprintf(w, "THROTTLED: the candidate's rounds were throttled by the replay itself: %s (medians); ", strings.Join(what, ", "))
	if t.WaitsDominate {
		fmt.Fprint(w, "its sessions waited for each other's commits where the application's did not, so it received less load than the application gave it, and the forecast under-states its slowdown")
	} else {
		// Stretched without waiting: each replayed session waits for
		// its own previous statement.
		fmt.Fprint(w, "its sessions fell behind the log's pace, each statement waiting for its session's previous one, so it received less load than an application whose requests kept arriving would have given it")
		if k := t.Candidate; k.WindowRounds > 0 {
			// The drain after the schedule is left out (results.Window).
			fmt.Fprintf(w, "; its times per call and its rate are measured within the schedule's %.1f s, while every session that fell behind still had statements to run, as an application's clients do until they are stopped, "+
				"leaving out the %.1f s after it in which its sessions finished one by one with fewer neighbours (medians, %d of %d rounds)", k.WindowMedian, k.AfterMedian, k.WindowRounds, len(k.SyncWaitSeconds))
		} else {
			fmt.Fprint(w, ", and the forecast may under-state its slowdown")
		}
	}
	if t.Candidate.SyncWaitMedian > 0 && (out.Sync == results.SyncObject || out.Sync == results.SyncCommit || out.Sync == results.SyncAnswers) {
		fmt.Fprintf(w, " (--sync %s ordered reads too; --sync load waits only where the order prevents an error)", out.Sync)
	}
	fmt.Fprint(w, "\n\n")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// WriteProgress writes a line on w when each round starts and ends,
// with the estimate of the time left.
func WriteProgress(w io.Writer, p rehearse.Progress) {
	rd := p.Round
	left := "time left unknown until a round has finished"
	if p.RemainingKnown {
		left = fmt.Sprintf("about %v left (ETA %s)", p.Remaining.Round(time.Second), time.Now().Add(p.Remaining).Format("15:04:05"))
	}
	switch p.Phase {
	case rounds.PhaseReset:
		fmt.Fprintf(w, "rehearse: round %d of %d: %s: resetting the target; %s\n", rd.Seq, rd.Of, rd.Name(), left)
	case rounds.PhaseReplay:
		fmt.Fprintf(w, "rehearse: round %d of %d: %s: replaying (reset took %v)\n", rd.Seq, rd.Of, rd.Name(),
			time.Duration(rd.Reset.Seconds*float64(time.Second)).Round(time.Millisecond))
	case rounds.PhaseDone:
		fmt.Fprintf(w, "rehearse: round %d of %d: %s: done, %v since the start; %s\n", rd.Seq, rd.Of, rd.Name(),
			p.Elapsed.Round(time.Second), left)
	}
}

// addedText says how many rounds were added to the rounds asked, and
// why: rounds until decided, or until a regression's mean was narrow
// enough (Outcome.Widened).
func addedText(out *rehearse.Outcome) string {
	const undecided, wide = "while a query was undecided on a --fail-on rule", "while a regression's mean was wider than --max-width"
	switch {
	case out.Added == 0:
		return ""
	case out.Widened == 0:
		return fmt.Sprintf(" and %d added %s", out.Added, undecided)
	case out.Widened == out.Added:
		return fmt.Sprintf(" and %d added %s", out.Added, wide)
	}
	return fmt.Sprintf(" and %d added, %d %s and %d %s", out.Added, out.Added-out.Widened, undecided, out.Widened, wide)
}

// WriteAdding says, as a rehearsal adds a pair of rounds after done
// rounds a side (up to max), what more rounds could tell: a query
// undecided on a rule, else the first regression whose mean is too
// wide.
func WriteAdding(w io.Writer, done, max int, more judge.More) {
	why := "a query may break a --fail-on rule and the rounds cannot tell yet"
	if !more.Undecided && len(more.Wide) > 0 {
		q := more.Wide[0]
		why = fmt.Sprintf("the mean of %s reads %.2fx (%.2f-%.2f), an interval wider than --max-width", q.Fingerprint, q.Ratio, q.Low, q.High)
		switch n := len(more.Wide) - 1; {
		case n == 1:
			why += ", and another regression's mean"
		case n > 1:
			why += fmt.Sprintf(", and %d more regressions' means", n)
		}
	}
	fmt.Fprintf(w, "rehearse: after %d rounds a side %s: rounds are added, one a side at a time, up to %d a side\n", done, why, max)
}

// DatabasesText lists the databases a rehearsal's sessions use, each
// quoted, the DSN's own database named as such.
func DatabasesText(dbs []string) string {
	out := make([]string, len(dbs))
	for i, s := range dbs {
		if s == "" {
			s = "(the DSN's own)"
		}
		out[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(out, ", ")
}

// BudgetText says what ended a rehearsal's added rounds.
func BudgetText(b rehearse.Budget) string {
	switch b {
	case rehearse.BudgetTime:
		return "the time limit, --max-time, ended the rounds"
	case rehearse.BudgetRounds:
		return "--max-rounds reached"
	}
	return "no round added"
}

// OrderText is the sides in the order their rounds run.
func OrderText(order []rehearse.Side) string {
	s := make([]string, len(order))
	for i, side := range order {
		s[i] = string(side)
	}
	return strings.Join(s, ", ")
}
